"""A legend that shows each colour itself: a filled swatch beside its meaning.

Views that code data by colour (the Tags tab's bars, the map's answers) put one of these beside
it, so the reader matches colours by eye instead of reading colour codes.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter, QPixmap
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QWidget

_SWATCH_PX = 12


def swatch(colour: str, symbol: str = "square", size: int = _SWATCH_PX) -> QLabel:
    """A small filled square (or circle, or star-like diamond) in ``colour`` with a dark outline."""
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(QColor("#333333"))
    painter.setBrush(QColor(colour))
    if symbol == "circle":
        painter.drawEllipse(1, 1, size - 2, size - 2)
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
    ``square`` or ``circle`` (the map's answers are circles).
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
        self.set_entries(entries)

    def set_entries(self, entries: Sequence[tuple[str, ...]]) -> None:
        while self._grid.count():
            item = self._grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self._colours = []
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
        self.setVisible(bool(entries))

    def colours(self) -> list[str]:
        """The colours shown (``#rrggbb``), for tests and callers."""
        return list(self._colours)
