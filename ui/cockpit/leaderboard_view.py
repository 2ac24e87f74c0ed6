"""Leaderboard view: every imported ALM, the human localizers and the web studies' crowds under
both metric profiles, with breakdowns: the rows of `aglw leaderboard`
(:func:`workbench.studies.board.leaderboard_board`)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from storage import Store
from ui.workers import LatestResult
from workbench.formatting import metric_cell, metric_title

log = logging.getLogger(__name__)


def cell_text(value: object, key: str = "") -> str:
    """How a table cell shows a value of column ``key``: empty for missing, else as
    :func:`workbench.formatting.metric_cell` formats it (km, percentages, counts, 3 significant digits)."""
    if value is pd.NA or (isinstance(value, (float, np.floating)) and math.isnan(float(value))):
        return ""
    return metric_cell(key, value.item() if isinstance(value, np.generic) else value)


HEADER_LINE_CHARS = 20


def header_lines(title: str, width: int = HEADER_LINE_CHARS) -> str:
    """A long column title on a few lines of about ``width`` characters, broken at spaces (the
    table fits the window without cutting a title: "mean distance error" / "(km; a refusal" / ...)."""
    if len(title) <= width + 4:
        return title
    lines: list[str] = []
    for word in title.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def fill_table(table: QTableWidget, frame: pd.DataFrame) -> None:
    """Show a DataFrame with readable column titles and formatted cells (see :func:`cell_text`);
    a header's tooltip and ``Qt.UserRole`` are its column's key, a number cell's its full value (``repr``)."""
    table.clear()
    table.setColumnCount(len(frame.columns))
    table.setRowCount(len(frame))
    table.setHorizontalHeaderLabels([header_lines(metric_title(str(column))) for column in frame.columns])
    for c, column in enumerate(frame.columns):
        header = table.horizontalHeaderItem(c)
        header.setToolTip(str(column))
        header.setData(Qt.ItemDataRole.UserRole, str(column))
    for r, row in enumerate(frame.itertuples(index=False)):
        for c, value in enumerate(row):
            item = QTableWidgetItem(cell_text(value, str(frame.columns[c])))
            raw = value.item() if isinstance(value, np.generic) else value
            if isinstance(raw, (int, float)) and not isinstance(raw, bool):
                # as text: a Python number under a data role upset None's reference count in PySide6
                item.setToolTip(repr(raw))
                item.setData(Qt.ItemDataRole.UserRole, repr(raw))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(r, c, item)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)


