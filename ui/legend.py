"""A legend that shows each colour itself: a filled swatch beside its meaning.

Views that code data by colour (the Tags tab's bars, the map's answers) put one of these beside
it, so the reader matches colours by eye instead of reading colour codes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QPainter, QPixmap, QPolygonF
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QWidget

_SWATCH_PX = 12


def swatch(colour: str, symbol: str = "square", size: int = _SWATCH_PX) -> QLabel:
    """A small filled square (or circle, or five-pointed star) in ``colour`` with a dark outline:
    the same shape as the marker it explains."""
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(QColor("#333333"))
    painter.setBrush(QColor(colour))
    if symbol == "circle":
        painter.drawEllipse(1, 1, size - 2, size - 2)
    elif symbol == "star":  # five points, as pyqtgraph's "star" marker
        centre, outer, inner = (size - 1) / 2, (size - 1) / 2, (size - 1) / 2 * 0.45
        points = [QPointF(centre + (outer if k % 2 == 0 else inner) * math.sin(k * math.pi / 5),
                          centre - (outer if k % 2 == 0 else inner) * math.cos(k * math.pi / 5)) for k in range(10)]
        painter.drawPolygon(QPolygonF(points))
    else:
        painter.drawRect(1, 1, size - 3, size - 3)
    painter.end()
    label = QLabel()
    label.setPixmap(pixmap)
    label.setFixedSize(size + 2, size + 2)
    label.setToolTip(colour)
    return label


class ColourLegend(QWidget):
    """Rows (or a wrapped grid) of swatches with their meaning.

    ``entries`` are ``(colour, text)`` pairs, or ``(colour, text, symbol)`` with symbol
    ``square``, ``circle`` or ``star`` (the map's answers are circles, its true location a star).
    """

    def __init__(self, entries: Sequence[tuple[str, ...]] = (), columns: int = 1,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setHorizontalSpacing(10)
        self._grid.setVerticalSpacing(2)
        self._columns = max(1, columns)
        self._colours: list[str] = []
        self._symbols: list[str] = []
        self.set_entries(entries)

    def set_entries(self, entries: Sequence[tuple[str, ...]]) -> None:
        while self._grid.count():
            item = self._grid.takeAt(0)
            if item.widget() is not None:
                item.widget().hide()  # gone now, not when the event loop deletes it (a grab before that drew both)
                item.widget().deleteLater()
        self._colours = []
        self._symbols = []
        for index, entry in enumerate(entries):
            colour, text = entry[0], entry[1]
            symbol = entry[2] if len(entry) > 2 else "square"
            cell = QWidget()
            row = QHBoxLayout(cell)
            row.setContentsMargins(0, 0, 0, 0)
            row.setSpacing(4)
            row.addWidget(swatch(colour, symbol))
            text_label = QLabel()
            text_label.setTextFormat(Qt.TextFormat.PlainText)  # names come from data
            text_label.setText(text)
            text_label.setWordWrap(True)
            row.addWidget(text_label, 1)
            self._grid.addWidget(cell, index // self._columns, index % self._columns)
            self._colours.append(QColor(colour).name())
            self._symbols.append(symbol)
        self.setVisible(bool(entries))

    def colours(self) -> list[str]:
        """The colours shown (``#rrggbb``), for tests and callers."""
        return list(self._colours)

    def symbols(self) -> list[str]:
        """Each swatch's shape (``square``, ``circle`` or ``star``), in the order of :meth:`colours`."""
        return list(self._symbols)
