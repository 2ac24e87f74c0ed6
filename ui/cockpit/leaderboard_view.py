"""Leaderboard view: every imported ALM under both metric profiles, with breakdowns."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from storage import Store
from workbench.metrics.service import leaderboard
from workbench.studies.localizers import with_human_rows


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

    def __init__(self, store: Store, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
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
        profile, by = self.profile.currentText(), self.by.currentData()
        self.frame = leaderboard(self.store, profile, by=by)  # type: ignore[arg-type]
        if by is None:
            self.frame = with_human_rows(self.frame, self.store, profile)  # blind human guesses, scored alike
        fill_table(self.table, self.frame)