class LeaderboardView(QWidget):
    """Profile (agl1k / iso / both) and breakdown (none / continent / speech) choosers over a table."""

    def __init__(self, store: Store, parent: QWidget | None = None, *, force_sync: bool = False) -> None:
        super().__init__(parent)
        self.store = store
        # the live refresh's reads, off the GUI thread; only the latest one is shown
        self._reader = LatestResult(self, force_sync=force_sync)
        self._reader.delivered.connect(self._show)
        self._reader.failed.connect(lambda message: log.warning("leaderboard refresh failed: %s", message))
        self.profile = QComboBox()
        self.profile.addItems(["both", "agl1k", "iso"])
        self.by = QComboBox()
        self.by.addItem("overall", None)
        self.by.addItem("by continent", "continent")
        self.by.addItem("by speech", "speech")
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSortingEnabled(False)
        self.frame = pd.DataFrame()
        row = QHBoxLayout()
        # Counting honestly (issue [N]): every model on the clips all of them answered, and
        # 95 % bootstrap intervals (clips resampled, seed 0, B = 2,000) as `aglw leaderboard`.
        self.common = QCheckBox("Common clips only")
        self.common.setToolTip("Rank every row on the clips all of them answered (leaderboard --common)")
        self.ci = QCheckBox("95 % intervals")
        self.ci.setToolTip("Bootstrap intervals, clips resampled with replacement (B = 2,000, seed 0)")
        for widget in (QLabel("Profile"), self.profile, QLabel("Breakdown"), self.by, self.common, self.ci):
            row.addWidget(widget)
        row.addStretch(1)
        self.counting = QLabel()
        self.counting.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.counting)
        layout.addWidget(self._compare_panel())
        self.profile.currentTextChanged.connect(lambda _t: self.refresh())
        self.by.currentIndexChanged.connect(lambda _i: self.refresh())
        # 2,000 resamples of every model take seconds: read off the GUI thread
        self.common.toggled.connect(lambda _c: self.refresh_in_background())
        self.ci.toggled.connect(lambda _c: self.refresh_in_background())
        self.refresh()

    def _compare_panel(self) -> QWidget:
        """Two rows (models or human rows) compared on the clips both answered (as `aglw compare`)."""
        panel = QWidget()
        column = QVBoxLayout(panel)
        column.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        self.compare_a, self.compare_b = QComboBox(), QComboBox()
        self.compare_button = QPushButton("Compare")
        self.compare_button.clicked.connect(self.run_compare)
        for widget in (QLabel("Compare"), self.compare_a, QLabel("with"), self.compare_b, self.compare_button):
            row.addWidget(widget)
        row.addStretch(1)
        self.compare_status = QLabel()
        self.compare_status.setWordWrap(True)
        self.compare_table = QTableWidget()
        self.compare_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        column.addLayout(row)
        column.addWidget(self.compare_status)
        column.addWidget(self.compare_table)
        return panel

    def run_compare(self) -> None:
        """Compare the two chosen rows (models or human rows; paired tests, Holm-corrected) and show the result."""
        from workbench.country_aliases import alias_table
        from workbench.errors import AglwError
        from workbench.studies.crowd import compare_rows

        a, b = self.compare_a.currentText(), self.compare_b.currentText()
        profile = "agl1k" if self.profile.currentText() == "both" else self.profile.currentText()
        try:
            # the table's alias table too, so the comparison and the rows above it agree
            result = compare_rows(self.store, a, b, profile=profile, aliases=alias_table())
        except AglwError as exc:
            self.compare_status.setText(str(exc))
            fill_table(self.compare_table, pd.DataFrame())
            return
        bootstrap = f"paired bootstrap (B = {result['bootstrap']:,}, seed {result['seed']})"
        if any(m["test"] == "mcnemar_exact" for m in result["metrics"]):
            tests = f"McNemar's exact test for accuracies and within-k rates, {bootstrap} for mean distance and GeoScore"
        else:  # a side answers a clip several times (a crowd): its clip score is the mean of its answers
            tests = f"{bootstrap} for every metric, a clip scored by the mean of a side's answers"
        self.compare_status.setText(
            f"{a} vs {b} on the {result['n_common']:,} clips both answered ({profile} profile): {tests}; "
            f"p (Holm) corrected over {len(result['metrics'])} metrics; n = clips the metric counts")
        frame = pd.DataFrame(result["metrics"])
        fill_table(self.compare_table, frame[[c for c in ("metric", "n", "a", "b", "difference", "test", "p_value",
                                                          "p_holm") if c in frame.columns]])

    def refresh(self) -> None:
        """Re-read now (a new choice, F5, a job's end); a background read still under way is dropped."""
        self._reader.invalidate()
        self._show(read_leaderboard(self.store, self.profile.currentText(), self.by.currentData(), **self._counting()))

    def refresh_in_background(self) -> None:
        """Re-read off the GUI thread (the live refresh while a job stores answers); the table
        changes when the read arrives, unless a newer read or :meth:`refresh` came first."""
        store, profile, by = self.store, self.profile.currentText(), self.by.currentData()
        counting = self._counting()
        self._reader.submit(lambda: read_leaderboard(store, profile, by, **counting))

    def _counting(self) -> dict[str, bool]:
        """The counting choices that differ from the plain table (none: the plain read)."""
        return {name: True for name, box in (("common", self.common), ("ci", self.ci)) if box.isChecked()}

    def _show(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        fill_table(self.table, frame)
        self.counting.setText(counting_note(frame, common=self.common.isChecked(), ci=self.ci.isChecked()))
        # any two rows the table shows, models and human rows alike (as `aglw compare`)
        models = [str(m) for m in frame.get("model", pd.Series(dtype=object)).drop_duplicates().tolist()]
        for combo, index in ((self.compare_a, 0), (self.compare_b, 1)):
            chosen = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(models)
            combo.setCurrentIndex(models.index(chosen) if chosen in models else min(index, len(models) - 1))
            combo.blockSignals(False)
        self.compare_button.setEnabled(len(models) >= 2)

    def shutdown(self) -> None:
        """Wait for a background read (closing the window: the store may be disposed next)."""
        self._reader.shutdown()


def read_leaderboard(store: Store, profile: str, by: str | None, *, common: bool = False,
                     ci: bool = False) -> pd.DataFrame:
    """The table the view shows: the rows `aglw leaderboard` prints
    (:func:`workbench.studies.board.leaderboard_board`: the models' rows, ``n`` answers counted of
    ``n_dataset`` clips; the desktop's human localizers and each web study's crowd and consensus;
    with ``common`` on the clips every row answered, with ``ci`` 95 % bootstrap intervals). The
    configuration folder's country alias table applies as on the command line (its counts in their
    own columns). ``attrs``: ``n_common``, ``alias_table``, ``notes`` and ``crowds`` (who each
    crowd's rows count)."""
    from workbench.country_aliases import alias_table
    from workbench.studies.board import leaderboard_board

    board = leaderboard_board(store, profile, by, common=common, ci=ci, aliases=alias_table())  # type: ignore[arg-type]
    frame = pd.DataFrame(board.rows, columns=board.columns)
    frame.attrs.update(n_common=board.n_common, alias_table=board.alias_table, notes=list(board.notes),
                       crowds=list(board.crowds))
    return frame


def counting_note(frame: pd.DataFrame, *, common: bool, ci: bool) -> str:
    """What the table's numbers count, shown under it."""
    from workbench.metrics.keys import DISTANCE_HEADER

    parts = [f"{DISTANCE_HEADER[0].upper()}{DISTANCE_HEADER[1:]}: the mean over answers with a defined distance.",
             "n: answers counted (a refusal is an answer); n dataset: clips in the model's dataset."]
    if "n_clips" in frame.columns:
        parts.append("A crowd's n counts its guesses; clips and people: the clips and participants they come from.")
    if common:
        n_common = frame.attrs.get("n_common")
        parts.append(f"Every row on the {n_common or 0:,} clips all of them answered.")
    if ci:
        parts.append("Intervals: 95 % percentile bootstrap, clips resampled with replacement (B = 2,000, seed 0).")
    aliases = frame.attrs.get("alias_table")
    if aliases:
        parts.append(f"Country alias table {aliases['file']} applied ({'; '.join(aliases['aliases'])}): "
                     "'correct under the alias table' counts the row's answers it turned correct.")
    from workbench.studies.board import crowd_line

    parts += [f"{note[0].upper()}{note[1:]}." for note in frame.attrs.get("notes", ())]
    parts += [f"{crowd_line(crowd)}." for crowd in frame.attrs.get("crowds", ())]
    return " ".join(parts)
