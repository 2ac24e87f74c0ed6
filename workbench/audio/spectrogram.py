"""Spectrogram and waveform pyramids for display, with a disk cache.

The spectrogram is an STFT of the mono mix (Hann window), in dB relative to full scale (a
full-scale sine peaks at 0 dB), quantised to uint8 on fixed levels: 0 is ``db_floor`` and
255 is ``db_ceiling`` for every clip, so colours compare across clips. Column ``j`` covers
samples ``[j*hop, (j+1)*hop)`` (its window is centred on that span). Level ``k`` of the
pyramid max-pools level 0 over ``2**k`` columns, so a short loud event (a click) stays visible
at every zoom.

The waveform envelope keeps the minimum and maximum of the mono mix per bucket of
:data:`ENVELOPE_BUCKET` samples, pooled by pairs into coarser levels.

Both are computed block by block (a file is streamed, never decoded whole); the spectrogram
is computed time-major, (columns, bins), and handed out as (bins, columns) views. The disk
cache of both is :mod:`workbench.audio.pyramid_cache`.
"""

from __future__ import annotations

import math
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import scipy.fft
import scipy.signal

from workbench.audio.levels import StreamingLevels, pick_level
from workbench.audio.loader import AudioData, AudioError, audio_info
from workbench.audio.streaming import iter_blocks

ENVELOPE_BUCKET = 16
# Long recordings (beyond ~25 min at 44.1 kHz with hop 256) are pooled already while they are
# computed, so level 0 never exceeds these sizes and a 3-hour file fits in memory.
MAX_LEVEL0_COLUMNS = 1 << 18
MAX_ENVELOPE_BUCKETS = 1 << 22
_STREAM_BLOCK_FRAMES = 1 << 17
_FRAMES_PER_FFT_BATCH = 128
# Threads per STFT batch: one; parallelism comes from computing the direction map beside it.
_FFT_WORKERS = 1


@dataclass(frozen=True)
class SpectrogramParams:
    """STFT and quantisation parameters.

    uint8 0..255 maps ``db_floor``..``db_ceiling`` linearly (values outside are clipped), the
    same for every clip.
    """

    n_fft: int = 1024
    hop: int = 256
    scale: Literal["linear", "mel"] = "linear"
    n_mels: int = 128
    db_floor: float = -100.0
    db_ceiling: float = 0.0

    def __post_init__(self) -> None:
        if self.n_fft < 16 or self.hop < 1 or self.hop > self.n_fft:
            raise ValueError(f"need n_fft >= 16 and 1 <= hop <= n_fft, got n_fft={self.n_fft}, hop={self.hop}")
        if self.scale not in ("linear", "mel"):
            raise ValueError(f"scale must be 'linear' or 'mel', got {self.scale!r}")
        if not self.db_ceiling > self.db_floor:
            raise ValueError("db_ceiling must be above db_floor")
        if self.scale == "mel" and self.n_mels < 1:
            raise ValueError("n_mels must be positive")

    def db_of_level(self, level: np.ndarray | int) -> np.ndarray:
        """dB value represented by a uint8 level (the inverse of the quantisation)."""
        return self.db_floor + np.asarray(level, dtype=np.float64) * (self.db_ceiling - self.db_floor) / 255.0


def _clamp_span(t0: float, t1: float, duration_s: float) -> tuple[float, float]:
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError(f"view bounds must be finite, got {t0!r}, {t1!r}")
    t0, t1 = (t0, t1) if t0 <= t1 else (t1, t0)
    return min(max(t0, 0.0), duration_s), min(max(t1, 0.0), duration_s)


