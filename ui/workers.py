"""Background work for the GUI: decode, spectrogram pyramid, direction view (house rule 3), and
any other read whose latest result alone counts (:class:`LatestResult`, e.g. the live leaderboard).

Jobs receive immutable requests and return immutable results; only the GUI thread touches
widgets. Each request carries a generation id: a result whose generation is not the
latest one asked for (the user moved on to another clip) is dropped. ``force_sync`` runs
jobs inline so tests are deterministic; the asynchronous path uses a private QThreadPool
that :meth:`AudioLoader.shutdown` cancels and joins.

The clip job itself (decode once, spectrogram first, then playback and direction) is Qt-free:
:func:`workbench.audio.clip_open.load_clip_audio`; :class:`AudioLoader` runs it on its pool,
wakes it when the spectrogram is on screen (:meth:`AudioLoader.resume`) and drops stale
generations.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QRunnable, QThreadPool, Signal

from workbench.audio.clip_open import AudioRequest, AudioResult, Cancelled, load_clip_audio

__all__ = ["AudioLoader", "AudioRequest", "AudioResult", "Cancelled", "LatestResult", "load_clip_audio"]


class _Bridge(QObject):
    finished = Signal(object)


class _AudioJob(QRunnable):
    def __init__(
        self, request: AudioRequest, cancelled: threading.Event, resume: threading.Event, bridge: _Bridge
    ) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self.request, self.cancelled, self.resume, self.bridge = request, cancelled, resume, bridge

    def _emit(self, result: AudioResult) -> None:
        if not self.cancelled.is_set():
            self.bridge.finished.emit(result)

    def run(self) -> None:
        try:
            result = load_clip_audio(self.request, self.cancelled, self._emit, self.resume)
        except Cancelled:
            return
        except Exception as exc:  # noqa: BLE001 - a worker must report, never kill the thread silently
            result = AudioResult(self.request.generation, self.request.clip_id, error=f"{type(exc).__name__}: {exc}")
        self._emit(result)


class AudioLoader(QObject):
    """Runs clip-audio jobs and delivers only the latest generation's result.

    Signals
    -------
    loaded(AudioResult)
        The result of the most recent request (stale ones are dropped).
    """

    loaded = Signal(object)

    def __init__(self, parent: QObject | None = None, *, force_sync: bool = False, max_threads: int = 1) -> None:
        super().__init__(parent)
        self.force_sync = force_sync
        self.generation = 0
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._bridge = _Bridge(self)
        self._bridge.finished.connect(self._deliver)
        self._cancel_flags: list[threading.Event] = []
        self._resume: dict[int, threading.Event] = {}
        self.dropped = 0

    def next_generation(self) -> int:
        """Start a new generation: every earlier job is cancelled and its result will be dropped."""
        self.cancel_all()
        self.generation += 1
        return self.generation

    def submit(self, request: AudioRequest) -> None:
        """Run ``request`` (inline when ``force_sync``)."""
        cancelled = threading.Event()
        if self.force_sync:
            try:
                self._deliver(load_clip_audio(request, cancelled, self._deliver))
            except Cancelled:
                pass
            return
        self._cancel_flags = [flag for flag in self._cancel_flags if not flag.is_set()]
        self._cancel_flags.append(cancelled)
        resume = self._resume.setdefault(request.generation, threading.Event())
        self._pool.start(_AudioJob(request, cancelled, resume, self._bridge))

    def resume(self, generation: int) -> None:
        """Let the job of ``generation`` go on after its spectrogram stage (it is on screen)."""
        flag = self._resume.pop(generation, None)
        if flag is not None:
            flag.set()

    def deliver_ready(self) -> None:
        """Deliver at once the results the worker has already sent (queued for this thread).

        Lets a cached spectrogram reach the screen in the same paint as the rest of the
        window instead of one event-loop round later.
        """
        QCoreApplication.sendPostedEvents(self, QEvent.Type.MetaCall)

    def _deliver(self, result: AudioResult) -> None:
        if result.generation != self.generation:
            self.dropped += 1
            return
        self.loaded.emit(result)

    def cancel_all(self) -> None:
        for flag in self._cancel_flags:
            flag.set()
        self._cancel_flags = []
        for flag in self._resume.values():
            flag.set()  # a waiting job wakes up and sees it was cancelled
        self._resume = {}
        self._pool.clear()

    @property
    def busy(self) -> bool:
        return self._pool.activeThreadCount() > 0

    def shutdown(self) -> None:
        """Cancel every job and join the worker threads."""
        self.cancel_all()
        self._pool.waitForDone(-1)


class _Call(QRunnable):
    """One read of :class:`LatestResult` on its pool thread."""

    def __init__(self, generation: int, fn: Callable[[], Any], bridge: _Bridge) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self.generation, self.fn, self.bridge = generation, fn, bridge

    def run(self) -> None:
        outcome = _call(self.generation, self.fn)
        try:
            self.bridge.finished.emit(outcome)
        except RuntimeError:  # the receiver was deleted while this ran: nobody waits for it
            pass


def _call(generation: int, fn: Callable[[], Any]) -> tuple[int, bool, Any]:
    try:
        return generation, True, fn()
    except Exception as exc:  # noqa: BLE001 - a worker must report, never kill the thread silently
        return generation, False, f"{type(exc).__name__}: {exc}"


class LatestResult(QObject):
    """Runs a read off the GUI thread and delivers only the latest one's result.

    The :class:`AudioLoader` rule for any read (a view's table, a count): each :meth:`submit`
    starts a generation, and a result whose generation is not the latest is dropped, so a slow
    read never overwrites what a newer one (or a synchronous re-read, :meth:`invalidate`) showed.

    Signals
    -------
    delivered(object)
        The latest read's return value (GUI thread).
    failed(str)
        The latest read raised; the message names the exception.
    """

    delivered = Signal(object)
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None, *, force_sync: bool = False) -> None:
        super().__init__(parent)
        self.force_sync = force_sync
        self.generation = 0
        self.dropped = 0
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(1)
        self._bridge = _Bridge(self)
        self._bridge.finished.connect(self._deliver)

    def invalidate(self) -> int:
        """Start a new generation without a read: every result still under way is dropped."""
        self.generation += 1
        return self.generation

    def submit(self, fn: Callable[[], Any]) -> int:
        """Run ``fn()`` on the pool thread (inline when ``force_sync``); returns its generation."""
        generation = self.invalidate()
        if self.force_sync:
            self._deliver(_call(generation, fn))
            return generation
        self._pool.clear()  # a read queued behind the running one would only be dropped
        self._pool.start(_Call(generation, fn, self._bridge))
        return generation

    def _deliver(self, outcome: tuple[int, bool, Any]) -> None:
        generation, ok, value = outcome
        if generation != self.generation:
            self.dropped += 1
            return
        (self.delivered if ok else self.failed).emit(value)

    @property
    def busy(self) -> bool:
        return self._pool.activeThreadCount() > 0

    def shutdown(self) -> None:
        """Drop what is under way and join the pool thread."""
        self.invalidate()
        self._pool.clear()
        self._pool.waitForDone(-1)
