"""Leaderboard view: every imported ALM under both metric profiles, with breakdowns."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from storage import Store
from ui.workers import LatestResult
from workbench.metrics.service import leaderboard
from workbench.studies.localizers import with_human_rows

log = logging.getLogger(__name__)


def cell_text(value: object) -> str:
    """How a table cell shows a value: empty for missing, 4 significant digits below 1000,
    one decimal from 1000 on (a distance of 10771.39 km reads 10771.4, not 1.077e+04)."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if math.isnan(number):
            return ""
        return f"{number:.1f}" if abs(number) >= 1000 else f"{number:.4g}"
    return str(value)


def fill_table(table: QTableWidget, frame: pd.DataFrame) -> None:
    """Show a DataFrame as plain text cells (see :func:`cell_text`)."""
    table.clear()
    table.setColumnCount(len(frame.columns))
    table.setRowCount(len(frame))
    table.setHorizontalHeaderLabels([str(c) for c in frame.columns])
    for r, row in enumerate(frame.itertuples(index=False)):
        for c, value in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(cell_text(value)))
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
        for widget in (QLabel("Profile"), self.profile, QLabel("Breakdown"), self.by):
            row.addWidget(widget)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.table, 1)
        self.profile.currentTextChanged.connect(lambda _t: self.refresh())
        self.by.currentIndexChanged.connect(lambda _i: self.refresh())
        self.refresh()

    def refresh(self) -> None:
        """Re-read now (a new choice, F5, a job's end); a background read still under way is dropped."""
        self._reader.invalidate()
        self._show(read_leaderboard(self.store, self.profile.currentText(), self.by.currentData()))

    def refresh_in_background(self) -> None:
        """Re-read off the GUI thread (the live refresh while a job stores answers); the table
        changes when the read arrives, unless a newer read or :meth:`refresh` came first."""
        store, profile, by = self.store, self.profile.currentText(), self.by.currentData()
        self._reader.submit(lambda: read_leaderboard(store, profile, by))

    def _show(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        fill_table(self.table, frame)

    def shutdown(self) -> None:
        """Wait for a background read (closing the window: the store may be disposed next)."""
        self._reader.shutdown()


def read_leaderboard(store: Store, profile: str, by: str | None) -> pd.DataFrame:
    """The table the view shows: the models' rows, and with no breakdown the human localizers'."""
    frame = leaderboard(store, profile, by=by)  # type: ignore[arg-type]
    if by is None:
        frame = with_human_rows(frame, store, profile)  # blind human guesses, scored alike
    return frame
