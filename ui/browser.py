"""Clip browser: a table model over the project's clips, filters, sort, and the review queue."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QLabel,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from workbench.review import ClipRow, review_queue

_Index = QModelIndex | QPersistentModelIndex
COLUMNS = ("key", "country", "continent", "speech", "status", "disagreement", "localizability", "|l−θ|", "flags")
QUEUE_ROLE = Qt.ItemDataRole.UserRole + 1
ROW_ROLE = Qt.ItemDataRole.UserRole + 2
ANY = "any"


class ClipTableModel(QAbstractTableModel):
    """Rows are :class:`workbench.review.ClipRow`; ``QUEUE_ROLE`` gives each row's queue position."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[ClipRow] = []
        self.queue_position: dict[int, int] = {}

    def set_rows(self, rows: Sequence[ClipRow]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.queue_position = {row.clip_id: i for i, row in enumerate(review_queue(self.rows))}
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == ROW_ROLE:
            return row
        if role == QUEUE_ROLE:
            return self.queue_position[row.clip_id]
        values = (
            row.key, row.country or "", row.continent or "",
            "" if row.speech is None else ("yes" if row.speech else "no"),
            row.review_status, row.judge_disagreement, row.localizability, row.distance_from_theta,
            ", ".join(row.quality_flags),
        )
        value = values[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            if isinstance(value, float):
                return f"{value:.3f}"
            return "" if value is None else value
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 0:
            return row.title
        if role == Qt.ItemDataRole.UserRole:
            # Sort value: numbers compare as numbers; missing values sort last.
            return float("inf") if value is None else value
        return None


@dataclass
class BrowserFilter:
    country: str = ANY
    continent: str = ANY
    speech: str = ANY  # any | yes | no
    status: str = ANY
    min_disagreement: float = 0.0
    max_distance_from_theta: float | None = None
    flagged: str = ANY  # any | flagged | clean


class ClipFilterProxy(QSortFilterProxyModel):
    """Filters of the browser; sorting by the model's UserRole values."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.criteria = BrowserFilter()
        self.setSortRole(Qt.ItemDataRole.UserRole)

    def set_criteria(self, criteria: BrowserFilter) -> None:
        # Qt 6.10 replaced invalidateFilter() by the begin/end pair (the old call warns).
        if hasattr(self, "beginFilterChange"):
            self.beginFilterChange()
            self.criteria = criteria
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self.criteria = criteria
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: _Index) -> bool:  # noqa: N802
        row: ClipRow = self.sourceModel().rows[source_row]  # type: ignore[attr-defined]
        c = self.criteria
        if c.country != ANY and row.country != c.country:
            return False
        if c.continent != ANY and row.continent != c.continent:
            return False
        if c.speech != ANY and row.speech != (c.speech == "yes"):
            return False
        if c.status != ANY and row.review_status != c.status:
            return False
        if c.min_disagreement > 0 and (row.judge_disagreement or 0.0) < c.min_disagreement:
            return False
        if c.max_distance_from_theta is not None:
            distance = row.distance_from_theta
            if distance is None or distance > c.max_distance_from_theta:
                return False
        if c.flagged == "flagged" and not row.quality_flags:
            return False
        if c.flagged == "clean" and row.quality_flags:
            return False
        return True

    def lessThan(self, left: _Index, right: _Index) -> bool:  # noqa: N802
        a, b = left.data(self.sortRole()), right.data(self.sortRole())
        try:
            return a < b
        except TypeError:
            return str(a) < str(b)


class ClipBrowser(QWidget):
    """Filter bar + table; ``queue order`` sorts by the review-queue rule."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = ClipTableModel(self)
        self.proxy = ClipFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        self.country = QComboBox()
        self.continent = QComboBox()
        self.speech = QComboBox()
        self.speech.addItems([ANY, "yes", "no"])
        self.status = QComboBox()
        self.status.addItems([ANY, "unreviewed", "in progress", "reviewed"])
        self.flagged = QComboBox()
        self.flagged.addItems([ANY, "flagged", "clean"])
        self.min_disagreement = QDoubleSpinBox()
        self.min_disagreement.setRange(0.0, 1.0)
        self.min_disagreement.setSingleStep(0.1)
        self.max_distance = QDoubleSpinBox()
        self.max_distance.setRange(0.0, 1000.0)
        self.max_distance.setSpecialValueText("any")
        self.max_distance.setSingleStep(0.05)
        self.queue_order = QCheckBox("review queue order")
        self.queue_order.setChecked(True)
        bar = QGridLayout()
        pairs = (("country", self.country), ("continent", self.continent), ("speech", self.speech),
                 ("status", self.status), ("flags", self.flagged), ("disagree ≥", self.min_disagreement),
                 ("|l−θ| ≤", self.max_distance))
        for position, (label, widget) in enumerate(pairs):
            row, column = divmod(position, 3)
            bar.addWidget(QLabel(label), row, 2 * column)
            bar.addWidget(widget, row, 2 * column + 1)
        bar.addWidget(self.queue_order, 2, 2, 1, 4)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.table, 1)
        for box in (self.country, self.continent, self.speech, self.status, self.flagged):
            box.currentTextChanged.connect(self._apply_filter)
        for spin in (self.min_disagreement, self.max_distance):
            spin.valueChanged.connect(self._apply_filter)
        self.queue_order.toggled.connect(self._apply_order)

    def set_rows(self, rows: Sequence[ClipRow]) -> None:
        current = self.current_clip_id()
        self.model.set_rows(rows)
        for box, values in ((self.country, {r.country for r in rows}), (self.continent, {r.continent for r in rows})):
            chosen = box.currentText()
            box.blockSignals(True)
            box.clear()
            box.addItems([ANY] + sorted(v for v in values if v))
            box.setCurrentText(chosen if chosen else ANY)
            box.blockSignals(False)
        self._apply_order()
        if current is not None:
            self.select_clip(current)

    def _apply_filter(self) -> None:
        self.proxy.set_criteria(
            BrowserFilter(
                country=self.country.currentText() or ANY,
                continent=self.continent.currentText() or ANY,
                speech=self.speech.currentText(),
                status=self.status.currentText(),
                min_disagreement=self.min_disagreement.value(),
                max_distance_from_theta=self.max_distance.value() or None,
                flagged=self.flagged.currentText(),
            )
        )

    def _apply_order(self) -> None:
        if self.queue_order.isChecked():
            self.proxy.setSortRole(QUEUE_ROLE)
            self.proxy.sort(0, Qt.SortOrder.AscendingOrder)
            self.proxy.setSortRole(QUEUE_ROLE)
        else:
            self.proxy.setSortRole(Qt.ItemDataRole.UserRole)

    def visible_clip_ids(self) -> list[int]:
        """Clip ids in the order the table shows them."""
        return [self.proxy.index(r, 0).data(ROW_ROLE).clip_id for r in range(self.proxy.rowCount())]

    def current_clip_id(self) -> int | None:
        index = self.table.currentIndex()
        return index.data(ROW_ROLE).clip_id if index.isValid() else None

    def select_clip(self, clip_id: int) -> bool:
        for r in range(self.proxy.rowCount()):
            if self.proxy.index(r, 0).data(ROW_ROLE).clip_id == clip_id:
                self.table.selectRow(r)
                self.table.setCurrentIndex(self.proxy.index(r, 0))
                return True
        return False

    def step(self, delta: int) -> int | None:
        """Select the next (+1) or previous (−1) visible clip; returns its id."""
        ids = self.visible_clip_ids()
        if not ids:
            return None
        current = self.current_clip_id()
        position = ids.index(current) + delta if current in ids else 0
        position = max(0, min(position, len(ids) - 1))
        self.select_clip(ids[position])
        return ids[position]
