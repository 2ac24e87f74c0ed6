"""Background work for the GUI: decode, spectrogram pyramid, direction view (house rule 3).

Jobs receive immutable requests and return immutable results; only the GUI thread touches
widgets. Each request carries a generation id: a result whose generation is not the
latest one asked for (the user moved on to another clip) is dropped. ``force_sync`` runs
jobs inline so tests are deterministic; the asynchronous path uses a private QThreadPool
that :meth:`AudioLoader.shutdown` cancels and joins.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from workbench.audio.spectrogram import SpectrogramParams, SpectrogramPyramid, WaveformEnvelope
from workbench.errors import AglwError
from workbench.review import DirectionImage, direction_image


class Cancelled(Exception):
    """The job was cancelled before it finished."""


@dataclass(frozen=True)
class AudioRequest:
    generation: int
    clip_id: int
    path: Path
    layout: str | None
    params: SpectrogramParams
    content_hash: str | None = None


@dataclass(frozen=True)
class AudioResult:
    """A job's result; ``stage`` is ``spectrogram`` (pyramids only, shown at once) or ``complete``."""

    generation: int
    clip_id: int
    samples: Any = None
    sample_rate: int = 0
    pyramid: SpectrogramPyramid | None = None
    envelope: WaveformEnvelope | None = None
    direction: DirectionImage | None = None
    error: str | None = None
    stage: str = "complete"


def load_clip_audio(
    request: AudioRequest, cancelled: threading.Event, partial: Callable[[AudioResult], None] | None = None
) -> AudioResult:
    """Compute what the player shows for one clip; raises Cancelled when asked to stop.

    The spectrogram pyramid is read from (or written to) the disk cache straight from the
    file, and handed to ``partial`` before the slower decode for playback and direction
    analysis, so a cached clip paints at once.
    """
    from workbench.audio.loader import load_audio
    from workbench.audio.spectrogram import compute_pyramids

    def checkpoint() -> None:
        if cancelled.is_set():
            raise Cancelled()

    try:
        checkpoint()
        pyramid, envelope = compute_pyramids(request.path, request.params, content_hash=request.content_hash)
        checkpoint()
        if partial is not None:
            partial(AudioResult(request.generation, request.clip_id, pyramid=pyramid, envelope=envelope,
                                stage="spectrogram"))
        audio = load_audio(request.path)
        checkpoint()
        try:
            direction = direction_image(request.path, request.layout, audio.samples.shape[1])
        except AglwError as exc:
            direction = DirectionImage("none", None, 0.0, 0.0, (0.0, 1.0), "", f"No direction view: {exc}")
        checkpoint()
    except AglwError as exc:
        return AudioResult(request.generation, request.clip_id, error=str(exc))
    return AudioResult(
        request.generation, request.clip_id, audio.samples, audio.sample_rate, pyramid, envelope, direction
    )


class _Bridge(QObject):
    finished = Signal(object)


class _AudioJob(QRunnable):
    def __init__(self, request: AudioRequest, cancelled: threading.Event, bridge: _Bridge) -> None:
        super().__init__()
        self.setAutoDelete(True)
        self.request, self.cancelled, self.bridge = request, cancelled, bridge

    def _emit(self, result: AudioResult) -> None:
        if not self.cancelled.is_set():
            self.bridge.finished.emit(result)

    def run(self) -> None:
        try:
            result = load_clip_audio(self.request, self.cancelled, self._emit)
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
        self._pool.start(_AudioJob(request, cancelled, self._bridge))

    def _deliver(self, result: AudioResult) -> None:
        if result.generation != self.generation:
            self.dropped += 1
            return
        self.loaded.emit(result)

    def cancel_all(self) -> None:
        for flag in self._cancel_flags:
            flag.set()
        self._cancel_flags = []
        self._pool.clear()

    @property
    def busy(self) -> bool:
        return self._pool.activeThreadCount() > 0

    def shutdown(self) -> None:
        """Cancel every job and join the worker threads."""
        self.cancel_all()
        self._pool.waitForDone(-1)
