"""Clip browser: a table model over the project's clips, filters, sort, and the review queue.

The order of the table is stable while the expert reviews: an edit refreshes the rows'
values in place (:meth:`ClipBrowser.refresh_rows`) without re-sorting or re-filtering, so
the clip being reviewed never jumps away and "next" goes to the clip that followed it.
The rows are re-sorted (and re-filtered) only when the expert asks for it: changing a
filter, clicking a column header, or (re-)ticking "review queue order".

What the table may show is the window's visibility policy's to say
(:class:`workbench.review.visibility.VisibilityPolicy`, handed over with
:meth:`ClipBrowser.set_visibility`): a hidden field's column, filter, sort and search are off —
blind mode hides the judge-derived disagreement, localizability and |l−θ|, guess mode every
clip's country, continent, city and title (the key's tooltip too). The review queue order still
ranks by the judges' values (the order names none of them).

The search field above the table keeps the clips whose key, city or title contains the typed
text (case-insensitive; the key alone while the place is hidden). The key column is as wide as
the longest key: a key is the clip's name and is never shown cut (the title is in the key's tooltip).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QLabel,
    QLineEdit,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ui.evidence import plain_tooltip
from workbench.review.rules import review_queue
from workbench.review.views import ClipRow
from workbench.review.visibility import VisibilityPolicy

_Index = QModelIndex | QPersistentModelIndex
COLUMNS = ("key", "country", "continent", "speech", "status", "disagreement", "localizability", "|l−θ|", "flags")
# The ClipRow field each column shows (what the visibility policy names).
COLUMN_FIELDS = ("key", "country", "continent", "speech", "review_status", "judge_disagreement",
                 "localizability", "distance_from_theta", "quality_flags")
DISAGREEMENT_COLUMN = COLUMNS.index("disagreement")
# Which columns a narrow list keeps, first to last (the rest are left out with a note, never cut).
WIDTH_PRIORITY = tuple(COLUMNS.index(name) for name in (
    "key", "status", "disagreement", "|l−θ|", "localizability", "country", "continent", "speech", "flags"))
# Before the window hands its policy over: the judges' values are hidden (the safe default).
SAFE_HIDDEN = frozenset({"judge_disagreement", "localizability", "distance_from_theta"})
QUEUE_ROLE = Qt.ItemDataRole.UserRole + 1
ROW_ROLE = Qt.ItemDataRole.UserRole + 2
ANY = "any"
FLAGGED = "flagged"
CLEAN = "clean"
SEARCH_DELAY_MS = 150


class ClipTableModel(QAbstractTableModel):
    """Rows are :class:`workbench.review.views.ClipRow`; ``QUEUE_ROLE`` gives each row's queue position.

    The queue positions are computed by :meth:`set_rows` and :meth:`requeue` only, so
    refreshing the rows' values (:meth:`refresh_rows`) does not move a row in the queue.
    """

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[ClipRow] = []
        self.queue_position: dict[int, int] = {}
        self.hidden_fields: frozenset[str] = SAFE_HIDDEN  # never shown, tooltips and sort values included

    def set_rows(self, rows: Sequence[ClipRow]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self._compute_queue()
        self.endResetModel()

    def refresh_rows(self, rows: Sequence[ClipRow]) -> bool:
        """New values for the same clips, in place (no reset, queue positions kept).

        Returns False (and changes nothing) when ``rows`` are not the same clips as now.
        """
        by_id = {row.clip_id: row for row in rows}
        if len(by_id) != len(rows) or set(by_id) != {row.clip_id for row in self.rows}:
            return False
        self.rows = [by_id[row.clip_id] for row in self.rows]
        if self.rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.rows) - 1, len(COLUMNS) - 1))
        return True

    def update_rows(self, rows: Sequence[ClipRow]) -> None:
        """New values for some clips (those an edit changed), in place; unknown clips are ignored."""
        changed = {row.clip_id: row for row in rows}
        for index, row in enumerate(self.rows):
            if row.clip_id in changed:
                self.rows[index] = changed[row.clip_id]
                self.dataChanged.emit(self.index(index, 0), self.index(index, len(COLUMNS) - 1))

    def requeue(self) -> None:
        """Recompute the queue positions from the rows' current values."""
        self._compute_queue()
        if self.rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.rows) - 1, len(COLUMNS) - 1), [QUEUE_ROLE])

    def _compute_queue(self) -> None:
        # Without what the policy hides: in blind mode the queue is not ordered by the judges.
        self.queue_position = {row.clip_id: i for i, row in enumerate(review_queue(self.rows, self.hidden_fields))}

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def column_texts(self, column: int) -> set[str]:
        """Every text ``column`` shows, over all rows (what sizes the column: no cell is elided)."""
        if COLUMN_FIELDS[column] in self.hidden_fields:
            return set()
        texts = set()
        for row in self.rows:
            value = getattr(row, COLUMN_FIELDS[column])
            if column == COLUMNS.index("speech"):
                value = "" if value is None else ("yes" if value else "no")
            elif column == COLUMNS.index("flags"):
                value = ", ".join(value)
            texts.add(f"{value:.3f}" if isinstance(value, float) else ("" if value is None else str(value)))
        return texts

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
        if COLUMN_FIELDS[index.column()] in self.hidden_fields:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            if isinstance(value, float):
                return f"{value:.3f}"
            return "" if value is None else value
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 0:
            return None if "title" in self.hidden_fields else plain_tooltip(row.title)
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
    flagged: str = ANY  # any | flagged | clean | a flag name (clips carrying that flag)
    search: str = ""  # case-insensitive part of the key, city or title
    key_search_only: bool = False  # the city and title are hidden: search the key alone


