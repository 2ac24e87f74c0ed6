"""Jobs panel: tagging, judging (dry-run cost first) and fitting, off the GUI thread.

A job is a plain function ``run(task) -> str`` executed in a worker thread. It reports
through the one Qt-free task protocol (:class:`workbench.tasks.TaskContext`), the same
object the CLI renders as a progress bar; a :class:`TaskBridge` re-emits its events as Qt
signals, which Qt queues to the GUI thread, so the window stays responsive. Cancelling
sets the context's token; the services check it after every stored item: the item in
flight finishes and is stored, the rest is left for later. Resuming starts the same job
again; the services skip what is already stored (tagging resumes its run, judging skips
answered requests), so a resumed job does only the remaining work.

``force_sync`` runs the job inline in the GUI thread (deterministic tests), with the
same signals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


from storage import Store
from workbench.attribution.config import JudgesConfig
from workbench.curation import runs as curation_runs
from workbench.curation import service as curation_service
from workbench.curation.model import FitParameters
from workbench.formatting import usd
from workbench.tagging.ontology import Ontology
from workbench.tasks import TaskContext, TaskEvent, TaskResult, run_task


class TaskBridge(QObject):
    """Re-emits a :class:`TaskContext`'s events as Qt signals (queued when the job runs in a worker).

    Signals
    -------
    progressed(int, int)
        Units done, total (total 0 = unknown).
    itemFinished(str, bool, str)
        Item key (a clip key for clip jobs), ok, error message ('' when ok).
    noted(str)
        A diagnostic line from the job.
    """

    progressed = Signal(int, int)
    itemFinished = Signal(str, bool, str)
    noted = Signal(str)

    def __init__(self, context: TaskContext) -> None:
        super().__init__()
        self.context = context
        context.subscribe(self._forward)

    def _forward(self, event: TaskEvent) -> None:
        # Called in the job's thread; the signals cross to the GUI thread as queued events.
        if event.kind == "note":
            self.noted.emit(event.message)
            return
        if event.kind == "item" and event.item is not None:
            self.itemFinished.emit(event.item.key, event.item.ok, event.item.error)
        self.progressed.emit(event.done, event.total)

    def detach(self) -> None:
        """Stop forwarding (the job is over)."""
        self.context.unsubscribe(self._forward)


@dataclass(frozen=True)
class JobSpec:
    """A named, restartable job: ``run`` reports through the task and returns a one-line summary.

    ``summary``, when given, turns what ``run`` returns (then any value: the service's result)
    into that line, so the caller's ``on_end`` gets the value itself in ``TaskResult.value``.
    ``on_end`` is called in the GUI thread with the result, before the panel's ``finished``
    signal, whatever the job's status; not when the window closes under a running job.
    """

    name: str
    run: Callable[[TaskContext], Any]
    summary: Callable[[Any], str] | None = None
    on_end: Callable[[TaskResult], None] | None = None


class _Worker(QThread):
    def __init__(self, spec: JobSpec, context: TaskContext) -> None:
        super().__init__()
        self.spec, self.context = spec, context
        self.result: TaskResult | None = None

    def run(self) -> None:
        # Read by the GUI thread after `finished` (QThread's own signal), never while running.
        self.result = run_task(self.spec.name, self.spec.run, self.context, summary=self.spec.summary)


class JobsPanel(QWidget):
    """Start, watch, cancel and resume one job at a time, with errors per clip.

    Signals
    -------
    finished(str, str)
        Status (done | cancelled | failed) and message of the job that ended.
    clipFinished(str, bool, str)
        An item (a clip) of the running job is done: key, ok, error.
    """

    finished = Signal(str, str)
    clipFinished = Signal(str, bool, str)

    def __init__(self, store: Store, *, force_sync: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.force_sync = force_sync
        self.current: JobSpec | None = None
        self.last: JobSpec | None = None
        self.last_status: str | None = None
        self.last_result: TaskResult | None = None
        self.context: TaskContext | None = None
        self._bridge: TaskBridge | None = None
        self._worker: _Worker | None = None
        self._starters: list[QPushButton] = []
        self._closing = False

        self.title = QLabel("No job running")
        self.bar = QProgressBar()
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.resume_button = QPushButton("Resume")
        self.resume_button.setEnabled(False)
        self.resume_button.clicked.connect(self.resume)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.errors = QTableWidget(0, 2)
        self.errors.setHorizontalHeaderLabels(["Clip", "Error"])
        self.errors.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.errors.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.errors.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.buttons = QHBoxLayout()
        controls = QHBoxLayout()
        controls.addWidget(self.bar, 1)
        controls.addWidget(self.cancel_button)
        controls.addWidget(self.resume_button)
        layout = QVBoxLayout(self)
        layout.addLayout(self.buttons)
        layout.addWidget(self.title)
        layout.addLayout(controls)
        layout.addWidget(self.status)
        layout.addWidget(QLabel("Errors per clip"))
        layout.addWidget(self.errors, 1)

    # ------------------------------------------------------------------ starting

    def add_starter(self, text: str, slot: Callable[[], None]) -> QPushButton:
        """A button that starts a job (disabled while one runs)."""
        button = QPushButton(text)
        button.clicked.connect(lambda _=False: slot())
        self.buttons.addWidget(button)
        self._starters.append(button)
        return button

    def track_starter(self, button: QPushButton) -> None:
        """Disable a button of another view (e.g. "Fit and store run") while a job runs."""
        self._starters.append(button)
        button.setEnabled(not self.running)

    @property
    def running(self) -> bool:
        return self.current is not None

    def start(self, spec: JobSpec) -> bool:
        """Start ``spec`` unless a job is running; returns whether it started."""
        if self.running:
            self.status.setText(f"{self.current.name} is still running; cancel it or wait")  # type: ignore[union-attr]
            return False
        self.current = spec
        self.last = spec
        self.context = TaskContext()
        if self._bridge is not None:
            self._bridge.detach()
            self._bridge.deleteLater()
        self._bridge = TaskBridge(self.context)
        self._bridge.progressed.connect(self._progressed)
        self._bridge.itemFinished.connect(self._clip_finished)
        self._bridge.noted.connect(self.status.setText)
        self.title.setText(f"Running: {spec.name}")
        self.status.setText("")
        self.errors.setRowCount(0)
        self.bar.setRange(0, 0)
        self._set_busy(True)
        if self.force_sync:
            self._ended(run_task(spec.name, spec.run, self.context, summary=spec.summary))
            return True
        self._worker = _Worker(spec, self.context)
        # QThread.finished is emitted in the worker after run() returns and queued to this
        # (GUI) thread behind every progress signal the job sent, so the panel sees them first.
        self._worker.finished.connect(self._worker_finished)
        self._worker.start()
        return True

    def cancel(self) -> None:
        """Ask the running job to stop after the clip in flight."""
        if self.context is not None and self.running:
            self.context.cancel()
            self.status.setText("cancelling after the item in flight…")

    def resume(self) -> bool:
        """Start the last job again; the services skip the work already stored."""
        if self.last is None:
            return False
        return self.start(self.last)

    def wait(self, timeout_ms: int = -1) -> bool:
        """Block until the worker thread ends (tests, shutdown); True when no worker is left."""
        if self._worker is None:
            return True
        return self._worker.wait(timeout_ms if timeout_ms >= 0 else 2**31 - 1)

    def shutdown(self) -> None:
        """Cancel the running job, join its thread and record how it ended (closing the window).

        The end is recorded here, not by the queued signal that would come after the window
        is gone; nobody is notified (no ``on_end``, no ``finished``): there is nothing left to
        show, and the window's views must not reload from a store about to be closed.
        """
        self._closing = True
        self.cancel()
        self.wait()
        self._worker_finished()

    # ------------------------------------------------------------------ reports

    def _set_busy(self, busy: bool) -> None:
        self.cancel_button.setEnabled(busy)
        self.resume_button.setEnabled(not busy and self.last_status in ("cancelled", "failed"))
        for button in self._starters:
            button.setEnabled(not busy)

    def _progressed(self, done: int, total: int) -> None:
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))

    def _clip_finished(self, key: str, ok: bool, error: str) -> None:
        self.clipFinished.emit(key, ok, error)
        if ok:
            return
        row = self.errors.rowCount()
        self.errors.insertRow(row)
        self.errors.setItem(row, 0, QTableWidgetItem(key))
        self.errors.setItem(row, 1, QTableWidgetItem(error))

    def error_rows(self) -> list[tuple[str, str]]:
        """The (clip key, error) rows shown."""
        return [(self.errors.item(r, 0).text(), self.errors.item(r, 1).text()) for r in range(self.errors.rowCount())]

    def _worker_finished(self) -> None:
        worker = self._worker
        # None: already handled (shutdown records the end before the queued signal arrives).
        if worker is None or worker.result is None:
            return
        self._ended(worker.result)

    def _ended(self, result: TaskResult) -> None:
        spec = self.current
        status, message = result.status, result.message
        self.current = None
        self.last_status = status
        self.last_result = result
        if self._bridge is not None:
            self._bridge.detach()
        if self._worker is not None:
            self._worker.wait()
            self._worker.deleteLater()
            self._worker = None
        if self.bar.maximum() == 0:
            self.bar.setRange(0, 1)
            self.bar.setValue(1 if status == "done" else 0)
        self.title.setText(f"{spec.name if spec else 'job'}: {status}")
        self.status.setText(message)
        self._set_busy(False)
        if self._closing:
            return
        if spec is not None and spec.on_end is not None:
            spec.on_end(result)
        self.finished.emit(status, message)


def confirm(parent: QWidget, title: str, text: str) -> bool:
    """Ask before spending money or overwriting; the text is shown as plain text."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.Ok | QMessageBox.StandardButton.Cancel, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    return box.exec() == QMessageBox.StandardButton.Ok


# --------------------------------------------------------------------------- the jobs


def fit_job(store: Store, params: FitParameters, *, alm_model: str | None = None, created_by: int | None = None,
            on_end: Callable[[TaskResult], None] | None = None) -> JobSpec:
    """Fit and store a curation run; the result's value is the :class:`FitResult`."""

    def run(task: TaskContext) -> curation_runs.FitResult:
        from workbench.project import category_names

        # Named as `aglw fit` names them, so a run stored from here shows its category names too.
        names = category_names(store) if params.rollup == "leaf" else None
        return curation_service.fit(store, params, alm_model=alm_model, created_by=created_by,
                                    category_names=names, task=task)

    def summary(result: curation_runs.FitResult) -> str:
        numbers = result.summary
        return (f"stored curation run {result.run_id}: {numbers['n_candidates']} candidates of "
                f"{numbers['n_clips']} clips at θ = {numbers['theta_used']:.4g}")

    return JobSpec("fit curation model", run, summary, on_end)


def judge_job(store: Store, config: JudgesConfig, *, judge_names: list[str] | None = None,
              alm_model: str | None = None, clip_keys: list[str] | None = None, base_url: str | None = None,
              names: Ontology | None = None, concurrency: int = 1) -> JobSpec:
    """Judge the clips in sync mode; a rerun sends only what is not answered yet."""

    def run(task: TaskContext) -> str:
        from workbench.attribution.runner import run_judges

        report = run_judges(
            store, config, judge_names=judge_names, alm_model=alm_model, clip_keys=clip_keys, base_url=base_url,
            names=names, concurrency=concurrency, task=task,
        )
        ok = sum(j.ok for j in report.judges)
        failed = sum(j.failed for j in report.judges)
        before = sum(j.answered_before for j in report.judges)
        return f"judging done: {ok} answered, {failed} failed, {before} answered before"

    return JobSpec("judge clips", run)


def judging_cost_text(store: Store, config: JudgesConfig, *, judge_names: list[str] | None = None,
                      alm_model: str | None = None, clip_keys: list[str] | None = None,
                      base_url: str | None = None, names: Ontology | None = None) -> str:
    """The dry-run figures shown before judging starts (nothing is sent)."""
    from workbench.attribution.estimate import dry_run

    report = dry_run(store, config, judge_names=judge_names, alm_model=alm_model,
                     clip_keys=clip_keys, base_url=base_url, names=names)
    totals = report.totals()
    lines = [f"Dry run ({report.method}), reference ALM {report.alm_model}:"]
    for judge, entry in sorted(totals["per_judge"].items()):
        lines.append(f"  {judge}: {entry['requests']} requests, {entry['input_tokens']} input + "
                     f"{entry['output_tokens']} output tokens, {_usd(entry['cost_sync_usd'])}")
    total = totals["total"]
    lines.append(f"Total: {total['requests']} requests, {_usd(total['cost_sync_usd'])} "
                 f"(batch: {_usd(total['cost_batch_usd'])})")
    lines.append(f"Already answered (not sent again): {report.answered_before}; skipped clips: {len(report.skipped)}")
    lines.extend(f"Note: {a}" for a in report.assumptions)
    return "\n".join(lines)


def _usd(value: float | None) -> str:
    return usd(value, "no price configured")


def tag_job(store: Store, model_name: str = "mn10_as", *, device: str = "cpu", workers: int = 2,
            load_model: Callable[[], tuple[Any, Sequence[Any]]] | None = None) -> JobSpec:
    """Tag every clip with an EfficientAT model; a rerun resumes the same tagger run.

    ``load_model`` returns (checkpoint, classes); by default the named official
    checkpoint and the configured ontology (downloaded on first use).
    """

    def default_load() -> tuple[Any, Sequence[Any]]:
        from workbench.tagging.assets import load_default_ontology, load_named_checkpoint

        checkpoint = load_named_checkpoint(model_name, device=device, show_progress=False)
        return checkpoint, load_default_ontology(show_progress=False).classes

    def run(task: TaskContext) -> str:
        from workbench.tagging.service import tag_clips

        checkpoint, classes = (load_model or default_load)()
        summary = tag_clips(store, checkpoint, classes, device=device, workers=workers, task=task)
        return (f"tagger run {summary.run_id}: {summary.n_tagged} tagged, {summary.n_skipped} done before, "
                f"{len(summary.failures)} failed")

    return JobSpec(f"tag clips ({model_name})", run)
