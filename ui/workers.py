"""Background work for the GUI: decode, spectrogram pyramid, direction view (house rule 3), and
any other read whose latest result alone counts (:class:`LatestResult`, e.g. the live leaderboard).

Jobs receive immutable requests and return immutable results; only the GUI thread touches
widgets. Each request carries a generation id: a result whose generation is not the
latest one asked for (the user moved on to another clip) is dropped. ``force_sync`` runs
jobs inline so tests are deterministic; the asynchronous path uses a private QThreadPool
that :meth:`AudioLoader.shutdown` cancels and joins.

A job decodes the file once: the blocks fill the playback buffer and feed the spectrogram
pyramid and the direction analysis as they arrive. The spectrogram is handed over as soon as
it is ready (stage ``spectrogram``); a cached one before the decode starts. The job then waits
until the GUI says it is on screen (:meth:`AudioLoader.resume`, at most
:data:`RESUME_TIMEOUT_S`), so a decode does not compete with that paint for the CPU and the
rest never arrives before it. The direction analysis and the cache write start only then:
until the spectrogram is painted, the decoder and the spectrogram have the CPU to themselves.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QRunnable, QThreadPool, Signal

from workbench.audio.direction.view import (
    HEATMAP_BINS,
    DirectionImage,
    direction_image,
    no_direction_image,
    unavailable_note,
)
from workbench.audio.spectrogram import SpectrogramParams, SpectrogramPyramid, WaveformEnvelope
from workbench.errors import AglwError

if TYPE_CHECKING:
    from workbench.audio.opening import OpenedAudio


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
    spacing_m: float | None = None


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


RESUME_TIMEOUT_S = 0.5
_DIGEST_MEMO_SIZE = 4096
_digest_memo: OrderedDict[tuple[str, int, int], str] = OrderedDict()
_digest_lock = threading.Lock()


def _stat_key(path: Path) -> tuple[str, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (os.path.abspath(path), stat.st_size, stat.st_mtime_ns)


def _index_file(key: tuple[str, int, int]) -> Path:
    from workbench.config import cache_dir

    name = hashlib.sha256("\0".join(map(str, key)).encode("utf-8", "surrogateescape")).hexdigest()[:40]
    return cache_dir() / "digests" / name


def _remember(key: tuple[str, int, int], digest: str) -> None:
    with _digest_lock:
        _digest_memo[key] = digest
        _digest_memo.move_to_end(key)
        while len(_digest_memo) > _DIGEST_MEMO_SIZE:
            _digest_memo.popitem(last=False)


def known_digest(path: Path) -> str | None:
    """The file's content hash if it was hashed before with the same path, size and mtime.

    Looked up in this session's memo, then in the digest index under the user cache (one small
    file per path, size and mtime), so a clip opened in an earlier session reopens from the
    pyramid cache without hashing the whole file again (a 180 s 4-channel WAV is ~140 MB).
    None when unknown: the file is new here, or changed.
    """
    key = _stat_key(path)
    if key is None:
        return None
    with _digest_lock:
        digest = _digest_memo.get(key)
        if digest is not None:
            _digest_memo.move_to_end(key)
            return digest
    try:
        digest = _index_file(key).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        return None  # damaged: hash again
    _remember(key, digest)
    return digest


def file_digest(path: Path) -> str:
    """The file's content hash (the pyramid cache key), hashed once per (path, size, mtime).

    A changed file has another size or mtime and is hashed again. The digest is remembered
    for this session and in the digest index (see :func:`known_digest`).
    """
    from workbench.audio.loader import content_hash

    known = known_digest(path)
    if known is not None:
        return known
    key = _stat_key(path)
    digest = content_hash(path)  # raises the loader's clear error for a missing file
    if key is not None:
        _remember(key, digest)
        index = _index_file(key)
        try:
            index.parent.mkdir(parents=True, exist_ok=True)
            staging = index.with_name(f".{index.name}.{os.getpid()}.{threading.get_ident()}")
            staging.write_text(digest, encoding="ascii")
            os.replace(staging, index)
        except OSError:
            pass  # a read-only cache: the session memo still has it
    return digest


def _direction_view(request: AudioRequest, opened: OpenedAudio) -> DirectionImage:
    """The direction view of an opened clip, or a note saying why there is none."""
    if opened.direction is None:
        n_channels = int(opened.audio.samples.shape[1])
        note = unavailable_note(request.layout, n_channels, request.spacing_m)
        return no_direction_image(note or f"No direction view: {opened.direction_note}")
    try:
        return direction_image(opened.direction)
    except (AglwError, ValueError) as exc:
        # The clip still plays; the direction view says what went wrong.
        return no_direction_image(f"No direction view: {exc}")


def load_clip_audio(
    request: AudioRequest,
    cancelled: threading.Event,
    partial: Callable[[AudioResult], None] | None = None,
    resume: threading.Event | None = None,
) -> AudioResult:
    """Compute what the player shows for one clip; raises Cancelled when asked to stop.

    The file is decoded once (:func:`workbench.audio.opening.open_audio`): its blocks fill
    the playback buffer and feed the spectrogram pyramid and the direction analysis as they
    arrive. The pyramid is handed to ``partial`` as soon as it is ready — at once when it is
    in the disk cache, else right after the last block — before the direction analysis has
    started. With ``resume``, the job then waits for it to be set (the spectrogram is on
    screen; at most :data:`RESUME_TIMEOUT_S`, or until cancelled) before it goes on: neither
    a cached clip's decode nor the direction analysis and the cache write compete with that
    paint, and the rest is never delivered before it.
    """
    from workbench.audio.opening import open_audio
    from workbench.audio.pyramid_cache import cached_pyramids, store_pyramids

    def checkpoint() -> None:
        if cancelled.is_set():
            raise Cancelled()

    try:
        checkpoint()
        digest = request.content_hash or known_digest(request.path)
        cached = cached_pyramids(digest, request.params) if digest is not None else None
        # digest None: never opened here with this size and mtime, so almost surely not cached.
        # The file is hashed for the cache entry once the spectrogram is on screen, not before.

        def spectrogram_ready(pyramid: SpectrogramPyramid, envelope: WaveformEnvelope) -> None:
            checkpoint()
            if partial is not None:
                partial(AudioResult(request.generation, request.clip_id, pyramid=pyramid, envelope=envelope,
                                    stage="spectrogram"))
            if partial is not None and resume is not None:
                # Until the spectrogram is on screen: a cached one's decode has not started yet
                # and waits; a computed one's direction analysis has not started either
                # (direction_after_spectrogram), nor has its cache write (or the hash for it).
                resume.wait(RESUME_TIMEOUT_S)
            if cached is None:  # kept even when the clip was left meanwhile: it was computed
                try:
                    key = digest if digest is not None else file_digest(request.path)
                    store_pyramids(key, pyramid, envelope, write_behind=True)
                except AglwError:
                    pass  # the file went away after it was read: nothing to cache
            checkpoint()

        opened = open_audio(
            request.path, layout=request.layout, spacing_m=request.spacing_m, params=request.params,
            cached=cached, heatmap_bins=HEATMAP_BINS, spectrogram_first=True, on_spectrogram=spectrogram_ready,
            direction_after_spectrogram=True, check_cancel=checkpoint,
        )
        checkpoint()
        direction = _direction_view(request, opened)
        checkpoint()
    except AglwError as exc:
        return AudioResult(request.generation, request.clip_id, error=str(exc))
    audio = opened.audio
    return AudioResult(
        request.generation, request.clip_id, audio.samples, audio.sample_rate, opened.pyramid, opened.envelope,
        direction,
    )


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
