"""Opening a clip: one decode feeds the playback buffer, the spectrogram pyramid and the
direction analysis, block by block as the blocks arrive.

The decoder runs on a helper thread and writes into the buffer that becomes the playback
samples (:class:`~workbench.audio.streaming.DecodeStream`); the calling thread turns each block
into spectrogram columns, and the direction analysis takes the same blocks on a third thread.
Nothing waits for the whole file before it starts, and the file is read once. Pure (numpy,
scipy, soundfile): no database, no Qt; the review window's job
(:func:`workbench.audio.clip_open.load_clip_audio`) calls :func:`open_audio`.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workbench.audio.direction.analysis import DirectionAnalysis, DirectionAnalyzer
from workbench.audio.loader import AudioData
from workbench.audio.streaming import DecodeStream
from workbench.audio.spectrogram import PyramidBuilder, SpectrogramParams, SpectrogramPyramid, WaveformEnvelope, prefetched
from workbench.errors import InputError

# Frames per decoded block (~3 s at 44.1 kHz): small enough that the spectrogram and the
# direction analysis start early, large enough that per-block overhead is negligible.
OPEN_BLOCK_FRAMES = 1 << 17
# How much lower the direction thread's scheduling priority is when the spectrogram comes first
# (Linux nice steps: +10 gets ~10 % of a core while the decoder and the spectrogram want both).
_BACKGROUND_NICE = 10
# Blocks the decoder may be ahead of the spectrogram (see open_audio).
_DECODE_AHEAD_BLOCKS = 16
_END = object()

Pyramids = tuple[SpectrogramPyramid, WaveformEnvelope]


@dataclass(frozen=True)
class OpenedAudio:
    """Everything the player shows for one clip, from one decode.

    Attributes
    ----------
    audio
        The decoded samples (the playback buffer), as :func:`~workbench.audio.loader.load_audio`
        gives them.
    pyramid, envelope
        Spectrogram pyramid and waveform envelope (the cached ones when they were given).
    direction
        The direction analysis, or None with ``direction_note`` saying why (mono, a layout the
        file cannot have, AB without spacing).
    computed_pyramids
        False when the pyramids came from the cache (nothing to store).
    timings
        Wall-clock seconds: ``decode`` (until the last block was read), ``pyramid`` and
        ``direction`` (time spent in each; they overlap the decode), ``total``, and
        ``parallel`` (1.0 when the direction analysis ran on its own thread).
    """

    audio: AudioData
    pyramid: SpectrogramPyramid
    envelope: WaveformEnvelope
    direction: DirectionAnalysis | None
    direction_note: str
    computed_pyramids: bool
    timings: dict[str, float] = field(default_factory=dict)


class _DirectionThread:
    """Runs a :class:`DirectionAnalyzer` on its own thread over blocks handed to :meth:`put`.

    With ``hold``, the thread starts only once :meth:`release` (or :meth:`close`) is called;
    the blocks put meanwhile wait in the queue. Not starting it before then also keeps its
    start-up (a hand-over of the GIL while the window's thread runs Python) out of the time
    before the decoder's first read.
    """

    def __init__(self, analyzer: DirectionAnalyzer, nice: int = 0, hold: bool = False) -> None:
        self.analyzer = analyzer
        self.nice = nice
        self.blocks: queue.SimpleQueue[object] = queue.SimpleQueue()
        self.result: DirectionAnalysis | None = None
        self.error: BaseException | None = None
        self.busy_s = 0.0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="aglw-open-direction", daemon=True)
        if not hold:
            self.thread.start()

    def _lower_priority(self) -> None:
        # Linux keeps a nice value per thread: this lowers this thread only. Elsewhere (or if
        # refused) the analysis simply runs at the normal priority.
        try:
            thread_id = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, thread_id, os.getpriority(os.PRIO_PROCESS, thread_id) + self.nice)
        except (AttributeError, OSError):
            pass

    def _run(self) -> None:
        if self.nice:
            self._lower_priority()
        try:
            while True:
                block = self.blocks.get()
                if block is _END or self.stopped.is_set():
                    break
                start = time.perf_counter()
                self.analyzer.push(block)  # type: ignore[arg-type]
                self.busy_s += time.perf_counter() - start
            if not self.stopped.is_set():
                start = time.perf_counter()
                self.result = self.analyzer.finish()
                self.busy_s += time.perf_counter() - start
        except BaseException as exc:  # noqa: BLE001 - handed to the opening thread
            self.error = exc

    def put(self, block: np.ndarray) -> None:
        self.blocks.put(block)

    def release(self) -> None:
        """Let a held analysis start."""
        if self.thread.ident is None:  # not started yet (only the opening thread calls this)
            self.thread.start()

    def close(self) -> DirectionAnalysis:
        """Wait for the analysis of everything put (re-raising its error)."""
        self.blocks.put(_END)
        self.release()
        self.thread.join()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    def abandon(self) -> None:
        """Stop without a result (the open was cancelled or failed); a held thread never starts."""
        self.stopped.set()
        self.blocks.put(_END)


def open_audio(
    path: str | Path,
    *,
    layout: str | None = None,
    spacing_m: float | None = None,
    params: SpectrogramParams = SpectrogramParams(),
    cached: Pyramids | None = None,
    heatmap_bins: int | None = None,
    parallel: bool = True,
    spectrogram_first: bool = False,
    direction_after_spectrogram: bool = False,
    on_spectrogram: Callable[[SpectrogramPyramid, WaveformEnvelope], None] | None = None,
    check_cancel: Callable[[], None] | None = None,
    block_frames: int = OPEN_BLOCK_FRAMES,
) -> OpenedAudio:
    """Decode a clip once and build its playback buffer, pyramids and direction analysis from it.

    Parameters
    ----------
    path
        The audio file.
    layout, spacing_m, heatmap_bins
        For the direction analysis (see :class:`~workbench.audio.direction.analysis.DirectionAnalyzer`);
        the layout is detected from the channel count when None.
    params
        Spectrogram parameters.
    cached
        The clip's pyramids from the cache, if they are there: they are handed over at once
        and not computed again.
    parallel
        Run the direction analysis on its own thread beside the spectrogram (the decoder
        always has its own); False: everything but the decoder on the calling thread.
    spectrogram_first
        Give the direction thread a lower scheduling priority, so that on a busy machine the
        decoder and the spectrogram (the first thing the review window paints) go first and
        the direction analysis uses what CPU they leave. On two cores this is also the
        quickest full open of a file whose decode is the largest job (an MP3: the decoder
        keeps a core instead of three busy threads sharing two), and close to the quickest
        of one that decodes in no time (a WAV); the review window
        (:func:`workbench.audio.clip_open.load_clip_audio`) sets it. False (the default)
        shares the CPU evenly among the three threads.
    direction_after_spectrogram
        Start the direction analysis only once ``on_spectrogram`` has returned; the blocks
        wait in its queue until then (no copy: they are views of the playback buffer). The
        review window asks for it: its ``on_spectrogram`` returns once the spectrogram is on
        screen, and until then nothing but the decoder and the spectrogram competes for the
        CPU (on two cores the analysis, even at a lower priority, took ~50 ms of CPU before
        the paint and stretched the decode; P2). The whole open then takes longer (the
        analysis no longer overlaps the decode): the paint comes first.
    on_spectrogram
        Called with the pyramids as soon as they are ready: before the decode when cached
        (the decode waits for it to return: the review window waits there until the
        spectrogram is painted), else right after the last block, while the direction
        analysis finishes on its thread.
    check_cancel
        Called between blocks; it raises to stop the open (nothing is returned then).
    block_frames
        Frames per decoded block.

    Returns
    -------
    OpenedAudio

    Raises
    ------
    AudioError
        If the file cannot be decoded (the direction analysis refusing the file is not an
        error: ``direction`` is None and ``direction_note`` says why).
    """
    start = time.perf_counter()
    timings: dict[str, float] = {}
    path = Path(path)
    stream = DecodeStream(path, block_frames)
    info = stream.info
    try:
        analyzer: DirectionAnalyzer | None = DirectionAnalyzer(
            info.sample_rate, info.n_channels, layout=layout, spacing_m=spacing_m, name=path, heatmap_bins=heatmap_bins
        )
        note = ""
    except InputError as exc:  # mono, or a layout the file cannot have: no direction view
        analyzer, note = None, str(exc)
    if cached is not None and on_spectrogram is not None:
        on_spectrogram(*cached)
    if check_cancel is not None:
        check_cancel()
    builder = PyramidBuilder(params, info.sample_rate, info.frames) if cached is None else None
    # The direction gets its own thread only when the calling thread has the spectrogram to do.
    beside = None
    if analyzer is not None and parallel and builder is not None:
        beside = _DirectionThread(analyzer, nice=_BACKGROUND_NICE if spectrogram_first else 0,
                                  hold=direction_after_spectrogram and on_spectrogram is not None)
    pyramid_s = direction_s = 0.0
    decoded_at = start
    # The blocks are views of the playback buffer, so letting the decoder run far ahead costs
    # no memory; it must not wait for the spectrogram to take the blocks of a longer read.
    blocks = prefetched((block for _, block in stream.blocks()), depth=_DECODE_AHEAD_BLOCKS)
    try:
        for block in blocks:
            if check_cancel is not None:
                check_cancel()
            if beside is not None:
                beside.put(block)
            if builder is not None:
                began = time.perf_counter()
                builder.feed(block)
                pyramid_s += time.perf_counter() - began
            if analyzer is not None and beside is None:
                began = time.perf_counter()
                analyzer.push(block)
                direction_s += time.perf_counter() - began
        decoded_at = time.perf_counter()
        if builder is not None:
            began = time.perf_counter()
            pyramid, envelope = builder.finish()
            pyramid_s += time.perf_counter() - began
            if on_spectrogram is not None:
                on_spectrogram(pyramid, envelope)
            if beside is not None:
                beside.release()
        else:
            assert cached is not None
            pyramid, envelope = cached
        direction: DirectionAnalysis | None = None
        if beside is not None:
            direction = beside.close()
            direction_s = beside.busy_s
        elif analyzer is not None:
            began = time.perf_counter()
            direction = analyzer.finish()
            direction_s += time.perf_counter() - began
    except BaseException:
        if beside is not None:
            beside.abandon()
        raise
    finally:
        blocks.close()
    timings.update(
        decode=decoded_at - start, pyramid=pyramid_s, direction=direction_s,
        total=time.perf_counter() - start, parallel=float(beside is not None),
    )
    return OpenedAudio(stream.audio(), pyramid, envelope, direction, note, cached is None, timings)