class SpectrogramPyramid:
    """A max-pooled time pyramid of a quantised spectrogram.

    Attributes
    ----------
    levels
        uint8 images shaped (n_bins, n_columns); level k pools 2**k level-0 columns.
    frame_hop_s
        Seconds per level-0 column.
    duration_s
        Duration of the audio.
    freqs_hz
        Centre frequency of each bin (row).
    params
        The parameters it was computed with.
    """

    def __init__(
        self,
        levels: list[np.ndarray],
        frame_hop_s: float,
        duration_s: float,
        freqs_hz: np.ndarray,
        params: SpectrogramParams,
    ) -> None:
        self.levels = levels
        self.frame_hop_s = frame_hop_s
        self.duration_s = duration_s
        self.freqs_hz = freqs_hz
        self.params = params

    def view(self, t0: float, t1: float, max_columns: int) -> tuple[np.ndarray, float, float]:
        """The image to show for [t0, t1] on a screen ``max_columns`` pixels wide.

        Picks the coarsest level that still has at least ``max_columns`` columns over the span
        (so 1–2 columns per pixel; fewer only when level 0 itself is coarser than the screen).

        Returns
        -------
        tuple[numpy.ndarray, float, float]
            The uint8 slice (n_bins, n_columns) — a view, not a copy — and the exact start and
            end time it covers (column edges, so usually slightly wider than [t0, t1]).
        """
        if max_columns < 1:
            raise ValueError("max_columns must be at least 1")
        t0, t1 = _clamp_span(t0, t1, self.duration_s)
        level = pick_level(len(self.levels), self.frame_hop_s, t0, t1, max_columns)
        image = self.levels[level]
        column_s = self.frame_hop_s * (1 << level)
        first = min(int(math.floor(t0 / column_s)), max(image.shape[1] - 1, 0))
        last = max(min(int(math.ceil(t1 / column_s)), image.shape[1]), first + 1)
        return image[:, first:last], first * column_s, min(last * column_s, self.duration_s)


