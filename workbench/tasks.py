"""The one task protocol for long work: progress, a cancel token, per-item failures, a result.

Every long job (tagging, judging, fitting, fetching audio, importing, analysing a pool,
running an ALM) takes a :class:`TaskContext` and reports through it. The context is
Qt-free and thread-safe: a job runs in any thread, and whoever watches it — the CLI's rich
progress bar (``cli.context.run_task``) or the GUI jobs panel (a Qt bridge that re-emits
events as queued signals) — subscribes to the same object. One shape, two renderers, so
the CLI and the GUI can never disagree about what a job did.

Cancelling is cooperative: ``cancel()`` sets a token; the job calls ``item_done`` (or
``check_cancel``) after each stored item, which raises :class:`TaskCancelled` there. The
item in flight is finished and stored, the rest is left, and running the same job again
resumes, because every service skips what is already stored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["done", "cancelled", "failed"]


class TaskCancelled(Exception):
    """Raised inside a job at its next check after ``cancel()``."""


@dataclass(frozen=True)
class ItemOutcome:
    """One item (a clip, a request, a file) finished: stored (ok) or failed with a reason."""

    key: str
    ok: bool
    error: str = ""


@dataclass(frozen=True)
class TaskEvent:
    """What a listener receives. ``kind`` is 'progress', 'item' or 'note'."""

    kind: Literal["progress", "item", "note"]
    done: int
    total: int
    item: ItemOutcome | None = None
    message: str = ""


Listener = Callable[[TaskEvent], None]


class TaskContext:
    """What a running job reports through; safe to use from any thread.

    ``total`` 0 means unknown. Listeners are called in the job's thread; a GUI bridge
    forwards them as queued signals.
    """

    def __init__(self, listener: Listener | None = None) -> None:
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._listeners: list[Listener] = [listener] if listener else []
        self.done = 0
        self.total = 0
        self.failures: list[ItemOutcome] = []
        self.succeeded = 0

    # --- watching ---------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` with every later event (in the job's thread)."""
        with self._lock:
            self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        """Stop calling ``listener`` (absent listeners are ignored)."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _emit(self, event: TaskEvent) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(event)

    # --- cancel token -------------------------------------------------------------------
    def cancel(self) -> None:
        """Ask the job to stop at its next check (thread-safe)."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check_cancel(self) -> None:
        """Stop the job here when a cancel was requested."""
        if self._cancel.is_set():
            raise TaskCancelled()

    # --- reporting ----------------------------------------------------------------------
    def set_total(self, total: int) -> None:
        with self._lock:
            self.total = int(total)
            event = TaskEvent("progress", self.done, self.total)
        self._emit(event)

    def advance(self, units: int = 1) -> None:
        with self._lock:
            self.done += int(units)
            event = TaskEvent("progress", self.done, self.total)
        self._emit(event)

    def item_done(self, key: str, ok: bool = True, error: str = "", *, units: int = 1) -> None:
        """One item is finished (stored, or stored as a failure); then honour a pending cancel."""
        outcome = ItemOutcome(str(key), bool(ok), "" if ok else (error or "failed"))
        with self._lock:
            if ok:
                self.succeeded += 1
            else:
                self.failures.append(outcome)
            self.done += int(units)
            event = TaskEvent("item", self.done, self.total, item=outcome)
        self._emit(event)
        self.check_cancel()

    def note(self, message: str) -> None:
        """A diagnostic line (the CLI prints it on stderr, the GUI in the panel's status)."""
        self._emit(TaskEvent("note", self.done, self.total, message=message))


@dataclass
class TaskResult:
    """How a job ended: status, a one-line summary, counts, per-item failures, its value."""

    name: str
    status: Status
    message: str
    done: int
    total: int
    failures: list[ItemOutcome] = field(default_factory=list)
    value: Any = None
    # The exception a failed job raised, so a caller (the CLI) can report it in its own words.
    error: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True only when the job finished and no item failed."""
        return self.status == "done" and not self.failures


def run_task(name: str, job: Callable[[TaskContext], Any], context: TaskContext | None = None,
             *, summary: Callable[[Any], str] | None = None) -> TaskResult:
    """Run ``job(context)`` and classify the outcome; never raises for the job's own errors.

    ``summary`` turns the job's return value into the one-line message (default: ``str``
    of a string value, else "NAME: done").
    """
    # Imported here: the protocol itself must stay importable without the store.
    from workbench.errors import AglwError

    context = context or TaskContext()
    try:
        value = job(context)
    except TaskCancelled:
        return TaskResult(name, "cancelled",
                          f"{name}: cancelled after {context.done} of {context.total or '?'}; "
                          "everything finished so far is stored, run it again to resume",
                          context.done, context.total, list(context.failures))
    except AglwError as exc:
        return TaskResult(name, "failed", f"{name}: {exc}", context.done, context.total, list(context.failures),
                          error=exc)
    except Exception as exc:  # noqa: BLE001 - a job reports every failure instead of dying silently
        return TaskResult(name, "failed", f"{name}: {type(exc).__name__}: {exc}",
                          context.done, context.total, list(context.failures), error=exc)
    if summary is not None:
        message = summary(value)
    elif isinstance(value, str):
        message = value
    else:
        message = f"{name}: done"
    return TaskResult(name, "done", message, context.done, context.total, list(context.failures), value)
