"""Jobs panel: tagging, judging (dry-run cost first) and fitting, off the GUI thread.

A job is a plain function ``run(context) -> str`` executed in a worker thread; it reports
progress and per-clip outcomes through :class:`JobContext`, whose signals Qt queues to
the GUI thread, so the window stays responsive. Cancelling sets a flag the job checks
after every clip (the services call back once per clip): the clip in flight finishes
and is stored, the rest is left for later. Resuming starts the same job again; the
services skip what is already stored (tagging resumes its run, judging skips answered
requests), so a resumed job does only the remaining work.

``force_sync`` runs the job inline in the GUI thread (deterministic tests), with the
same signals.
"""

from __future__ import annotations

import threading
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
from workbench.attribution import service as attribution_service
from workbench.attribution.config import JudgesConfig
from workbench.curation import service as curation_service
from workbench.curation.model import FitParameters
from workbench.errors import AglwError
from workbench.tagging.ontology import Ontology


class JobCancelled(Exception):
    """Raised inside a job when the user asked it to stop."""


class JobContext(QObject):
    """What a running job uses to report; thread-safe (signals are queued across threads).

    Signals
    -------
    progressed(int, int)
        Units done, total (total 0 = unknown).
    clipFinished(str, bool, str)
        Clip key, ok, error message ('' when ok).
    """

    progressed = Signal(int, int)
    clipFinished = Signal(str, bool, str)

    def __init__(self) -> None:
        super().__init__()
        self.cancel_event = threading.Event()
        self.done = 0
        self.total = 0

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def check_cancel(self) -> None:
        """Stop the job here when a cancel was requested."""
        if self.cancel_event.is_set():
            raise JobCancelled()

    def set_total(self, total: int) -> None:
        self.total = int(total)
        self.progressed.emit(self.done, self.total)

    def advance(self, units: int = 1) -> None:
        self.done += int(units)
        self.progressed.emit(self.done, self.total)

    def clip_finished(self, key: str, ok: bool, error: str = "") -> None:
        """One clip is done (stored); then honour a pending cancel."""
        self.clipFinished.emit(key, ok, error)
        self.advance(1)
        self.check_cancel()


@dataclass(frozen=True)
class JobSpec:
    """A named, restartable job: ``run`` returns a one-line summary."""

    name: str
    run: Callable[[JobContext], str]


class _Worker(QThread):
    outcome = Signal(str, str)  # status (done | cancelled | failed), message

    def __init__(self, spec: JobSpec, context: JobContext) -> None:
        super().__init__()
        self.spec, self.context = spec, context

    def run(self) -> None:
        self.outcome.emit(*execute_job(self.spec, self.context))


def execute_job(spec: JobSpec, context: JobContext) -> tuple[str, str]:
    """Run ``spec`` and classify the outcome as (status, message)."""
    try:
        message = spec.run(context)
    except JobCancelled:
        return "cancelled", f"{spec.name}: cancelled after {context.done} of {context.total or '?'}; resume to finish"
    except AglwError as exc:
        return "failed", f"{spec.name}: {exc}"
    except Exception as exc:  # noqa: BLE001 - a job reports every failure instead of dying silently
        return "failed", f"{spec.name}: {type(exc).__name__}: {exc}"
    return "done", message


class JobsPanel(QWidget):
    """Start, watch, cancel and resume one job at a time, with errors per clip.

    Signals
    -------
    finished(str, str)
        Status (done | cancelled | failed) and message of the job that ended.
    clipFinished(str, bool, str)
        A clip of the running job is done: key, ok, error.
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
        self.context: JobContext | None = None
        self._worker: _Worker | None = None
        self._starters: list[QPushButton] = []

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
        self.context = JobContext()
        self.context.progressed.connect(self._progressed)
        self.context.clipFinished.connect(self._clip_finished)
        self.title.setText(f"Running: {spec.name}")
        self.status.setText("")
        self.errors.setRowCount(0)
        self.bar.setRange(0, 0)
        self._set_busy(True)
        if self.force_sync:
            self._ended(*execute_job(spec, self.context))
            return True
        self._worker = _Worker(spec, self.context)
        self._worker.outcome.connect(self._ended)
        self._worker.start()
        return True

    def cancel(self) -> None:
        """Ask the running job to stop after the clip in flight."""
        if self.context is not None and self.running:
            self.context.cancel_event.set()
            self.status.setText("cancelling after the clip in flight…")

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
        """Cancel the running job and join its thread (closing the window)."""
        self.cancel()
        self.wait()

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

    def _ended(self, status: str, message: str) -> None:
        spec = self.current
        self.current = None
        self.last_status = status
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
        self.finished.emit(status, message)


def confirm(parent: QWidget, title: str, text: str) -> bool:
    """Ask before spending money or overwriting; the text is shown as plain text."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, QMessageBox.StandardButton.Ok | QMessageBox.StandardButton.Cancel, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    return box.exec() == QMessageBox.StandardButton.Ok


# --------------------------------------------------------------------------- the jobs


def fit_job(store: Store, params: FitParameters, *, alm_model: str | None = None, created_by: int | None = None) -> JobSpec:
    """Fit and store a curation run."""

    def run(context: JobContext) -> str:
        context.set_total(1)
        result = curation_service.fit(store, params, alm_model=alm_model, created_by=created_by)
        context.advance(1)
        summary = result.summary
        return (f"stored curation run {result.run_id}: {summary['n_candidates']} candidates of "
                f"{summary['n_clips']} clips at θ = {summary['theta_used']:.4g}")

    return JobSpec("fit curation model", run)


def _last_failure(store: Store, judge: str, clip_key: str) -> str:
    from workbench.project import last_judge_failure

    return f"{judge}: {last_judge_failure(store, judge, clip_key) or 'failed'}"


def judge_job(store: Store, config: JudgesConfig, *, judge_names: list[str] | None = None,
              alm_model: str | None = None, clip_keys: list[str] | None = None, base_url: str | None = None,
              names: Ontology | None = None, concurrency: int = 1) -> JobSpec:
    """Judge the clips in sync mode; a rerun sends only what is not answered yet."""

    def run(context: JobContext) -> str:
        plan = attribution_service.dry_run(store, config, judge_names=judge_names, alm_model=alm_model,
                                           clip_keys=clip_keys, base_url=base_url, names=names, count_tokens=False)
        context.set_total(len(plan.clips))

        def clip_done(judge: str, key: str, ok: bool) -> None:
            context.clip_finished(key, ok, "" if ok else _last_failure(store, judge, key))

        report = attribution_service.run_judges(
            store, config, judge_names=judge_names, alm_model=alm_model, clip_keys=clip_keys, base_url=base_url,
            names=names, concurrency=concurrency, on_clip_done=clip_done,
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
    report = attribution_service.dry_run(store, config, judge_names=judge_names, alm_model=alm_model,
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
    return "no price configured" if value is None else f"${value:,.4f}"


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

    def run(context: JobContext) -> str:
        from workbench.tagging.service import tag_clips

        checkpoint, classes = (load_model or default_load)()
        summary = tag_clips(
            store, checkpoint, classes, device=device, workers=workers, on_start=context.set_total,
            progress=context.advance, should_cancel=lambda: context.cancelled,
        )
        for failure in summary.failures:
            context.clipFinished.emit(failure.key, False, failure.error)
        if context.cancelled:
            raise JobCancelled()
        return (f"tagger run {summary.run_id}: {summary.n_tagged} tagged, {summary.n_skipped} done before, "
                f"{len(summary.failures)} failed")

    return JobSpec(f"tag clips ({model_name})", run)