class WaveformEnvelope:
    """Min/max pyramid of the mono mix.

    Attributes
    ----------
    mins, maxs
        Per level, float32 arrays of bucket minima / maxima; level k pools 2**k buckets.
    bucket_s
        Seconds per level-0 bucket.
    duration_s
        Duration of the audio.
    """

    def __init__(self, mins: list[np.ndarray], maxs: list[np.ndarray], bucket_s: float, duration_s: float) -> None:
        self.mins = mins
        self.maxs = maxs
        self.bucket_s = bucket_s
        self.duration_s = duration_s

    def view(self, t0: float, t1: float, max_points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Envelope points for [t0, t1] at 1–2 buckets per requested point.

        Returns
        -------
        tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]
            Bucket start times (s), minima, maxima.
        """
        if max_points < 1:
            raise ValueError("max_points must be at least 1")
        t0, t1 = _clamp_span(t0, t1, self.duration_s)
        level = pick_level(len(self.mins), self.bucket_s, t0, t1, max_points)
        bucket_s = self.bucket_s * (1 << level)
        n = self.mins[level].shape[0]
        first = min(int(math.floor(t0 / bucket_s)), max(n - 1, 0))
        last = max(min(int(math.ceil(t1 / bucket_s)), n), first + 1)
        times = np.arange(first, last, dtype=np.float64) * bucket_s
        return times, self.mins[level][first:last], self.maxs[level][first:last]


def _mix_to_mono(block: np.ndarray) -> np.ndarray:
    if block.shape[1] == 1:
        return block[:, 0]
    # Summing columns is several times faster than mean(axis=1) on (frames, channels) data.
    mono = np.add(block[:, 0], block[:, 1])
    for channel in range(2, block.shape[1]):
        mono += block[:, channel]
    mono *= np.float32(1.0 / block.shape[1])
    return mono


def _mono_blocks(source: str | Path | AudioData) -> tuple[Iterator[np.ndarray], int, int]:
    """(mono float32 blocks, sample rate, total frames) without loading a file whole."""
    if isinstance(source, AudioData):
        samples = source.samples

        def from_array() -> Iterator[np.ndarray]:
            for start in range(0, samples.shape[0], _STREAM_BLOCK_FRAMES):
                block = samples[start : start + _STREAM_BLOCK_FRAMES]
                yield _mix_to_mono(block)

        return from_array(), source.sample_rate, samples.shape[0]
    info = audio_info(source)

    def from_file() -> Iterator[np.ndarray]:
        # The helper thread only decodes (the longer half of a cold open); mixing happens here.
        decoded = prefetched(block for _, block in iter_blocks(source, _STREAM_BLOCK_FRAMES))
        try:
            for block in decoded:
                yield _mix_to_mono(block)
        finally:
            decoded.close()

    return from_file(), info.sample_rate, info.frames


_END = object()


def prefetched(blocks: Iterator[np.ndarray], depth: int = 2) -> Iterator[np.ndarray]:
    """Run ``blocks`` on a helper thread, ``depth`` items ahead of the consumer.

    Decoding (libsndfile releases the GIL) then overlaps with the FFT of the previous block,
    which keeps both cores busy on a cold open. An exception raised while producing is
    re-raised in the consumer at the point it happened; closing the returned generator early
    stops the producer after its current item.
    """
    items: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in blocks:
                while not stop.is_set():
                    try:
                        items.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    close = getattr(blocks, "close", None)
                    if close is not None:
                        close()  # releases the file now, on this thread
                    return
            items.put(_END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            items.put(exc)

    worker = threading.Thread(target=produce, name="aglw-decode-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = items.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        while worker.is_alive():
            try:
                items.get_nowait()
            except queue.Empty:
                worker.join(0.05)


class _StftAccumulator:
    """Turns a stream of mono blocks into quantised spectrogram columns.

    Columns are cast batch by batch into one uint8 image sized from the expected length
    (``expected_columns``; columns beyond it are kept as extra blocks), so the image is built
    in a single pass over freshly touched memory: a cold open is bound by CPU, and on virtual
    machines a first touch of a page is costly. The image is time-major, (columns, bins), the
    layout the STFT produces: storing a batch is a plain cast and the coarser levels pool
    contiguous rows (see :mod:`workbench.audio.levels`); the pyramid hands out transposed views.
    """

    def __init__(self, params: SpectrogramParams, sample_rate: int, pool: int = 1, expected_columns: int = 0) -> None:
        self.params = params
        self.pool = pool
        self.pending: np.ndarray | None = None
        self.window = scipy.signal.get_window("hann", params.n_fft).astype(np.float32)
        # Amplitude of a full-scale sine at its bin = sum(window)/2: that is 0 dB.
        self.reference = float(self.window.sum()) / 2.0
        self.mel_basis: np.ndarray | None = None
        if params.scale == "mel":
            import librosa

            self.mel_basis = librosa.filters.mel(
                sr=sample_rate, n_fft=params.n_fft, n_mels=params.n_mels, norm=None, dtype=np.float32
            )
        # Leading zeros centre column j's window on samples [j*hop, (j+1)*hop).
        self.buffer = np.zeros(params.n_fft // 2 - params.hop // 2, dtype=np.float32)
        self.n_bins = params.n_mels if self.mel_basis is not None else params.n_fft // 2 + 1
        self.image = np.empty((max(math.ceil(expected_columns / pool), 0), self.n_bins), dtype=np.uint8)
        # The coarser levels are pooled block by block as the columns arrive (see finish).
        self._pooled = StreamingLevels(self.image)
        self.extra: list[np.ndarray] = []  # columns beyond the expected length
        self.stored = 0  # image columns written (after pooling)
        self.n_columns = 0  # STFT frames computed

    def _emit(self, limit: int | None) -> None:
        n_fft, hop = self.params.n_fft, self.params.hop
        available = (self.buffer.size - n_fft) // hop + 1 if self.buffer.size >= n_fft else 0
        if limit is not None:
            available = min(available, limit - self.n_columns)
        if available <= 0:
            return
        frames = np.lib.stride_tricks.sliding_window_view(self.buffer, n_fft)[::hop][:available]
        for start in range(0, available, _FRAMES_PER_FFT_BATCH):
            batch = frames[start : start + _FRAMES_PER_FFT_BATCH] * self.window
            spectrum = scipy.fft.rfft(batch, axis=1, workers=_FFT_WORKERS, overwrite_x=True)
            magnitude = np.abs(spectrum)
            if self.mel_basis is not None:
                np.square(magnitude, out=magnitude)
                self._collect(self._levels(magnitude @ self.mel_basis.T))
            else:
                # Levels straight from |X| (power = |X|²): one pass fewer over every bin.
                self._collect(self._levels(magnitude, exponent=2))
        self.n_columns += available
        self.buffer = self.buffer[available * hop :]

    def _collect(self, rows: np.ndarray) -> None:
        """Store float levels shaped (frames, bins) as uint8 columns, max-pooled by ``pool``."""
        if self.pool > 1:
            if self.pending is not None:
                rows = np.concatenate([self.pending, rows])
            whole = rows.shape[0] - rows.shape[0] % self.pool
            self.pending = rows[whole:].copy() if whole < rows.shape[0] else None
            if not whole:
                return
            rows = rows[:whole].reshape(-1, self.pool, rows.shape[1]).max(axis=1)
        self._store(rows)

    def _store(self, rows: np.ndarray) -> None:
        # The truncating cast (levels are offset by +0.5, see _levels).
        n = rows.shape[0]
        fits = min(n, self.image.shape[0] - self.stored)
        if fits > 0:
            np.copyto(self.image[self.stored : self.stored + fits], rows[:fits], casting="unsafe")
        if fits < n:
            self.extra.append(rows[max(fits, 0) :].astype(np.uint8))
        self.stored += n

    def _quantise(self, values: np.ndarray, exponent: int = 1) -> np.ndarray:
        """uint8 levels of the power ``values ** exponent`` (float32, overwritten)."""
        return self._levels(values, exponent).astype(np.uint8)

    def _levels(self, values: np.ndarray, exponent: int = 1) -> np.ndarray:
        """Levels + 0.5 of the power ``values ** exponent``, in place: truncating gives the level."""
        params = self.params
        reference_power = self.reference**2
        floor_power = reference_power * 10.0 ** (params.db_floor / 10.0)
        ceiling_power = reference_power * 10.0 ** (params.db_ceiling / 10.0)
        # In place: this runs over every STFT bin of the clip and dominates the cost.
        # Clipping to [floor, ceiling] maps the ends to levels 0.5 and 255.5 (± float32 rounding),
        # so the truncating cast needs no further clipping; adding 0.5 before it rounds to the
        # nearest level. The natural log (scaled by 1/ln 10) is several times faster than log10
        # on float32.
        np.clip(
            values,
            np.float32(floor_power ** (1.0 / exponent)),
            np.float32(ceiling_power ** (1.0 / exponent)),
            out=values,
        )
        np.log(values, out=values)
        scale = exponent * 10.0 * 255.0 / (params.db_ceiling - params.db_floor) / math.log(10.0)
        values *= np.float32(scale)
        values += np.float32(0.5 - (10.0 * math.log10(reference_power) + params.db_floor) * 255.0 / (params.db_ceiling - params.db_floor))
        return values

    def feed(self, mono: np.ndarray) -> None:
        self.buffer = np.concatenate([self.buffer, mono.astype(np.float32, copy=False)])
        self._emit(None)
        self._pooled.update(self.stored)

    def levels(self, image: np.ndarray) -> list[np.ndarray]:
        """The max-pooled pyramid of ``image`` (what :meth:`finish` returned), time-major."""
        return self._pooled.finish(image)

    def finish(self, n_samples: int) -> np.ndarray:
        wanted = max(math.ceil(n_samples / self.params.hop), 1)
        missing = wanted - self.n_columns
        if missing > 0:
            needed = (missing - 1) * self.params.hop + self.params.n_fft - self.buffer.size
            self.buffer = np.concatenate([self.buffer, np.zeros(max(needed, 0), dtype=np.float32)])
            self._emit(wanted)
        if self.pending is not None:
            self._store(self.pending.max(axis=0, keepdims=True))
            self.pending = None
        image = self.image[: min(self.stored, self.image.shape[0])]
        if self.extra:
            image = np.concatenate([image, *self.extra], axis=0)
        # Time-major, (columns, bins).
        return image[: math.ceil(wanted / self.pool)]


class _EnvelopeAccumulator:
    """Minimum and maximum of each bucket of mono samples, and their pooled levels.

    Like the spectrogram's image, both are written into arrays sized from the expected length
    (``expected_buckets``; buckets beyond it are kept apart) and their coarser levels are pooled
    as the buckets arrive, so that finishing leaves only the last few to pool.
    """

    def __init__(self, bucket: int = ENVELOPE_BUCKET, expected_buckets: int = 0) -> None:
        self.bucket = bucket
        self.carry = np.zeros(0, dtype=np.float32)
        self.mins = np.empty(max(expected_buckets, 0), dtype=np.float32)
        self.maxs = np.empty_like(self.mins)
        self._pooled_mins = StreamingLevels(self.mins, np.minimum)
        self._pooled_maxs = StreamingLevels(self.maxs, np.maximum)
        self.extra: list[tuple[np.ndarray, np.ndarray]] = []  # buckets beyond the expected length
        self.stored = 0

    def _store(self, mins: np.ndarray, maxs: np.ndarray) -> None:
        fits = max(min(mins.size, self.mins.size - self.stored), 0)
        self.mins[self.stored : self.stored + fits] = mins[:fits]
        self.maxs[self.stored : self.stored + fits] = maxs[:fits]
        if fits < mins.size:
            self.extra.append((mins[fits:], maxs[fits:]))
        self.stored += mins.size

    def feed(self, mono: np.ndarray) -> None:
        data = np.concatenate([self.carry, mono]) if self.carry.size else mono
        whole = data.size - data.size % self.bucket
        if whole:
            # Bucket-major copy: the reductions then run over long contiguous rows (several
            # times faster than reducing each short bucket).
            buckets = np.ascontiguousarray(data[:whole].reshape(-1, self.bucket).T)
            self._store(buckets.min(axis=0), buckets.max(axis=0))
            self._pooled_mins.update(self.stored)
            self._pooled_maxs.update(self.stored)
        self.carry = np.array(data[whole:], dtype=np.float32)

    def finish(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The levels of the minima and of the maxima (level 0: one value per bucket)."""
        if self.carry.size:
            self._store(np.array([self.carry.min()], dtype=np.float32), np.array([self.carry.max()], dtype=np.float32))
            self.carry = np.zeros(0, dtype=np.float32)
        if not self.stored:
            return [np.zeros(1, dtype=np.float32)], [np.zeros(1, dtype=np.float32)]
        kept = min(self.stored, self.mins.size)
        mins, maxs = self.mins[:kept], self.maxs[:kept]
        if self.extra:
            mins = np.concatenate([mins, *(m for m, _ in self.extra)])
            maxs = np.concatenate([maxs, *(m for _, m in self.extra)])
        return self._pooled_mins.finish(mins), self._pooled_maxs.finish(maxs)


