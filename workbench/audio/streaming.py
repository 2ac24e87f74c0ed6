"""Streaming a file in blocks: :func:`iter_blocks` for the analyses that read a file once
(spectrogram cache fill, direction of a long file), :class:`DecodeStream` for the review window's
one decode that fills the playback buffer while the spectrogram and the direction analysis read
its blocks as they arrive.

Probing, the checks and the error messages are the loader's (:mod:`workbench.audio.loader`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import soundfile as sf

from workbench.audio.loader import (
    TRUNCATION_TOLERANCE_S,
    AudioData,
    AudioError,
    audio_info,
    can_hold,
    decode_with_fallback,
    describe_decode_failure,
    frame_count_is_exact,
    sanitize,
)
from workbench.audio.memory import empty_prefaulted

log = logging.getLogger(__name__)

# Reads in the middle of a file are this many blocks long (see DecodeStream._read_size).
_MIDDLE_READ_BLOCKS = 4
# ... and the last this many reads are one block long again. A longer read hands the
# spectrogram four blocks at once, and it falls behind by up to that much; it takes ~0.7
# of the decoder's time per block, so ~13 one-block reads let it catch up before the
# decoder ends (P2, alternating fresh processes: first clip 176 -> 168 ms with 16 instead of 2).
_SHORT_LAST_READS = 16

def iter_blocks(
    path: str | Path,
    block_frames: int,
    *,
    overlap_frames: int = 0,
) -> Iterator[tuple[int, np.ndarray]]:
    """Stream a file in blocks without loading it whole.

    Parameters
    ----------
    path
        The audio file.
    block_frames
        Frames per block (the last block may be shorter).
    overlap_frames
        Frames each block shares with the previous one (``0 <= overlap < block_frames``).

    Yields
    ------
    tuple[int, numpy.ndarray]
        The block's first frame index and its float32 samples shaped (frames, channels),
        NaN/Inf replaced by 0. Blocks end where the decoder ends, even when the header
        promised more frames (an MP3 without a Xing header only estimates its length).

    Raises
    ------
    AudioError
        Unusable file, or a decode failure part-way through.
    """
    path = Path(path)
    if block_frames < 1 or not 0 <= overlap_frames < block_frames:
        raise ValueError("need block_frames >= 1 and 0 <= overlap_frames < block_frames")
    info = audio_info(path)
    step = block_frames - overlap_frames
    if info.format == "AUDIOREAD":
        samples, _ = decode_with_fallback(path)
        samples, _ = sanitize(path, samples)
        for start in range(0, max(samples.shape[0] - overlap_frames, 1), step):
            yield start, samples[start : start + block_frames]
        return
    # Read by hand rather than with SoundFile.blocks: blocks() sizes its output by the header's
    # frame count, so when the decoder ends early it yields stale samples past the real end.
    first = 0  # first frame of the next block
    tail: np.ndarray | None = None  # the overlap carried into the next block
    try:
        with sf.SoundFile(str(path)) as handle:
            while True:
                wanted = block_frames if tail is None else step
                fresh = handle.read(frames=wanted, dtype="float32", always_2d=True)
                if fresh.shape[0] == 0:
                    return
                fresh, _ = sanitize(path, fresh)
                block = fresh if tail is None else np.concatenate([tail, fresh])
                yield first, block
                if fresh.shape[0] < wanted:
                    return  # the decoder ended
                first += step
                tail = block[step:] if overlap_frames else None
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise AudioError(describe_decode_failure(path, exc)) from exc


class DecodeStream:
    """One decode of a file, block by block, into one sample buffer that becomes its :class:`AudioData`.

    The blocks handed out are views of that buffer (no copy), so consumers that look at the
    audio as it arrives (spectrogram, direction analysis) and the playback buffer share the
    same samples and the file is read once. The decoder is read until it ends: a header whose
    frame count is only an estimate (an MP3 without a Xing header) neither cuts the audio nor
    leaves stale frames.

    Parameters
    ----------
    path
        The audio file (format detected from content).
    block_frames
        Frames per block (the last block may be shorter).

    Raises
    ------
    AudioError
        Unusable file (from the constructor, which probes the header), or a decode failure
        or truncation found while reading (from :meth:`blocks`).
    """

    def __init__(self, path: str | Path, block_frames: int) -> None:
        if block_frames < 1:
            raise ValueError("block_frames must be at least 1")
        self.path = Path(path)
        self.block_frames = block_frames
        self.info = audio_info(self.path)
        self._buffer = np.zeros((0, self.info.n_channels), dtype=np.float32)
        self._frames = 0
        self._non_finite = 0
        self._done = False

    def _sanitize_in_place(self, block: np.ndarray) -> None:
        finite = np.isfinite(block)
        if not finite.all():
            self._non_finite += int(block.size - np.count_nonzero(finite))
            block[~finite] = np.float32(0.0)

    def _grow(self, needed: int) -> None:
        capacity = max(needed, 2 * self._buffer.shape[0])
        grown = np.empty((capacity, self.info.n_channels), dtype=np.float32)
        grown[: self._frames] = self._buffer[: self._frames]
        self._buffer = grown

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """Decode the file: yields each block's first frame and its float32 samples (frames, channels).

        NaN/Inf samples are replaced by 0 (counted). Call once; :meth:`audio` then returns
        everything that was decoded.
        """
        path, info = self.path, self.info
        if info.format == "AUDIOREAD":
            samples, _ = decode_with_fallback(path)
            self._buffer = np.ascontiguousarray(samples, dtype=np.float32)
            self._sanitize_in_place(self._buffer)
            self._frames = self._buffer.shape[0]
            for start in range(0, self._frames, self.block_frames):
                yield start, self._buffer[start : start + self.block_frames]
            self._finish()
            return
        # Allocate the promised length up front only when the file can hold it; otherwise grow
        # as the decoder goes.
        plausible = can_hold(path, info.frames, info.n_channels)
        prefaulting = None
        if plausible:
            # Its pages are made ready on another thread, ahead of the decoder (see memory.py).
            self._buffer, prefaulting = empty_prefaulted(
                (info.frames, info.n_channels), skip_bytes=self.block_frames * info.n_channels * 4
            )
        else:
            self._buffer = np.empty((self.block_frames, info.n_channels), dtype=np.float32)
        try:
            yield from self._read_into_buffer()
        finally:
            if prefaulting is not None:
                prefaulting.set()  # ended or abandoned: no need to go on
        self._finish()

    def _read_size(self, room: int) -> int:
        """Frames to read next: ``block_frames`` for the first block and the last ones, more between.

        Each read of an MP3 costs ~0.1 ms beyond the decoding (soundfile checks and restores
        the position around every read; the P2 recording decodes in ~112 ms in reads of 2**19
        frames, ~120 ms in reads of 2**17); but the first block should come quickly (the
        spectrogram starts with it) and the last ones should be short (see
        :data:`_SHORT_LAST_READS`).
        """
        longer = self.block_frames * _MIDDLE_READ_BLOCKS
        if self._frames >= self.block_frames and room >= longer + _SHORT_LAST_READS * self.block_frames:
            return longer
        return self.block_frames

    def _read_into_buffer(self) -> Iterator[tuple[int, np.ndarray]]:
        """The libsndfile read loop of :meth:`blocks` (the buffer allocated)."""
        path = self.path
        try:
            with sf.SoundFile(str(path)) as handle:
                while True:
                    room = self._buffer.shape[0] - self._frames
                    if room > 0:
                        wanted = min(self._read_size(room), room)
                        block = handle.read(frames=wanted, dtype="float32", always_2d=True,
                                            out=self._buffer[self._frames : self._frames + wanted])
                    else:
                        # The header's length is used up: read on into a scratch block, kept
                        # only if the decoder still has frames.
                        wanted = self.block_frames
                        scratch = handle.read(frames=wanted, dtype="float32", always_2d=True)
                        if scratch.shape[0]:
                            self._grow(self._frames + scratch.shape[0])
                            block = self._buffer[self._frames : self._frames + scratch.shape[0]]
                            block[:] = scratch
                        else:
                            block = scratch
                    if block.shape[0] == 0:
                        break
                    self._sanitize_in_place(block)
                    start = self._frames
                    self._frames += block.shape[0]
                    # A longer read is handed on in blocks of block_frames: the consumers see
                    # the same blocks whatever the reads were (the direction analysis sums
                    # block by block, so its float rounding depends on where blocks end).
                    for offset in range(0, block.shape[0], self.block_frames):
                        yield start + offset, block[offset : offset + self.block_frames]
                    if block.shape[0] < wanted:
                        break  # the decoder ended
        except (sf.LibsndfileError, RuntimeError, ValueError, MemoryError) as exc:
            raise AudioError(describe_decode_failure(path, exc)) from exc

    def _finish(self) -> None:
        path, info = self.path, self.info
        decoded = self._frames
        shortfall_s = (info.frames - decoded) / info.sample_rate
        if shortfall_s > TRUNCATION_TOLERANCE_S and info.format != "AUDIOREAD":
            if frame_count_is_exact(path, info):
                raise AudioError(
                    f"{path}: truncated — header promises {info.frames / info.sample_rate:.1f} s but only "
                    f"{decoded / info.sample_rate:.1f} s decode; re-download or re-export it"
                )
            log.warning(
                "%s: decodes to %.1f s where the MP3 length estimate was %.1f s (no Xing/Info header)",
                path, decoded / info.sample_rate, info.frames / info.sample_rate,
            )
        if decoded == 0 and info.frames > 0:
            raise AudioError(f"{path}: no audio frames could be decoded; re-download or re-export it")
        if self._non_finite:
            log.warning("%s: %d NaN/Inf samples replaced by 0", path, self._non_finite)
        if self._buffer.shape[0] > decoded + decoded // 8 + self.block_frames:
            # Far fewer frames than allocated (a generous length estimate): do not keep the slack.
            self._buffer = self._buffer[:decoded].copy()
        self._done = True

    def audio(self) -> AudioData:
        """Everything decoded, as :func:`load_audio` would return it (after :meth:`blocks` ended)."""
        if not self._done:
            raise RuntimeError("DecodeStream.audio() before its blocks were all read")
        return AudioData(
            samples=self._buffer[: self._frames],
            sample_rate=self.info.sample_rate,
            info=self.info,
            non_finite_samples=self._non_finite,
        )
