"""The curation view's category table and forced polarities: filling the table from a fit,
reading and selecting rows, what-if polarities (preview only) and forced polarities (recorded as
:class:`workbench.commands.SetCategoryPolarity` through the command stack). Split from
:mod:`ui.cockpit.curation_view` to keep that file to its layout, fits and runs.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QCheckBox, QHeaderView, QLabel, QTableWidget, QTableWidgetItem

from ui.cockpit.curation_plot import FitPlot

from workbench.commands import Command, CommandStack, SetCategoryPolarity
from workbench.curation import runs
from workbench.labels import LabelService

CATEGORY_COLUMNS = ["Category", "Name", "a", "ā", "Support", "Fitted", "Polarity", "Forced by expert"]


def fit_table_width(table: QTableWidget) -> None:
    """Keep ``table`` at least as wide as its columns (sized to their titles and cells): beside the
    fit's picture it is never squeezed into scrolling sideways."""
    header = table.horizontalHeader()
    header.resizeSections(QHeaderView.ResizeMode.ResizeToContents)
    scrollbar = table.verticalScrollBar().sizeHint().width()
    table.setMinimumWidth(header.length() + 2 * table.frameWidth() + scrollbar + 2)


class CategoryTableMixin:
    """The category methods of :class:`ui.cockpit.curation_view.CurationView` (which sets the attributes)."""

    table: QTableWidget
    summary: QLabel
    what_if_mode: QCheckBox
    what_if: dict[str, str]
    labels: LabelService
    annotator_id: int
    stack: CommandStack
    _execute: Callable[[Command], bool] | None
    fit_plot: FitPlot
    preview_now: Callable[[], object]  # the view's: recomputes the preview after a polarity changes

    def _fill_categories(self, result: runs.FitResult, what_if: dict[str, str]) -> None:
        current = self.selected_category()
        rows = sorted(result.categories, key=lambda c: (c.polarity not in ("P", "N"), -abs(c.a - c.a_bar), c.id))
        self.table.setRowCount(len(rows))
        for row, category in enumerate(rows):
            forced = "what-if" if category.id in what_if else ("yes" if category.overridden else "")
            values = [category.id, category.name or "", f"{category.a:.3f}", f"{category.a_bar:.3f}",
                      str(category.support), category.fitted_polarity, category.polarity, forced]
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(value))
        if current is not None:
            self.select_category(current)
        fit_table_width(self.table)
        # the picture beside the table, from the same fit: its α and n_min, its forced and what-if categories
        alpha = float(result.parameters.get("alpha", 0.05))
        n_min = result.parameters.get("n_min")
        self.fit_plot.set_fit(result.categories, alpha, what_if, int(n_min) if n_min is not None else None)

    def category_rows(self) -> dict[str, dict[str, str]]:
        """The table as category id → column → text (what the user sees)."""
        return {
            self.table.item(r, 0).text(): {CATEGORY_COLUMNS[c]: self.table.item(r, c).text() for c in range(len(CATEGORY_COLUMNS))}
            for r in range(self.table.rowCount())
        }

    # ------------------------------------------------------------------ forcing polarities

    def selected_category(self) -> str | None:
        row = self.table.currentRow()
        item = self.table.item(row, 0) if row >= 0 else None
        return item.text() if item is not None else None

    def select_category(self, category_id: str) -> bool:
        for row in range(self.table.rowCount()):
            if self.table.item(row, 0).text() == category_id:
                self.table.setCurrentCell(row, 0)
                return True
        return False

    def force_selected(self, polarity: str | None) -> None:
        category = self.selected_category()
        if category is None:
            self.summary.setText("select a category in the table first")
            return
        if self.what_if_mode.isChecked():
            self.set_what_if(category, polarity)
        else:
            self.force_polarity(category, polarity)

    def set_what_if(self, category_id: str, polarity: str | None) -> None:
        """Preview-only polarity (None drops it); nothing is recorded."""
        if polarity is None:
            self.what_if.pop(category_id, None)
        else:
            self.what_if[category_id] = polarity
        self.preview_now()

    def force_polarity(self, category_id: str, polarity: str | None) -> bool:
        """Record the annotator's forced polarity as an undoable command, then re-preview."""
        command = SetCategoryPolarity(self.labels, self.annotator_id, category_id, polarity)
        if self._execute is not None:
            ok = self._execute(command)
        else:
            self.stack.push(command)
            ok = True
        self.preview_now()
        return ok