def _freqs(params: SpectrogramParams, sample_rate: int) -> np.ndarray:
    if params.scale == "mel":
        import librosa

        return librosa.mel_frequencies(n_mels=params.n_mels + 2, fmin=0.0, fmax=sample_rate / 2.0)[1:-1]
    return np.fft.rfftfreq(params.n_fft, d=1.0 / sample_rate)


def _power_of_two_at_least(ratio: float) -> int:
    return 1 if ratio <= 1 else 1 << math.ceil(math.log2(ratio))


class PyramidBuilder:
    """Builds the spectrogram pyramid and waveform envelope from audio blocks as they arrive.

    Feed blocks of any length (frames, channels) in order; the mono mix is transformed block
    by block, so the pyramid of a file being decoded is ready as soon as its last block is.

    Parameters
    ----------
    params
        STFT and quantisation parameters.
    sample_rate
        Sample rate in Hz.
    expected_frames
        The length the audio is expected to have (e.g. from the header): it sizes the image and
        decides whether very long recordings are pooled while they are computed. A wrong
        estimate costs memory or time, never correctness.
    """

    def __init__(self, params: SpectrogramParams, sample_rate: int, expected_frames: int) -> None:
        self.params = params
        self.sample_rate = sample_rate
        self.column_pool = _power_of_two_at_least(math.ceil(expected_frames / params.hop) / MAX_LEVEL0_COLUMNS)
        self.bucket = ENVELOPE_BUCKET * _power_of_two_at_least(expected_frames / ENVELOPE_BUCKET / MAX_ENVELOPE_BUCKETS)
        self._stft = _StftAccumulator(
            params, sample_rate, self.column_pool, expected_columns=math.ceil(expected_frames / params.hop)
        )
        self._envelope = _EnvelopeAccumulator(self.bucket, expected_buckets=math.ceil(expected_frames / self.bucket))
        self.n_samples = 0

    def feed_mono(self, mono: np.ndarray) -> None:
        """Add the next samples of the mono mix (1-D float32)."""
        self.n_samples += mono.size
        self._stft.feed(mono)
        self._envelope.feed(mono)

    def feed(self, block: np.ndarray) -> None:
        """Add the next samples, shaped (frames, channels); the channels are mixed to mono."""
        self.feed_mono(_mix_to_mono(block))

    def finish(self) -> tuple[SpectrogramPyramid, WaveformEnvelope]:
        """The pyramid and envelope of everything fed."""
        image = self._stft.finish(self.n_samples)
        mins, maxs = self._envelope.finish()  # their levels
        duration_s = self.n_samples / self.sample_rate
        pyramid = SpectrogramPyramid(
            # (bins, columns) views of the time-major levels.
            levels=[level.T for level in self._stft.levels(image)],
            frame_hop_s=self.params.hop * self.column_pool / self.sample_rate,
            duration_s=duration_s,
            freqs_hz=_freqs(self.params, self.sample_rate),
            params=self.params,
        )
        waveform = WaveformEnvelope(
            mins=mins,
            maxs=maxs,
            bucket_s=self.bucket / self.sample_rate,
            duration_s=duration_s,
        )
        return pyramid, waveform


def build_pyramids(source: str | Path | AudioData, params: SpectrogramParams) -> tuple[SpectrogramPyramid, WaveformEnvelope]:
    """Spectrogram pyramid and waveform envelope of a file (streamed in blocks) or of decoded audio; no cache."""
    blocks, sample_rate, expected_frames = _mono_blocks(source)
    builder = PyramidBuilder(params, sample_rate, expected_frames)
    for mono in blocks:
        builder.feed_mono(mono)
    return builder.finish()


__all__ = [
    "AudioError",
    "ENVELOPE_BUCKET",
    "PyramidBuilder",
    "SpectrogramParams",
    "SpectrogramPyramid",
    "WaveformEnvelope",
    "build_pyramids",
]
