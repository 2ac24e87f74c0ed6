"""Selection builder: target size, strata counts before (the eligible pool) and after (the
selection), expert accepts / rejects, and export to an AGL1K CSV plus manifest.

Building calls :func:`workbench.curation.selection.make_selection`, the function behind
``aglw select``, so the counts shown are the command's counts for the same parameters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from storage import Store
from workbench.curation import service
from workbench.curation.export import ExportResult, export_selection
from workbench.curation.selection import UNKNOWN_CONTINENT, SelectionResult, make_selection, selection_pool
from workbench.errors import AglwError

KEY_ROLE = Qt.ItemDataRole.UserRole + 1


def pool_counts(pool: Any) -> dict[str, Any]:
    """Strata of the clips a selection may draw from (candidates and accepts, minus rejects and flags)."""
    decision = pool["decision"].fillna("")
    eligible = (pool["candidate"].astype(bool) | (decision == "accept")) & (decision != "reject") & ~pool["quality_blocked"].astype(bool)
    chosen = pool[eligible]
    speech = chosen["speech"].astype(bool)
    continents = chosen["continent"].fillna("").replace("", UNKNOWN_CONTINENT)
    return {
        "eligible": int(eligible.sum()),
        "speech": int(speech.sum()),
        "no_speech": int((~speech).sum()),
        "by_continent": {str(k): int(v) for k, v in continents.value_counts().sort_index().items()},
        "accepts": int((decision == "accept").sum()),
        "rejects": int((decision == "reject").sum()),
    }


class SelectionView(QWidget):
    """Build, inspect and export a stratified selection.

    Signals
    -------
    clipActivated(str)
        A clip key to open in the review workbench.
    """

    clipActivated = Signal(str)

    def __init__(self, store: Store, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.result: SelectionResult | None = None
        self.before: dict[str, Any] | None = None
        self.run = QComboBox()
        self.size = QSpinBox()
        self.size.setRange(1, 100_000)
        self.size.setValue(100)
        self.build_button = QPushButton("Build selection")
        self.build_button.clicked.connect(self.build)
        self.export_button = QPushButton("Export AGL1K CSV + manifest…")
        self.export_button.setEnabled(False)
        self.export_button.clicked.connect(self._export_clicked)
        row = QHBoxLayout()
        for widget in (QLabel("Run"), self.run, QLabel("Target size"), self.size, self.build_button, self.export_button):
            row.addWidget(widget)
        row.addStretch(1)
        self.counts = QTableWidget(0, 3)
        self.counts.setHorizontalHeaderLabels(["Stratum", "Pool (before)", "Selection (after)"])
        self.counts.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.counts.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.decisions = QListWidget()
        self.decisions.itemActivated.connect(lambda item: self.clipActivated.emit(item.data(KEY_ROLE)))
        self.chosen = QListWidget()
        self.chosen.itemActivated.connect(lambda item: self.clipActivated.emit(item.data(KEY_ROLE)))
        self.message = QLabel("")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        lists = QHBoxLayout()
        for title, widget in (("Expert accepts / rejects", self.decisions), ("Selected clips", self.chosen)):
            column = QVBoxLayout()
            column.addWidget(QLabel(title))
            column.addWidget(widget)
            lists.addLayout(column)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.counts, 1)
        layout.addLayout(lists, 1)
        layout.addWidget(self.message)
        self.refresh()

    def refresh(self) -> None:
        """Re-read the stored runs and the current decisions."""
        chosen = self.run.currentData()
        self.run.clear()
        for info in reversed(service.list_runs(self.store)):
            self.run.addItem(f"run {info.id}", info.id)
        self.run.setCurrentIndex(max(self.run.findData(chosen), 0))
        self.build_button.setEnabled(self.run.count() > 0)
        run_id = self.run.currentData()
        if run_id is None:
            self.message.setText("no curation run stored yet: fit one in the Curation view")
            return
        try:
            pool, keys, _params = selection_pool(self.store, int(run_id))
        except AglwError as exc:
            # The view (and the window around it) must open whatever state the project is in.
            self.message.setText(f"run {run_id}: {exc}")
            self.before = {}
            self.decisions.clear()
            return
        self.before = pool_counts(pool)
        self.decisions.clear()
        for clip, decision in pool["decision"].dropna().sort_index().items():
            if decision in ("accept", "reject"):
                item = QListWidgetItem(f"{decision}: {keys.at[clip]}")
                item.setData(KEY_ROLE, str(keys.at[clip]))
                self.decisions.addItem(item)
        self._fill_counts()

    def build(self) -> SelectionResult | None:
        """Select (and store) ``size`` clips from the chosen run, as ``aglw select`` does."""
        run_id = self.run.currentData()
        try:
            self.refresh()
            self.result = make_selection(self.store, self.size.value(), run_id=run_id)
        except AglwError as exc:
            self.message.setText(str(exc))
            return None
        counts = self.result.counts
        self.chosen.clear()
        for key in self.result.keys:
            item = QListWidgetItem(key)
            item.setData(KEY_ROLE, key)
            self.chosen.addItem(item)
        missing = ", ".join(counts["continents_missing"])
        self.message.setText(
            f"selection {self.result.selection_id} from run {self.result.run_id}: {counts['selected']} of "
            f"{counts['size_requested']} clips" + (f"; continents without a clip: {missing}" if missing else "")
        )
        self.export_button.setEnabled(True)
        self._fill_counts()
        return self.result

    def count_rows(self) -> dict[str, tuple[str, str]]:
        """The counts table: stratum → (before, after) as shown."""
        return {
            self.counts.item(r, 0).text(): (self.counts.item(r, 1).text(), self.counts.item(r, 2).text())
            for r in range(self.counts.rowCount())
        }

    def _fill_counts(self) -> None:
        before = self.before or {}
        after = self.result.counts if self.result is not None else {}
        continents = sorted(set(before.get("by_continent", {})) | set(after.get("by_continent", {})))
        rows: list[tuple[str, Any, Any]] = [
            ("total", before.get("eligible"), after.get("selected")),
            ("speech", before.get("speech"), after.get("speech")),
            ("no speech", before.get("no_speech"), after.get("no_speech")),
            *[(f"continent: {c}", before.get("by_continent", {}).get(c, 0 if before else None),
               after.get("by_continent", {}).get(c, 0 if after else None)) for c in continents],
            ("expert accepts", before.get("accepts"), after.get("accepted_in")),
            ("expert rejects", before.get("rejects"), after.get("excluded", {}).get("rejected") if after else None),
        ]
        self.counts.setRowCount(len(rows))
        for r, (name, b, a) in enumerate(rows):
            for c, value in enumerate((name, b, a)):
                self.counts.setItem(r, c, QTableWidgetItem("" if value is None else str(value)))

    def export_to(self, path: str | Path) -> ExportResult | None:
        """Write the built selection as AGL1K CSV + manifest."""
        if self.result is None:
            self.message.setText("build a selection first")
            return None
        try:
            exported = export_selection(self.store, path, selection_id=self.result.selection_id)
        except AglwError as exc:
            self.message.setText(str(exc))
            return None
        self.message.setText(f"wrote {exported.n_rows} clips to {exported.csv_path} and {exported.manifest_path}")
        return exported

    def _export_clicked(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export selection", "selection.csv", "CSV (*.csv)")
        if path:
            self.export_to(path)
