"""Agreement view: run the agreement export in the jobs panel, then show its tables and figures."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTableWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from storage import Store
from ui.cockpit.jobs import JobContext, JobSpec, JobsPanel
from ui.cockpit.leaderboard_view import fill_table
from workbench.agreement.service import export_agreement
from workbench.config import cache_dir

MAX_TABLE_ROWS = 500


class AgreementView(QWidget):
    """Bundle folder and B; "Run export" starts a job; the result's CSV tables and PNG figures open in tabs."""

    def __init__(self, store: Store, jobs: JobsPanel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.jobs = jobs
        self.folder = QLineEdit(str(cache_dir() / "agreement-bundle"))
        self.bootstrap = QSpinBox()
        self.bootstrap.setRange(0, 100_000)
        self.bootstrap.setValue(2000)
        self.run_button = QPushButton("Run export")
        self.run_button.clicked.connect(self.run_export)
        self.message = QLabel("")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        self.tabs = QTabWidget()
        row = QHBoxLayout()
        for widget in (QLabel("Bundle folder"), self.folder, QLabel("Bootstrap B"), self.bootstrap, self.run_button):
            row.addWidget(widget)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.message)
        layout.addWidget(self.tabs, 1)
        self._waiting = False
        jobs.finished.connect(self._job_finished)

    def run_export(self) -> bool:
        folder = Path(self.folder.text()).expanduser()
        bootstrap = self.bootstrap.value()

        def run(context: JobContext) -> str:
            context.set_total(1)
            manifest = export_agreement(self.store, folder, bootstrap=bootstrap)
            context.advance(1)
            return f"agreement bundle: {manifest.n_ratings} ratings written to {folder}"

        self._waiting = self.jobs.start(JobSpec("agreement export", run))
        return self._waiting

    def _job_finished(self, status: str, message: str) -> None:
        if not self._waiting:
            return
        self._waiting = False
        self.message.setText(message)
        if status == "done":
            self.show_bundle(Path(self.folder.text()).expanduser())

    def show_bundle(self, folder: Path) -> list[str]:
        """Open the bundle's tables (CSV) and figures (PNG) in tabs; returns the tab titles."""
        self.tabs.clear()
        manifest_file = folder / "manifest.json"
        names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        if manifest_file.is_file():
            files = json.loads(manifest_file.read_text()).get("files") or {}
            listed = [str(f) for f in (files if isinstance(files, (list, dict)) else [])]
            names = [n for n in listed if (folder / n).is_file()] or names
        for name in names:
            path = folder / name
            if path.suffix == ".csv":
                table = QTableWidget()
                table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
                fill_table(table, pd.read_csv(path, nrows=MAX_TABLE_ROWS))
                self.tabs.addTab(table, path.stem)
            elif path.suffix == ".png":
                label = QLabel()
                label.setPixmap(QPixmap(str(path)))
                scroll = QScrollArea()
                scroll.setWidget(label)
                self.tabs.addTab(scroll, path.stem)
        return [self.tabs.tabText(i) for i in range(self.tabs.count())]
