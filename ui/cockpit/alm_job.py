"""Asking an ALM from the cockpit: a dialog (provider, model, clips, the estimate first) and the job.

The dialog builds the same :class:`~workbench.alm.runner.AlmRunOptions` as ``aglw alm run``; the
estimate is the offline dry run (nothing is sent), and *Run* stays disabled until an estimate
for exactly those settings is shown. The job runs :func:`~workbench.alm.runner.run_alm` in the
jobs panel's worker; after each group of stored answers it notes the answers and the cost so far,
which the panel shows live. Answers are predictions of the model NAME as soon as they are stored,
so the leaderboard and the review view's ALM chooser see them at their next refresh.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from storage import Store
from ui.cockpit.jobs import JobSpec, JobsPanel
from workbench.errors import AglwError
from workbench.formatting import usd
from workbench.llm.providers import ALM_PROVIDERS as PROVIDERS
from workbench.tasks import TaskContext


def _usd(value: float | None) -> str:
    return usd(value, "unknown (no price in alm.toml)")


def alm_job(store: Store, options: object, mode: str = "sync") -> JobSpec:
    """The job of one ALM run; notes the answers and cost after each stored group.

    ``mode`` ``batch`` submits a Gemini batch instead (as ``aglw alm run --mode batch``); its
    answers are stored by ``aglw alm run --model NAME --collect`` once the batch has ended."""
    from workbench.alm.runner import AlmRunReport, run_alm

    if mode == "batch":
        def submit(task: TaskContext) -> str:
            from workbench.alm.batch import submit_batch

            report = submit_batch(store, options, task=task)  # type: ignore[arg-type]
            return f"{report.model}: {report.stopped or 'batch submitted'}; collect with aglw alm run --model {report.model} --collect"

        return JobSpec(f"submit a batch to {getattr(options, 'api_model_id', 'ALM')}", submit)

    def run(task: TaskContext) -> str:
        def progress(report: AlmRunReport) -> None:
            task.note(f"{report.answered} answered, {len(report.failed)} failed, "
                      f"{report.input_tokens:,} + {report.output_tokens:,} tokens, cost so far {_usd(report.cost_usd)}")

        report = run_alm(store, options, task=task, on_stored=progress)  # type: ignore[arg-type]
        return (f"{report.model}: {report.answered} answered ({len(report.rejected)} without coordinates), "
                f"{report.skipped_cached} already answered, {len(report.failed)} failed; cost {_usd(report.cost_usd)}")

    return JobSpec(f"ask {getattr(options, 'api_model_id', 'ALM')}", run)


class AlmRunDialog(QDialog):
    """Provider, model and clips of a run; the estimate must be shown before *Run* is enabled."""

    def __init__(self, store: Store, clip_ids: list[int], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Ask an audio-language model")
        self.store = store
        self.clip_ids = list(clip_ids)
        self.provider = QComboBox()
        self.provider.addItems(PROVIDERS)
        self.model = QLineEdit()
        self.model.setPlaceholderText("name on the leaderboard, e.g. qwen2.5-omni")
        self.api_model = QLineEdit()
        self.api_model.setPlaceholderText("the provider's model id (default: the name)")
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("openai-compatible: e.g. http://127.0.0.1:8000/v1")
        self.api_key_env = QLineEdit()
        self.api_key_env.setPlaceholderText("variable holding the key (openai-compatible only)")
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, 64)
        self.concurrency.setValue(4)
        # the CLI's --max-cost, --samples and --mode (0 = no cost limit)
        self.max_cost = QDoubleSpinBox()
        self.max_cost.setRange(0.0, 100_000.0)
        self.max_cost.setDecimals(2)
        self.max_cost.setPrefix("$ ")
        self.max_cost.setSpecialValueText("no limit")
        self.max_cost.setToolTip("Refuse a run whose estimate exceeds this; stop once this much is spent")
        self.samples = QSpinBox()
        self.samples.setRange(1, 50)
        self.samples.setToolTip("Answers drawn per clip on purpose (seeds 42, 43, …; the first is the prediction)")
        self.mode = QComboBox()
        self.mode.addItem("sync (answers as they arrive)", "sync")
        self.mode.addItem("batch (Gemini Batch API, half price; collect later)", "batch")
        self.shown_clips = QRadioButton(f"the {len(self.clip_ids)} clips shown in the browser")
        self.all_clips = QRadioButton("all clips of the project")
        (self.shown_clips if self.clip_ids else self.all_clips).setChecked(True)
        self.shown_clips.setEnabled(bool(self.clip_ids))
        group = QButtonGroup(self)
        group.addButton(self.shown_clips)
        group.addButton(self.all_clips)
        self.estimate_button = QPushButton("Estimate (offline)")
        self.estimate_button.clicked.connect(self.estimate)
        self.estimate_text = QLabel("No estimate yet: nothing is sent before you see one.")
        self.estimate_text.setTextFormat(Qt.TextFormat.PlainText)  # paths and model ids are data
        self.estimate_text.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.run_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.run_button.setText("Run")
        self.run_button.setEnabled(False)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout()
        form.addRow("Provider", self.provider)
        form.addRow("Model name", self.model)
        form.addRow("API model id", self.api_model)
        form.addRow("Base URL", self.base_url)
        form.addRow("Key variable", self.api_key_env)
        form.addRow("Concurrency", self.concurrency)
        form.addRow("Max cost", self.max_cost)
        form.addRow("Samples per clip", self.samples)
        form.addRow("Mode", self.mode)
        form.addRow("Clips", self.shown_clips)
        form.addRow("", self.all_clips)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.estimate_button)
        layout.addWidget(self.estimate_text)
        layout.addWidget(self.buttons)
        self._estimated_for: object | None = None
        for edit in (self.model, self.api_model, self.base_url, self.api_key_env):
            edit.textChanged.connect(self._invalidate)
        self.provider.currentIndexChanged.connect(self._invalidate)
        self.shown_clips.toggled.connect(self._invalidate)
        self.concurrency.valueChanged.connect(self._invalidate)
        for box in (self.max_cost, self.samples):
            box.valueChanged.connect(self._invalidate)
        self.mode.currentIndexChanged.connect(self._invalidate)

    def options(self) -> object:
        """The run's options as the dialog stands (``AlmRunOptions``)."""
        from workbench.alm.runner import AlmRunOptions
        from workbench.project import clip_keys

        keys = None
        if self.shown_clips.isChecked():
            by_id = clip_keys(self.store, set(self.clip_ids))
            keys = [by_id[i] for i in self.clip_ids if i in by_id]
        text = {name: edit.text().strip() or None for name, edit in
                (("api_model", self.api_model), ("base_url", self.base_url), ("api_key_env", self.api_key_env))}
        return AlmRunOptions(model=self.model.text().strip(), provider=self.provider.currentText(),
                             clip_keys=keys, concurrency=self.concurrency.value(),
                             max_cost=self.max_cost.value() or None, samples=self.samples.value(), **text)

    def run_mode(self) -> str:
        """``sync`` or ``batch`` (the CLI's ``--mode``)."""
        return str(self.mode.currentData())

    def _invalidate(self, *_args: object) -> None:
        self._estimated_for = None
        self.run_button.setEnabled(False)

    def estimate(self) -> bool:
        """Show the offline estimate for the current settings; enables *Run* when it worked."""
        from workbench.alm.runner import dry_run

        options = self.options()
        if not getattr(options, "model", ""):
            self.estimate_text.setText("Give the model a name first (answers are filed under it).")
            return False
        try:
            report = dry_run(self.store, options)  # type: ignore[arg-type]
        except AglwError as exc:
            self.estimate_text.setText(str(exc))
            self._invalidate()
            return False
        batch = "" if report.cost_batch_usd is None else f" (batch {_usd(report.cost_batch_usd)})"
        lines = [f"{report.requests} request(s) for {report.clips} clip(s) × {report.samples} sample(s); "
                 f"{report.skipped_cached} already answered "
                 f"(not sent again).",
                 f"Audio {report.audio_seconds / 3600:.2f} h; about {report.input_tokens:,} input and "
                 f"{report.output_tokens:,} output tokens.",
                 f"Estimated cost {_usd(report.cost_usd)}{batch}.", *report.notes]
        self.estimate_text.setText("\n".join(lines))
        self._estimated_for = options
        self.run_button.setEnabled(True)
        return True


def start_alm_run(parent: QWidget, store: Store, jobs: JobsPanel, clip_ids: Callable[[], list[int]]) -> bool:
    """Open the dialog; on *Run* start the job in the panel. Returns whether a job started."""
    dialog = AlmRunDialog(store, clip_ids(), parent)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return False
    return jobs.start(alm_job(store, dialog.options(), dialog.run_mode()))