class ClipFilterProxy(QSortFilterProxyModel):
    """Filters of the browser; sorting by the model's UserRole values.

    Not dynamic: a change of the rows' values neither re-sorts nor re-filters (the row
    under review stays where it is); :class:`ClipBrowser` sorts and filters explicitly.
    """

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.criteria = BrowserFilter()
        self.setDynamicSortFilter(False)
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
        if c.flagged == FLAGGED and not row.quality_flags:
            return False
        if c.flagged == CLEAN and row.quality_flags:
            return False
        if c.flagged not in (ANY, FLAGGED, CLEAN) and c.flagged not in row.quality_flags:
            return False
        if c.search:
            needle = c.search.casefold()
            # A hidden city or title must not be found by typing it.
            searched = (row.key,) if c.key_search_only else (row.key, row.city, row.title)
            if not any(needle in (text or "").casefold() for text in searched):
                return False
        return True

    def lessThan(self, left: _Index, right: _Index) -> bool:  # noqa: N802
        a, b = left.data(self.sortRole()), right.data(self.sortRole())
        try:
            return a < b
        except TypeError:
            return str(a) < str(b)


class ClipBrowser(QWidget):
    """Filter bar + table; ``review queue order`` sorts by the review-queue rule.

    Clicking a column header sorts by that column (and unticks "review queue order");
    ticking it again returns to the queue order, recomputed from the current values.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hidden_fields: frozenset[str] = SAFE_HIDDEN  # the policy's, see set_visibility
        self.model = ClipTableModel(self)
        self.proxy = ClipFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        # Sorting is driven here, not by QTableView.setSortingEnabled (which would sort
        # by the header's column with whatever role is set, e.g. the queue position).
        header = self.table.horizontalHeader()
        header.setSectionsClickable(True)
        header.setSortIndicatorShown(True)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
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
        self.flagged.addItems([ANY, FLAGGED, CLEAN])
        self.flagged.setToolTip("any / flagged / clean, or the clips carrying one quality flag")
        self.min_disagreement = QDoubleSpinBox()
        self.min_disagreement.setRange(0.0, 1.0)
        self.min_disagreement.setSingleStep(0.1)
        self.max_distance = QDoubleSpinBox()
        self.max_distance.setRange(0.0, 1000.0)
        self.max_distance.setSpecialValueText("any")
        self.max_distance.setSingleStep(0.05)
        self.queue_order = QCheckBox("review queue order")
        self.queue_order.setChecked(True)
        self.search = QLineEdit()
        self.search.setPlaceholderText("search key, city or title")
        self.search.setClearButtonEnabled(True)
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
        layout.addWidget(self.search)
        layout.addWidget(self.table, 1)
        # The columns that do not fit the list's width are left out with a note naming them (a column
        # cut at the edge reads "unrevie"); widening the dock shows them again (issue 39).
        self._text_widths: dict[tuple[Any, ...], int] = {}
        self.width_note = QLabel()
        self.width_note.setWordWrap(True)
        self.width_note.setTextFormat(Qt.TextFormat.PlainText)
        self.width_note.hide()
        layout.addWidget(self.width_note)
        self.table.viewport().installEventFilter(self)
        # Filtering 100,000 rows takes a moment: once typing pauses, not on every key.
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self._apply_filter)
        self.search.textChanged.connect(self._search_timer.start)
        self.search.returnPressed.connect(self._apply_filter)
        for box in (self.country, self.continent, self.speech, self.status, self.flagged):
            box.currentTextChanged.connect(self._apply_filter)
        for spin in (self.min_disagreement, self.max_distance):
            spin.valueChanged.connect(self._apply_filter)
        self.queue_order.toggled.connect(self._apply_order)
        header.sortIndicatorChanged.connect(self._header_sorted)
        self._show_hidden_fields({})

    # ------------------------------------------------------------------ rows

    def set_rows(self, rows: Sequence[ClipRow]) -> None:
        """Load the rows afresh: filter and sort them; the current clip stays selected."""
        current = self.current_clip_id()
        self.model.set_rows(rows)
        self._fit_key_column()
        self.fit_columns_to_width()
        self._fill_choices(rows)
        self.proxy.set_criteria(self.criteria())
        self.resort()
        if current is not None:
            self.select_clip(current)

    def refresh_rows(self, rows: Sequence[ClipRow]) -> None:
        """New values for the rows, keeping the order, the filtered set and the selection.

        Falls back to :meth:`set_rows` when the clips themselves changed (added or removed).
        """
        if not self.model.rows or not self.model.refresh_rows(rows):
            self.set_rows(rows)
            return
        self._fit_key_column()  # a key may have been renamed
        if self._fill_choices(rows):
            self._apply_filter()  # a chosen country/continent/flag is gone

    def update_rows(self, rows: Sequence[ClipRow]) -> None:
        """New values for the rows of the clips an edit changed; order, filter and selection kept."""
        self.model.update_rows(rows)
        self._text_widths.clear()  # a status may have grown longer
        self.fit_columns_to_width()

    def _fit_key_column(self) -> None:
        """Widen the key column to the longest key (measured on the longest few, not every row:
        a project may hold 100,000 clips); the user can still resize it."""
        keys = sorted({row.key for row in self.model.rows}, key=len, reverse=True)[:50]
        if not keys:
            return
        metrics = self.table.fontMetrics()
        text = max(metrics.horizontalAdvance(key) for key in keys)
        # The item's text margins (the style's focus frame margin, each side) and a little air.
        margin = 2 * (self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self.table) + 1)
        header = self.table.horizontalHeader()
        title = header.fontMetrics().horizontalAdvance(COLUMNS[0]) + 24  # sort indicator
        self.table.setColumnWidth(0, max(text + margin + 8, title))

    def eventFilter(self, watched: Any, event: Any) -> bool:  # noqa: N802
        if watched is self.table.viewport() and event.type() == event.Type.Resize:
            self.fit_columns_to_width()
        return super().eventFilter(watched, event)

    def _column_width(self, column: int) -> int:
        """A column as wide as its title (with the sort indicator) and its longest cell among the first rows."""
        header = self.table.horizontalHeader()
        if column == 0:
            return header.sectionSize(0)
        margin = 2 * (self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self.table) + 1)
        metrics = self.table.fontMetrics()
        key = (column, id(self.model.rows), len(self.model.rows), self.hidden_fields)
        if key not in self._text_widths:  # measured once per set of rows, not on every resize
            texts = sorted(self.model.column_texts(column), key=len, reverse=True)[:50]
            self._text_widths = {k: v for k, v in self._text_widths.items() if k[1:] == key[1:]}
            self._text_widths[key] = max((metrics.horizontalAdvance(text) for text in texts), default=0)
        widest = self._text_widths[key] + margin + 8
        title = header.fontMetrics().horizontalAdvance(COLUMNS[column]) + 24  # sort indicator
        return max(widest, title)

    def fit_columns_to_width(self) -> None:
        """Show the columns, by :data:`WIDTH_PRIORITY`, that fit the list's width (each as wide as its title and
        cells); the rest are left out and named under the list. The visibility policy's hidden
        columns stay hidden. Nothing changes while the list is not shown (its width is not known)."""
        if not self.table.isVisible():
            return
        room = self.table.viewport().width()
        used, dropped = 0, set()
        header = self.table.horizontalHeader()
        for column in WIDTH_PRIORITY:  # the review queue's columns first, then the clip's, flags last
            if COLUMN_FIELDS[column] in self.hidden_fields:
                self.table.setColumnHidden(column, True)
                continue
            width = self._column_width(column)
            if column > 0 and (dropped or used + width > room):
                dropped.add(column)
                self.table.setColumnHidden(column, True)
                continue
            self.table.setColumnHidden(column, False)
            if column > 0:
                header.resizeSection(column, width)
            used += width
        names = ", ".join(COLUMNS[c] for c in sorted(dropped))
        self.width_note.setText(f"not shown at this width: {names} (widen the list to show them)" if dropped else "")
        self.width_note.setVisible(bool(dropped))

    def _fill_choices(self, rows: Sequence[ClipRow]) -> bool:
        """The combo boxes' values from the rows; True when a chosen value had to be dropped."""
        flags = {flag for row in rows for flag in row.quality_flags} - {ANY, FLAGGED, CLEAN}
        dropped = False
        hidden = self.hidden_fields
        for box, fixed, values in (
            (self.country, [ANY], set() if "country" in hidden else {r.country for r in rows}),
            (self.continent, [ANY], set() if "continent" in hidden else {r.continent for r in rows}),
            (self.flagged, [ANY, FLAGGED, CLEAN], flags),
        ):
            chosen = box.currentText() or ANY
            items = fixed + sorted(v for v in values if v)
            if [box.itemText(i) for i in range(box.count())] == items:
                continue
            box.blockSignals(True)
            box.clear()
            box.addItems(items)
            box.setCurrentText(chosen)
            box.blockSignals(False)
            dropped = dropped or box.currentText() != chosen
        return dropped

    # ------------------------------------------------------------------ filter and order

    def criteria(self) -> BrowserFilter:
        """The filter the widgets describe; a filter on a hidden field is off."""
        hidden = self.hidden_fields
        return BrowserFilter(
            country=ANY if "country" in hidden else self.country.currentText() or ANY,
            continent=ANY if "continent" in hidden else self.continent.currentText() or ANY,
            speech=self.speech.currentText(),
            status=self.status.currentText(),
            min_disagreement=0.0 if "judge_disagreement" in hidden else self.min_disagreement.value(),
            max_distance_from_theta=None if "distance_from_theta" in hidden else self.max_distance.value() or None,
            flagged=self.flagged.currentText() or ANY,
            search=self.search.text().strip(),
            key_search_only=bool({"city", "title"} & hidden),
        )

    def _apply_filter(self) -> None:
        self._search_timer.stop()
        self.proxy.set_criteria(self.criteria())
        self.resort()

    def resort(self) -> None:
        """Sort the rows by the chosen order, from their current values (the selection stays)."""
        self.model.requeue()
        if self.queue_order.isChecked():
            self.proxy.setSortRole(QUEUE_ROLE)
            self.proxy.sort(0, Qt.SortOrder.AscendingOrder)
        else:
            header = self.table.horizontalHeader()
            self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
            self.proxy.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
        current = self.table.currentIndex()
        if current.isValid():
            self.table.scrollTo(current)

    def _apply_order(self, queue: bool) -> None:
        if queue:
            header = self.table.horizontalHeader()
            header.blockSignals(True)
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
            header.blockSignals(False)
            header.viewport().update()
        self.resort()

    def _header_sorted(self, section: int, _order: Qt.SortOrder) -> None:
        """A click on a column header: sort by that column, out of the queue order."""
        if self.queue_order.isChecked():
            self.queue_order.blockSignals(True)
            self.queue_order.setChecked(False)
            self.queue_order.blockSignals(False)
        self.resort()

    # ------------------------------------------------------------------ what may be shown

    def set_visibility(self, policy: VisibilityPolicy) -> None:
        """Show what ``policy`` allows: a hidden field's column, filter, sort and search are off."""
        hidden = policy.hidden_row_fields()
        if hidden == self.hidden_fields:
            return
        self.hidden_fields = hidden
        self.model.hidden_fields = hidden
        self._show_hidden_fields({f: policy.row_hidden_reason(f) or "" for f in hidden})
        sorted_by = self.table.horizontalHeader().sortIndicatorSection()
        if not self.queue_order.isChecked() and 0 <= sorted_by < len(COLUMN_FIELDS) and COLUMN_FIELDS[sorted_by] in hidden:
            self.queue_order.setChecked(True)  # an order by a hidden column would show it
        else:
            self.resort()  # the queue order itself leaves the hidden values out now
        self._fill_choices(self.model.rows)
        if self.model.rows:
            self.model.dataChanged.emit(self.model.index(0, 0),
                                        self.model.index(len(self.model.rows) - 1, len(COLUMNS) - 1))
        if self.criteria() != self.proxy.criteria:
            self._apply_filter()

    def _show_hidden_fields(self, reasons: dict[str, str]) -> None:
        hidden = self.hidden_fields
        for column, field in enumerate(COLUMN_FIELDS):
            self.table.setColumnHidden(column, field in hidden)
        self.fit_columns_to_width()
        for widget, field, shown_tip in (
            (self.min_disagreement, "judge_disagreement", "judge disagreement at least"),
            (self.max_distance, "distance_from_theta", "|localizability − θ| at most"),
            (self.country, "country", ""),
            (self.continent, "continent", ""),
        ):
            widget.setEnabled(field not in hidden)
            widget.setToolTip(reasons.get(field, "hidden") if field in hidden else shown_tip)
        self.search.setPlaceholderText("search key" if {"city", "title"} & hidden else "search key, city or title")

    # ------------------------------------------------------------------ selection

    def visible_clip_ids(self) -> list[int]:
        """Clip ids in the order the table shows them."""
        return [self.proxy.index(r, 0).data(ROW_ROLE).clip_id for r in range(self.proxy.rowCount())]

    def current_clip_id(self) -> int | None:
        index = self.table.currentIndex()
        return index.data(ROW_ROLE).clip_id if index.isValid() else None

    def select_clip(self, clip_id: int) -> bool:
        for r in range(self.proxy.rowCount()):
            index = self.proxy.index(r, 0)
            if index.data(ROW_ROLE).clip_id == clip_id:
                self.table.selectRow(r)
                self.table.setCurrentIndex(index)
                self.table.scrollTo(index)
                return True
        return False

    def step(self, delta: int) -> int | None:
        """Select the next (+1) or previous (−1) visible clip; returns its id.

        The order is the one the table shows (stable across edits), so after a decision
        "next" goes to the clip that followed the current one; the ends clamp.
        """
        ids = self.visible_clip_ids()
        if not ids:
            return None
        current = self.current_clip_id()
        position = ids.index(current) + delta if current in ids else 0
        position = max(0, min(position, len(ids) - 1))
        self.select_clip(ids[position])
        return ids[position]
