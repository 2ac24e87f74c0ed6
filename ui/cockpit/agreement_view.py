"""Agreement view: the agreement of the ratings the project holds now, and the export bundle.

On opening (and on every refresh) the view computes the headline coefficients over all units
straight from the store, each with its n and, where it is not reported, the reason; no export
is needed to see them.  "Run export" writes the full bundle (breakdowns, bootstrap intervals,
figures) in the jobs panel and opens its tables and figures in tabs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from PySide6.QtCore import Qt
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QHBoxLayout,
    QSplitter,
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
from ui.cockpit.jobs import JobSpec, JobsPanel
from ui.cockpit.leaderboard_view import fill_table
from workbench.agreement.analysis import compute_coefficients
from workbench.agreement.names import readable
from workbench.agreement.report import summary_table
from workbench.agreement.service import export_agreement
from workbench.studies import error_modes
from workbench.agreement.units import load_ratings
from workbench.config import cache_dir
from workbench.errors import AglwError
from workbench.tasks import TaskContext

MAX_TABLE_ROWS = 500
CURRENT_COLUMNS = ["section", "label", "rater_a", "rater_b", "coefficient", "value", "n_units", "n_raters", "reason"]


class AgreementView(QWidget):
    """The store's agreement now (headline coefficients with n); bundle folder and B; "Run export"
    starts a job; the result's CSV tables and PNG figures open in tabs."""

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
        # the study report (issue 18): alt-test, baselines, error modes, sensitivity as one HTML file
        self.study_button = QPushButton("Write study report")
        self.study_button.clicked.connect(self.run_study_report)
        self._study_to: Path | None = None
        self.message = QLabel("")
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        self.tabs = QTabWidget()
        self.current_title = QLabel("")
        self.current_title.setTextFormat(Qt.TextFormat.PlainText)
        self.current_title.setWordWrap(True)
        self.current = QTableWidget()
        self.current.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        current_box = QWidget()
        current_layout = QVBoxLayout(current_box)
        current_layout.setContentsMargins(0, 0, 0, 0)
        current_layout.addWidget(self.current_title)
        current_layout.addWidget(self.current, 1)
        row = QHBoxLayout()
        for widget in (QLabel("Bundle folder"), self.folder, QLabel("Bootstrap B"), self.bootstrap, self.run_button,
                       self.study_button):
            row.addWidget(widget)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(current_box)
        splitter.addWidget(self.tabs)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.message)
        layout.addWidget(splitter, 1)
        self._waiting = False
        self._exporting_to: Path | None = None
        jobs.finished.connect(self._job_finished)
        self.refresh()

    def refresh(self) -> pd.DataFrame:
        """Recompute the headline coefficients (all units, no intervals) from the ratings in the store.

        Returns the rows shown (every coefficient with its n and, when not reported, the reason).
        """
        try:
            data = load_ratings(self.store)
        except AglwError as exc:
            self.current_title.setText(f"agreement not available: {exc}")
            fill_table(self.current, pd.DataFrame(columns=CURRENT_COLUMNS))
            return pd.DataFrame(columns=CURRENT_COLUMNS)
        if data.ratings.empty:
            self.current_title.setText("no judge or expert ratings in the project yet: judge clips or record labels")
            fill_table(self.current, pd.DataFrame(columns=CURRENT_COLUMNS))
            return pd.DataFrame(columns=CURRENT_COLUMNS)
        # no bootstrap and no breakdowns: quick enough to run whenever the view refreshes
        coefficients = compute_coefficients(data.ratings, data.clips, bootstrap=0, breakdowns=False)
        shown = readable(summary_table(coefficients))[CURRENT_COLUMNS]  # "Cohen's κ", "mean of the judges", 3 decimals
        fill_table(self.current, shown)
        self.current_title.setText(
            f"Agreement from the ratings now in the project ({len(data.ratings)} ratings; all units, no intervals; "
            "an empty value says why in 'reason'). “Run export” writes the full bundle with breakdowns and intervals."
        )
        return shown

    def current_rows(self) -> pd.DataFrame:
        """The store's agreement table as shown (text cells), by column key (the readable titles'
        keys, which their headers carry: see ``fill_table``)."""
        items = [self.current.horizontalHeaderItem(c) for c in range(self.current.columnCount())]
        headers = [item.data(Qt.ItemDataRole.UserRole) or item.text() for item in items]
        return pd.DataFrame(
            [[self.current.item(r, c).text() for c in range(self.current.columnCount())] for r in range(self.current.rowCount())],
            columns=headers,
        )

    def run_export(self) -> bool:
        folder = Path(self.folder.text()).expanduser()
        bootstrap = self.bootstrap.value()
        store = self.store
        # the bundle shown afterwards is the one written, even if the folder field is edited meanwhile
        self._exporting_to = folder

        # The job keeps no reference to this view: the jobs panel holds the last job for "Resume",
        # and a view ↔ panel reference cycle would leave both widgets to the cyclic garbage
        # collector, which may run them down in a worker thread (a crash in Qt).
        def run(context: TaskContext) -> str:
            # the button replaces an earlier bundle in the folder (as --force does); any other
            # non-empty folder is refused and the job reports why
            manifest = export_agreement(store, folder, bootstrap=bootstrap, replace=True, task=context,
                                        extra_tables=error_modes.bundle_tables)
            return f"agreement bundle: {manifest.n_ratings} ratings written to {folder}"

        return self._start(JobSpec("agreement export", run))

    def run_study_report(self) -> bool:
        """Write the study report (``aglw study report``) into ``<cache>/study-report`` as a job; its
        tables open in tabs when it is done and the message names the HTML file."""
        from workbench.studies.report import write_report

        folder = cache_dir() / "study-report"
        bootstrap = self.bootstrap.value()
        store = self.store
        self._study_to = folder

        def run(context: TaskContext) -> str:
            # the workbench's own cache folder (not a place the user named): made when missing, as
            # every cache is; outputs the user names still need their folder to exist
            folder.parent.mkdir(parents=True, exist_ok=True)
            report = write_report(store, folder, bootstrap=bootstrap, replace=True, task=context)
            return f"study report: {report.n_figures} figures, open {folder / 'report.html'} in a browser"

        started = self._start(JobSpec("study report", run))
        if not started:
            self._study_to = None
        return started

    def _start(self, spec: JobSpec) -> bool:
        """Start this view's job; its end is shown here (:meth:`_job_finished`)."""
        # set before starting: a synchronous job (force_sync) reports before start() returns
        self._waiting = True
        started = self.jobs.start(spec)
        if not started:
            self._waiting = False
        return started

    def _job_finished(self, status: str, message: str) -> None:
        if not self._waiting:
            return
        self._waiting = False
        self.message.setText(message)
        if self._study_to is not None:
            study, self._study_to = self._study_to, None
            if status == "done":
                self.show_bundle(study / "tables")
            return
        if status == "done" and self._exporting_to is not None:
            self.show_bundle(self._exporting_to)

    def show_bundle(self, folder: Path) -> list[str]:
        """Open the bundle's tables (CSV) and figures (PNG) in tabs; returns the tab titles.

        A table longer than ``MAX_TABLE_ROWS`` shows its first rows and says so in its title.
        """
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
                frame = pd.read_csv(path)
                fill_table(table, frame.head(MAX_TABLE_ROWS))
                title = path.stem
                if len(frame) > MAX_TABLE_ROWS:
                    title = f"{path.stem} (first {MAX_TABLE_ROWS} of {len(frame)} rows)"
                self.tabs.addTab(table, title)
            elif path.suffix == ".png":
                label = QLabel()
                label.setPixmap(QPixmap(str(path)))
                scroll = QScrollArea()
                scroll.setWidget(label)
                self.tabs.addTab(scroll, path.stem)
        return [self.tabs.tabText(i) for i in range(self.tabs.count())]
