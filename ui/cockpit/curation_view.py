"""Curation view: the stored fit, fit parameters with a live what-if preview, the category table
with forced polarities (commands with undo), run history and the diff between any two runs.

The view opens on the latest *stored* run (the one `aglw fit` or "Fit and store run" made):
its settings in the controls, its categories and numbers in the table, its diff against the
run before it.  Changing a setting, a what-if polarity or a forced polarity computes a
*preview* instead, labelled "Preview (settings: ...)" with every setting it used and compared
with the latest stored run; "Show stored run" goes back.  A preview never stores a run
(``fit(..., preview=True)``); "what if" polarities live only in this view until the user
forces them for real, which records a :class:`workbench.commands.SetCategoryPolarity` through
the main window's command stack.  Clips named in a diff are links: activating one asks the
review workbench to open it.

"Fit and store run" is a job (:func:`ui.cockpit.jobs.fit_job`) in the jobs panel: it runs in
the panel's worker with progress and Cancel, and when it ends the view shows the stored run
and its diff. A cancelled fit stores nothing; fitting again stores the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from storage import Store
from ui.cockpit.curation_categories import CATEGORY_COLUMNS, CategoryTableMixin, fit_table_width
from ui.cockpit.curation_plot import FitPlot
from ui.cockpit.jobs import JobsPanel, fit_job
from ui.cockpit.run_diff import DiffTree, plain, settings_text, summary_numbers
from workbench.commands import Command, CommandStack
from workbench.curation import runs, service
from workbench.curation.model import FitParameters, RunDiff
from workbench.errors import AglwError
from workbench.labels import INTERACTIVE_WAIT_S, LabelService
from workbench.metrics.service import model_names
from workbench.tasks import TaskResult, run_task

PREVIEW_DELAY_MS = 250


class CurationView(CategoryTableMixin, QWidget):
    """Parameters, live preview, category table with forced polarities, runs and diffs.

    Parameters
    ----------
    store
        The project.
    annotator_id
        Who forces polarities (their CategoryPolarity rows).
    stack
        The main window's command stack (undo/redo is shared with the review edits).
    execute
        Runs a command through the stack and reports errors (the main window's ``execute``);
        default: push onto ``stack`` directly.
    live
        Re-preview automatically (debounced) when a parameter changes.
    jobs
        The jobs panel that runs "Fit and store run" in its worker (progress, cancel); without
        one (a view on its own) the fit runs inline through the same task protocol.

    Signals
    -------
    clipActivated(str)
        A clip key to open in the review workbench.
    runStored(int)
        A stored fit's run id.
    """

    clipActivated = Signal(str)
    runStored = Signal(int)

    def __init__(
        self,
        store: Store,
        annotator_id: int,
        stack: CommandStack,
        *,
        execute: Callable[[Command], bool] | None = None,
        live: bool = True,
        jobs: JobsPanel | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.jobs = jobs
        self.annotator_id = annotator_id
        self.stack = stack
        self.labels = LabelService(store, write_wait_s=INTERACTIVE_WAIT_S)
        self._execute = execute
        self.live = live
        self.what_if: dict[str, str] = {}
        self.preview: runs.FitResult | None = None
        self.preview_count = 0
        # what the table shows: a stored run (its id) or, when None, the latest preview
        self.stored: runs.FitResult | None = None
        self.shown_run_id: int | None = None
        self._latest_run_id: int | None = None
        self._fitted_run_id: int | None = None  # the run the last fit stored, once it ended
        # settings the controls do not show (top_n, quality filters) come from the stored run
        self._base = FitParameters()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PREVIEW_DELAY_MS)
        self._timer.timeout.connect(self.preview_now)

        self.gamma = self._double(1000.0, 1.0, 20_000.0, 50.0, 0, " km")
        self.alpha = self._double(0.05, 0.0, 1.0, 0.01, 3)
        self.theta = self._double(0.0, -3.0, 3.0, 0.05, 3)
        self.tau = self._double(0.15, 0.0, 1.0, 0.01, 3)
        self.n_min = QSpinBox()
        self.n_min.setRange(1, 10_000)
        self.n_min.setValue(5)
        self.n_min.valueChanged.connect(self.schedule_preview)
        self.rollup = QComboBox()
        self.rollup.addItems(["leaf", "root"])
        self.rollup.currentTextChanged.connect(self.schedule_preview)
        self.alm = QComboBox()
        self.alm.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)  # a model's name whole
        self.alm.addItem("(judged ALM)", None)
        self.alm.currentIndexChanged.connect(self.schedule_preview)
        form = QFormLayout()
        form.addRow("γ (success threshold)", self.gamma)
        form.addRow("α (margin a vs ā)", self.alpha)
        form.addRow("θ (candidate threshold)", self.theta)
        form.addRow("τ (tag threshold)", self.tau)
        form.addRow("n_min (support)", self.n_min)
        form.addRow("Roll-up level", self.rollup)
        form.addRow("Reference ALM", self.alm)
        self.preview_button = QPushButton("Preview")
        self.preview_button.clicked.connect(self.preview_now)
        self.fit_button = QPushButton("Fit and store run")
        self.fit_button.clicked.connect(self.fit_and_store)
        self.stored_button = QPushButton("Show stored run")
        self.stored_button.clicked.connect(lambda: self.show_stored())
        buttons = QHBoxLayout()
        buttons.addWidget(self.preview_button)
        buttons.addWidget(self.fit_button)
        buttons.addWidget(self.stored_button)
        if jobs is not None:
            jobs.track_starter(self.fit_button)  # one job at a time: disabled while any runs
        params_box = QGroupBox("Fit parameters")
        params_layout = QVBoxLayout(params_box)
        # The buttons and the status line come first: the dock is short at the window's default size
        # and its scroll area would otherwise hide what the last fit did below the visible area.
        params_layout.addLayout(buttons)
        # How the last "Fit and store run" job went; a refresh (after any job) leaves it.
        self.fit_status = plain("")
        params_layout.addWidget(self.fit_status)
        params_layout.addLayout(form)
        self.summary = plain("no stored run yet")
        # names what the table and the diff show: "Stored run N — settings: ..." or "Preview (settings: ...)"
        self.source = plain("")
        self.diff_title = plain("")

        self.table = QTableWidget(0, len(CATEGORY_COLUMNS))
        self.table.setHorizontalHeaderLabels(CATEGORY_COLUMNS)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        # every column as wide as its title and its cells ("Forced by expert", "Walk, footsteps"): the
        # table scrolls sideways rather than cut a title or a name
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        self.what_if_mode = QCheckBox("What-if only (preview, nothing recorded)")
        force_row = QHBoxLayout()
        force_row.addWidget(QLabel("Force selected category:"))
        for polarity, text in (("P", "P"), ("N", "N"), ("neutral", "neutral"), (None, "fitted")):
            button = QPushButton(text)
            button.clicked.connect(lambda _=False, p=polarity: self.force_selected(p))
            force_row.addWidget(button)
        force_row.addWidget(self.what_if_mode)
        force_row.addStretch(1)

        self.preview_diff = DiffTree()
        self.runs = QTableWidget(0, 5)
        self.runs.setHorizontalHeaderLabels(["Run", "Created", "Candidates", "of clips", "θ"])
        self.runs.verticalHeader().hide()
        self.runs.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.runs.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.runs.setToolTip("double-click a run to show it")
        self.runs.cellDoubleClicked.connect(self._run_double_clicked)
        self.run_a = QComboBox()
        self.run_b = QComboBox()
        self.diff_button = QPushButton("Diff")
        self.diff_button.clicked.connect(self.show_run_diff)
        diff_row = QHBoxLayout()
        diff_row.addWidget(QLabel("from run"))
        diff_row.addWidget(self.run_a)
        diff_row.addWidget(QLabel("to run"))
        diff_row.addWidget(self.run_b)
        diff_row.addWidget(self.diff_button)
        self.run_diff = DiffTree()
        for tree in (self.preview_diff, self.run_diff):
            tree.clipActivated.connect(self.clipActivated)

        # the picture of the fit beside its table: each category's a − ā against the ±α band
        self.fit_plot = FitPlot()
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addWidget(params_box)
        left_layout.addWidget(self.summary)
        left_layout.addWidget(self.diff_title)
        left_layout.addWidget(self.preview_diff, 1)
        fit = QSplitter()
        fit.addWidget(self.table)
        fit.addWidget(self.fit_plot)
        fit.setStretchFactor(0, 0)
        fit.setStretchFactor(1, 1)
        fit.setChildrenCollapsible(False)
        history = QWidget()
        history_layout = QVBoxLayout(history)
        history_layout.setContentsMargins(0, 0, 0, 0)
        history_layout.addWidget(QLabel("Run history"))
        history_layout.addWidget(self.runs, 1)
        diffs = QWidget()
        diffs_layout = QVBoxLayout(diffs)
        diffs_layout.setContentsMargins(0, 0, 0, 0)
        diffs_layout.addLayout(diff_row)
        diffs_layout.addWidget(self.run_diff, 1)
        runs_row = QSplitter()
        runs_row.addWidget(history)
        runs_row.addWidget(diffs)
        runs_row.setStretchFactor(1, 1)
        runs_row.setChildrenCollapsible(False)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.source)
        top_layout.addWidget(fit, 1)
        top_layout.addLayout(force_row)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(top)
        right.addWidget(runs_row)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 1)
        right.setChildrenCollapsible(False)
        splitter = QSplitter()
        for part in (left, right):
            splitter.addWidget(part)
        splitter.setStretchFactor(1, 1)
        splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)
        self._unsubscribe = stack.subscribe(self._labels_changed)
        self.refresh()

    def _double(self, value: float, low: float, high: float, step: float, decimals: int, suffix: str = "") -> QDoubleSpinBox:
        box = QDoubleSpinBox()
        box.setRange(low, high)
        box.setDecimals(decimals)
        box.setSingleStep(step)
        box.setValue(value)
        if suffix:
            box.setSuffix(suffix)
        box.valueChanged.connect(self.schedule_preview)
        return box

    # ------------------------------------------------------------------ parameters and fits

    def parameters(self) -> FitParameters:
        """The parameters the controls show (the shown run's for the settings without a control)."""
        return replace(
            self._base, gamma_km=self.gamma.value(), alpha=self.alpha.value(), theta=self.theta.value(),
            tau=self.tau.value(), n_min=self.n_min.value(), rollup=self.rollup.currentText(),
        )

    def schedule_preview(self, *_args: object) -> None:
        """Re-preview after a short pause (typing in a spin box does not refit per keystroke)."""
        if self.live:
            self._timer.start()

    def _labels_changed(self) -> None:
        # An edit changes what a preview would show; a stored run stays what it is, so it is not
        # replaced by a preview behind the user's back.
        if self.shown_run_id is None:
            self.schedule_preview()

    def _set_controls(self, params: FitParameters, alm_model: str | None) -> None:
        """Show ``params`` in the controls without scheduling a preview."""
        controls = (self.gamma, self.alpha, self.theta, self.tau, self.n_min, self.rollup, self.alm)
        for control in controls:
            control.blockSignals(True)
        try:
            self.gamma.setValue(params.gamma_km)
            self.alpha.setValue(params.alpha)
            self.theta.setValue(params.theta)
            self.tau.setValue(params.tau)
            self.n_min.setValue(params.n_min)
            self.rollup.setCurrentText(params.rollup)
            index = self.alm.findData(alm_model) if alm_model else -1
            if alm_model and index < 0:
                self.alm.addItem(alm_model, alm_model)
                index = self.alm.count() - 1
            self.alm.setCurrentIndex(max(index, 0))
        finally:
            for control in controls:
                control.blockSignals(False)
        self._base = params

    def preview_now(self) -> runs.FitResult | None:
        """Fit without storing, with the what-if polarities; shows the result, labelled as a
        preview naming its settings, and its diff against the latest stored run."""
        self._timer.stop()
        params = self.parameters()
        alm = self.alm.currentData()
        settings = settings_text(params, alm, self.what_if)
        try:
            result = service.fit(
                self.store, params, alm_model=alm, preview=True,
                what_if=service.WhatIf(category_polarity=dict(self.what_if)) if self.what_if else None,
            )
        except (AglwError, ValueError) as exc:
            self.summary.setText(f"Preview ({settings}) failed: {exc}")
            return None
        self.preview = result
        self.preview_count += 1
        self.shown_run_id = None
        base = result.diff.base_run_id if result.diff is not None else None
        against = f"compared with stored run {base}" if base is not None else "no stored run to compare with"
        self.source.setText(f"Preview ({settings}) — not stored; {against}")
        self.summary.setText(f"Preview ({settings}): {summary_numbers(result)}")
        self._fill_categories(result, self.what_if)
        self.diff_title.setText(f"Preview against stored run {base}" if base is not None else "Preview")
        self.preview_diff.set_diff(result.diff, f"preview against run {base}" if base is not None else "")
        return result

    def show_stored(self, run_id: int | None = None) -> runs.FitResult | None:
        """Show a stored run (default: the latest): its settings, categories, numbers and its diff
        against the run before it.  With no stored run, a preview is shown instead."""
        self._timer.stop()
        try:
            stored = runs.stored_fit(self.store, run_id)
        except AglwError as exc:
            self.summary.setText(str(exc))
            return None
        if stored is None:
            self.stored = None
            self.summary.setText("no stored run yet: “Fit and store run” (or `aglw fit`) stores one")
            self.preview_now()
            return None
        info = runs.run_info(self.store, int(stored.run_id))
        params = FitParameters.from_dict(stored.parameters)
        self._set_controls(params, stored.alm_model or None)
        self.what_if.clear()
        self.stored = stored
        self.shown_run_id = stored.run_id
        settings = settings_text(params, stored.alm_model or None)
        created = info.created_at.strftime("%Y-%m-%d %H:%M")
        self.source.setText(f"Stored run {stored.run_id} ({created}) — {settings}")
        self.summary.setText(f"Stored run {stored.run_id} ({created}, {settings}): {summary_numbers(stored)}")
        self._fill_categories(stored, {})
        base = stored.diff.base_run_id if stored.diff is not None else None
        if base is None:
            self.diff_title.setText(f"Stored run {stored.run_id}")
            self.preview_diff.set_diff(None, "no earlier stored run to compare with")
        else:
            self.diff_title.setText(f"Stored run {stored.run_id} against stored run {base}")
            self.preview_diff.set_diff(stored.diff, f"run {base} → run {stored.run_id}")
        return stored

    def fit_and_store(self) -> int | None:
        """Fit with the current parameters and store the run (what-if polarities are not used).

        With a jobs panel the fit is its job, in the worker (progress and Cancel there); the view
        shows the run when the job ends (:meth:`fit_ended`). Returns the stored run's id when the
        fit has already ended (no panel, or a synchronous one), else None.
        """
        self._fitted_run_id = None
        spec = fit_job(self.store, self.parameters(), alm_model=self.alm.currentData(),
                       created_by=self.annotator_id, on_end=self.fit_ended)
        if self.jobs is None:
            self.fit_ended(run_task(spec.name, spec.run, summary=spec.summary))
        elif self.jobs.start(spec):
            if self.jobs.running:
                self.fit_status.setText("fitting… (progress and Cancel in the Jobs panel)")
        else:
            self.fit_status.setText(f"fit not started: {self.jobs.status.text()}")
        return self._fitted_run_id

    def fit_ended(self, ended: TaskResult) -> None:
        """A fit job ended: show the stored run and its diff, or why there is none."""
        if ended.status == "cancelled":
            self.fit_status.setText("fit cancelled: no run stored; “Fit and store run” again stores one")
            return
        if ended.status == "failed":
            # The fit's own words for bad input; anything else as the jobs panel names it.
            known = isinstance(ended.error, (AglwError, ValueError))
            self.fit_status.setText(f"fit failed: {ended.error if known else ended.message}")
            return
        result: runs.FitResult = ended.value
        self.fit_status.setText(ended.message)
        self.refresh_runs()
        if result.run_id is not None:
            self._fitted_run_id = result.run_id
            self.runStored.emit(result.run_id)
            self._select_runs(result.diff.base_run_id if result.diff else None, result.run_id)
            if result.diff is not None:
                self.show_run_diff()
            self.show_stored(result.run_id)

    # ------------------------------------------------------------------ runs

    def refresh(self) -> None:
        """Re-read models, runs and labels from the store (after another annotator's work)."""
        chosen = self.alm.currentData()
        self.alm.blockSignals(True)
        self.alm.clear()
        self.alm.addItem("(judged ALM)", None)
        for name in model_names(self.store):
            self.alm.addItem(name, name)
        index = self.alm.findData(chosen)
        self.alm.setCurrentIndex(max(index, 0))
        self.alm.blockSignals(False)
        self.alm.setMinimumWidth(self.alm.sizeHint().width())  # the longest model name whole
        self.refresh_runs()
        latest = runs.latest_run_id(self.store)
        new_run = latest != self._latest_run_id
        self._latest_run_id = latest
        if self.shown_run_id is None and self.preview is not None and not new_run:
            self.preview_now()  # the user's preview stays a preview, recomputed on the current data
        else:
            # a run stored meanwhile (a fit job, `aglw fit`) is shown; else the run shown stays
            self.show_stored(None if new_run or self.shown_run_id is None else self.shown_run_id)

    def refresh_runs(self) -> None:
        stored = runs.list_runs(self.store)
        self.runs.setRowCount(len(stored))
        for row, run in enumerate(reversed(stored)):
            theta = run.parameters.get("theta")
            # candidates of clips, counted from the run's stored rows as the summary line counts them
            values = [str(run.id), run.created_at.strftime("%Y-%m-%d %H:%M"),
                      f"{run.n_candidates:,}", f"{run.n_clips:,}", "" if theta is None else f"{float(theta):.4g}"]
            for column, value in enumerate(values):
                self.runs.setItem(row, column, QTableWidgetItem(value))
        fit_table_width(self.runs)
        previous = (self.run_a.currentData(), self.run_b.currentData())
        for combo in (self.run_a, self.run_b):
            combo.clear()
            for run in stored:
                combo.addItem(f"run {run.id}", run.id)
        if len(stored) >= 2:
            self._select_runs(previous[0] or stored[-2].id, previous[1] or stored[-1].id)

    def _run_double_clicked(self, row: int, _column: int) -> None:
        item = self.runs.item(row, 0)
        if item is not None:
            self.show_stored(int(item.text()))

    def run_ids(self) -> list[int]:
        return [int(self.run_a.itemData(i)) for i in range(self.run_a.count())]

    def _select_runs(self, run_a: int | None, run_b: int | None) -> None:
        for combo, run_id in ((self.run_a, run_a), (self.run_b, run_b)):
            index = combo.findData(run_id)
            if index >= 0:
                combo.setCurrentIndex(index)

    def show_run_diff(self) -> RunDiff | None:
        """Diff of the two chosen stored runs."""
        run_a, run_b = self.run_a.currentData(), self.run_b.currentData()
        if run_a is None or run_b is None:
            self.run_diff.set_diff(None, "store at least two runs to compare")
            return None
        diff = runs.run_diff(self.store, int(run_a), int(run_b))
        self.run_diff.set_diff(diff, f"run {run_a} → run {run_b}")
        return diff

    def shutdown(self) -> None:
        self._timer.stop()
        self._unsubscribe()
