"""Selection builder: the stored selections, target size, strata counts before (the eligible
pool) and after (the selection), expert accepts / rejects, and export to an AGL1K CSV plus manifest.

Every selection stored in the project is listed, whoever made it (``aglw select`` or this
view), newest first; the view opens on the latest.  Building calls
:func:`workbench.curation.selection.make_selection`, the function behind ``aglw select``, so
the counts shown are the command's counts for the same parameters.
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
from workbench.curation import runs
from workbench.curation.export import ExportResult, TargetExists, export_selection
from workbench.curation.selection import (
    UNKNOWN_CONTINENT,
    SelectionResult,
    list_selections,
    load_selection,
    make_selection,
    selection_pool,
)
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
        self.stored = QComboBox()
        self.stored.setToolTip("selections stored in the project (aglw select or Build selection), newest first")
        self.stored.setPlaceholderText("none stored yet")
        self.stored.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.stored.currentIndexChanged.connect(self._stored_chosen)
        self.size = QSpinBox()
        self.size.setRange(1, 100_000)
        self.size.setValue(100)
        self.build_button = QPushButton("Build selection")
        self.build_button.clicked.connect(self.build)
        self.export_button = QPushButton("Export AGL1K CSV + manifest…")
        self.export_button.setEnabled(False)
        self.export_button.clicked.connect(self._export_clicked)
        row = QHBoxLayout()
        for widget in (QLabel("Stored selection"), self.stored, QLabel("Run"), self.run, QLabel("Target size"), self.size,
                       self.build_button, self.export_button):
            row.addWidget(widget)
        row.addStretch(1)
        self.counts = QTableWidget(0, 3)
        self.counts.setHorizontalHeaderLabels(["Stratum", "Pool (before)", "Selection (after)"])
        self.counts.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.counts.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.decisions = QListWidget()
        # Set by the review window's visibility policy: blind mode hides the experts' votes.
        self.decisions_hidden: str | None = None
        self.decisions.itemActivated.connect(lambda item: self.clipActivated.emit(item.data(KEY_ROLE)))
        self.chosen = QListWidget()
        self.chosen.itemActivated.connect(lambda item: self.clipActivated.emit(item.data(KEY_ROLE)))
        # every clip with an expert accept that the selection left out, with why (select's JSON says the same)
        self.left_out = QListWidget()
        self.left_out.setWordWrap(True)
        self.left_out.itemActivated.connect(lambda item: self.clipActivated.emit(item.data(KEY_ROLE)))
        self.message = QLabel("")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        lists = QHBoxLayout()
        for title, widget in (("Expert accepts / rejects", self.decisions), ("Selected clips", self.chosen),
                              ("Accepted but left out: why", self.left_out)):
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
        """Re-read the stored runs, the stored selections and the current decisions."""
        chosen = self.run.currentData()
        self.run.clear()
        for info in reversed(runs.list_runs(self.store)):
            self.run.addItem(f"run {info.id}", info.id)
        self.run.setCurrentIndex(max(self.run.findData(chosen), 0))
        self.build_button.setEnabled(self.run.count() > 0)
        self._refresh_pool()
        self._refresh_stored()

    def _refresh_pool(self) -> None:
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
        if self.decisions_hidden is not None:
            self.decisions.addItem(self.decisions_hidden)
        for clip, decision in ([] if self.decisions_hidden is not None
                               else pool["decision"].dropna().sort_index().items()):
            if decision in ("accept", "reject"):
                item = QListWidgetItem(f"{decision}: {keys.at[clip]}")
                item.setData(KEY_ROLE, str(keys.at[clip]))
                self.decisions.addItem(item)
        self._fill_counts()

    def _refresh_stored(self) -> None:
        """List the stored selections; keep the one shown, else show the latest."""
        shown = self.result.selection_id if self.result is not None else None
        selections = list_selections(self.store)
        self.stored.blockSignals(True)
        try:
            self.stored.clear()
            for info in selections:
                created = info.created_at.strftime("%Y-%m-%d %H:%M")
                run = f"run {info.run_id}" if info.run_id is not None else "run removed"
                self.stored.addItem(f"selection {info.id} ({run}, {info.n_selected} of {info.size} clips, {created})", info.id)
        finally:
            self.stored.blockSignals(False)
        ids = [info.id for info in selections]
        if shown in ids:
            self._mark_stored(shown)
        elif ids:
            self.show_selection(ids[0])

    def stored_selection_ids(self) -> list[int]:
        """The stored selections listed, newest first."""
        return [int(self.stored.itemData(i)) for i in range(self.stored.count())]

    def _mark_stored(self, selection_id: int) -> None:
        self.stored.blockSignals(True)
        self.stored.setCurrentIndex(self.stored.findData(selection_id))
        self.stored.blockSignals(False)

    def _stored_chosen(self, index: int) -> None:
        if index >= 0:
            self.show_selection(int(self.stored.itemData(index)))

    def show_selection(self, selection_id: int) -> SelectionResult | None:
        """Show a stored selection: its clips, its counts against its run's pool, ready to export."""
        try:
            result = load_selection(self.store, selection_id)
        except AglwError as exc:
            self.message.setText(str(exc))
            return None
        if result.run_id is not None and result.run_id != self.run.currentData():
            index = self.run.findData(result.run_id)
            if index >= 0:
                self.run.setCurrentIndex(index)
                self._refresh_pool()
        self._show_result(result)
        counts = result.counts
        self.message.setText(
            f"stored selection {result.selection_id} from run {result.run_id}: {counts.get('selected', len(result.keys))} "
            f"of {counts.get('size_requested', '?')} clips"
        )
        return result

    def _show_result(self, result: SelectionResult) -> None:
        self.result = result
        self.chosen.clear()
        for key in result.keys:
            item = QListWidgetItem(key)
            item.setData(KEY_ROLE, key)
            self.chosen.addItem(item)
        self.left_out.clear()
        hidden = getattr(self, "decisions_hidden", None)
        if hidden is not None:  # the reasons name expert accepts: hidden with them
            self.left_out.addItem(hidden)
        for entry in [] if hidden is not None else result.counts.get("accepted_left_out", []):
            item = QListWidgetItem(f"{entry['key']}: {entry['reason']}")
            item.setData(KEY_ROLE, str(entry["key"]))
            item.setToolTip(entry["reason"])
            self.left_out.addItem(item)
        self.export_button.setEnabled(True)
        self._mark_stored(result.selection_id)
        self._fill_counts()

    def build(self) -> SelectionResult | None:
        """Select (and store) ``size`` clips from the chosen run, as ``aglw select`` does."""
        run_id = self.run.currentData()
        try:
            self.refresh()
            if run_id is not None and self.run.findData(run_id) >= 0:
                self.run.setCurrentIndex(self.run.findData(run_id))
                self._refresh_pool()
            result = make_selection(self.store, self.size.value(), run_id=run_id)
        except AglwError as exc:
            self.message.setText(str(exc))
            return None
        self._refresh_stored()
        self._show_result(result)
        counts = result.counts
        missing = ", ".join(counts["continents_missing"])
        self.message.setText(
            f"selection {result.selection_id} from run {result.run_id}: {counts['selected']} of "
            f"{counts['size_requested']} clips" + (f"; continents without a clip: {missing}" if missing else "")
        )
        return result

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

    def export_to(self, path: str | Path, *, overwrite: bool = False) -> ExportResult | None:
        """Write the selection shown as AGL1K CSV + manifest; an existing file is replaced only with
        ``overwrite`` (the save dialog has asked the user)."""
        if self.result is None:
            self.message.setText("build a selection first")
            return None
        try:
            exported = export_selection(self.store, path, selection_id=self.result.selection_id, overwrite=overwrite)
        except TargetExists as exc:
            self.message.setText(f"{exc.path} exists; choose another file name (nothing was written)")
            return None
        except AglwError as exc:
            self.message.setText(str(exc))
            return None
        self.message.setText(f"wrote {exported.n_rows} clips to {exported.csv_path} and {exported.manifest_path}")
        return exported

    def _export_clicked(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export selection", "selection.csv", "CSV (*.csv)")
        if path:
            # the save dialog asked before replacing an existing CSV (its manifest goes with it);
            # a manifest left without its CSV was not asked about and is not replaced
            self.export_to(path, overwrite=Path(path).exists())
