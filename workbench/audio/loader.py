"""Loading audio files safely: probing, decoding, streaming, media-root confinement, hashing.

Every failure is an :class:`AudioError` whose message names the file and says what to do.
Decoding uses libsndfile (via soundfile: WAV, FLAC, OGG/Opus, MP3) and falls back to
librosa/audioread for codecs libsndfile lacks. The format is detected from the file's
content, never from its extension.

Non-finite samples (NaN / ±Inf, possible in float WAV files) are replaced by 0 so that no
metric or image downstream is poisoned; the count is reported in
:attr:`AudioData.non_finite_samples` and logged.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from workbench.audio.memory import empty_prefaulted
from workbench.errors import InputError

log = logging.getLogger(__name__)

MIN_SAMPLE_RATE = 1_000
MAX_SAMPLE_RATE = 768_000
MAX_CHANNELS = 32
# MP3 frame counts in headers are estimates; a shortfall beyond this is a truncated file.
_TRUNCATION_TOLERANCE_S = 1.0
_HASH_CHUNK = 1 << 20
# Reads in the middle of a file are this many blocks long (see DecodeStream._read_size).
_MIDDLE_READ_BLOCKS = 4
# ... and the last this many reads are one block long again. A longer read hands the
# spectrogram four blocks at once, and it falls behind by up to that much; it takes ~0.7
# of the decoder's time per block, so ~13 one-block reads let it catch up before the
# decoder ends (P2, alternating fresh processes: first clip 176 -> 168 ms with 16 instead of 2).
_SHORT_LAST_READS = 16
_READ_CHUNK_FRAMES = 1 << 20


class AudioError(InputError):
    """An audio file that cannot be used; the message names the file and what to do."""


@dataclass(frozen=True)
class AudioInfo:
    """What a file's header says about its audio."""

    path: Path
    sample_rate: int
    n_channels: int
    frames: int
    duration_s: float
    format: str
    subtype: str | None


@dataclass
class AudioData:
    """Decoded audio: float32 samples shaped (frames, channels)."""

    samples: np.ndarray
    sample_rate: int
    info: AudioInfo
    non_finite_samples: int = 0


def _check_file(path: Path) -> None:
    if not path.exists():
        raise AudioError(f"{path}: file not found; check the path or the project's media root")
    if not path.is_file():
        raise AudioError(f"{path}: not a regular file; point to an audio file")
    if not os.access(path, os.R_OK):
        raise AudioError(f"{path}: file is not readable (permission denied); fix its permissions")
    if path.stat().st_size == 0:
        raise AudioError(f"{path}: file is empty (0 bytes); re-download or re-export it")


def _check_header(path: Path, sample_rate: int, n_channels: int) -> None:
    if not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise AudioError(
            f"{path}: header declares an implausible sample rate of {sample_rate} Hz "
            f"(accepted {MIN_SAMPLE_RATE}–{MAX_SAMPLE_RATE} Hz); the file is corrupt, re-export it"
        )
    if not 1 <= n_channels <= MAX_CHANNELS:
        raise AudioError(
            f"{path}: header declares {n_channels} channels (accepted 1–{MAX_CHANNELS}); "
            "the file is corrupt or not a supported recording, re-export it"
        )


def _wav_header_problem(path: Path, head: bytes) -> str | None:
    """A message for absurd WAV header values that made libsndfile refuse the file."""
    if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    position = head.find(b"fmt ", 12)
    if position < 0 or len(head) < position + 16:
        return None
    n_channels, sample_rate = struct.unpack_from("<HI", head, position + 10)
    try:
        _check_header(path, sample_rate, n_channels)
    except AudioError as exc:
        return str(exc)
    return None


def _describe_decode_failure(path: Path, exc: BaseException) -> str:
    head = b""
    try:
        with path.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        pass
    header_problem = _wav_header_problem(path, head)
    if header_problem:
        return header_problem
    if head[:4] in (b"RIFF", b"fLaC", b"OggS", b"ID3") or head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        what = "looks like audio but is corrupt or truncated"
        todo = "re-download or re-export it"
    elif head[4:8] == b"ftyp":
        what = "is an MP4/M4A container whose codec could not be decoded (no decoder installed)"
        todo = "convert it to WAV, FLAC or MP3"
    else:
        what = "is not a recognised audio file (unknown or unsupported format)"
        todo = "convert it to WAV, FLAC or MP3"
    return f"{path}: {what} ({str(exc).strip() or type(exc).__name__}); {todo}"


def _info_from_soundfile(path: Path) -> AudioInfo | None:
    try:
        raw = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, ValueError, TypeError):
        return None
    return AudioInfo(
        path=path,
        sample_rate=int(raw.samplerate),
        n_channels=int(raw.channels),
        frames=max(int(raw.frames), 0),
        duration_s=max(int(raw.frames), 0) / raw.samplerate if raw.samplerate > 0 else 0.0,
        format=str(raw.format),
        subtype=str(raw.subtype) if raw.subtype else None,
    )


def _decode_with_fallback(path: Path) -> tuple[np.ndarray, int]:
    """Decode with librosa/audioread; returns (frames, channels) float32 at the native rate."""
    import warnings

    import audioread
    import audioread.rawread

    decoders = [b for b in audioread.available_backends() if b is not audioread.rawread.RawAudioFile]
    if not decoders:
        # Python's own WAV/AIFF reader is all audioread has here, and libsndfile already
        # reads those: nothing more could decode this file.
        raise AudioError(_describe_decode_failure(path, RuntimeError("libsndfile cannot decode it and no ffmpeg/GStreamer decoder is installed")))
    try:
        import librosa

        with warnings.catch_warnings():
            # librosa warns when it falls back to audioread; that is exactly the case here.
            warnings.simplefilter("ignore")
            samples, rate = librosa.load(str(path), sr=None, mono=False, dtype=np.float32)
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a bad file for the user
        raise AudioError(_describe_decode_failure(path, exc)) from exc
    samples = np.asarray(samples, dtype=np.float32)
    samples = samples[:, None] if samples.ndim == 1 else samples.T
    return np.ascontiguousarray(samples), int(rate)


def audio_info(path: str | Path) -> AudioInfo:
    """Probe an audio file without decoding all of it.

    Parameters
    ----------
    path
        The audio file.

    Returns
    -------
    AudioInfo

    Raises
    ------
    AudioError
        Missing, unreadable, empty, undecodable file, or absurd header values.
    """
    path = Path(path)
    _check_file(path)
    info = _info_from_soundfile(path)
    if info is None:
        samples, rate = _decode_with_fallback(path)
        info = AudioInfo(
            path=path,
            sample_rate=rate,
            n_channels=samples.shape[1],
            frames=samples.shape[0],
            duration_s=samples.shape[0] / rate if rate > 0 else 0.0,
            format="AUDIOREAD",
            subtype=None,
        )
    _check_header(path, info.sample_rate, info.n_channels)
    return info


def _sanitize(path: Path, samples: np.ndarray) -> tuple[np.ndarray, int]:
    finite = np.isfinite(samples)
    if finite.all():
        return samples, 0
    count = int(samples.size - np.count_nonzero(finite))
    log.warning("%s: %d NaN/Inf samples replaced by 0", path, count)
    return np.where(finite, samples, np.float32(0.0)).astype(np.float32, copy=False), count


def _mix_down(block: np.ndarray) -> np.ndarray:
    mono = block[:, :1].copy()
    for channel in range(1, block.shape[1]):
        mono[:, 0] += block[:, channel]
    mono *= np.float32(1.0 / block.shape[1])
    return mono


def _frame_count_is_exact(path: Path, info: AudioInfo) -> bool:
    """False for an MP3 without a Xing/Info/VBRI header, whose length is only an estimate."""
    if info.format != "MP3":
        return True
    try:
        with path.open("rb") as handle:
            head = handle.read(10)
            offset = 0
            if head[:3] == b"ID3" and len(head) == 10:
                size = (head[6] & 0x7F) << 21 | (head[7] & 0x7F) << 14 | (head[8] & 0x7F) << 7 | (head[9] & 0x7F)
                offset = 10 + size + (10 if head[5] & 0x10 else 0)
            handle.seek(offset)
            first_frame = handle.read(4096)
    except OSError:
        return False
    return any(tag in first_frame for tag in (b"Xing", b"Info", b"VBRI"))


def _read_soundfile(path: Path, info: AudioInfo, max_frames: int | None, mono: bool) -> np.ndarray:
    expected = info.frames if max_frames is None else min(info.frames, max_frames)
    # A corrupt header can promise billions of frames: allocate up front only when the file
    # is big enough to hold them (64x covers any lossy codec), otherwise read in chunks.
    plausible = expected * info.n_channels * 4 <= max(64 * path.stat().st_size, _HASH_CHUNK)
    exact = _frame_count_is_exact(path, info)
    # Mixing chunk by chunk keeps a multichannel file's full decode out of memory.
    mix_while_reading = mono and info.n_channels > 1
    try:
        with sf.SoundFile(str(path)) as handle:
            if plausible and not mix_while_reading:
                samples = handle.read(frames=expected, dtype="float32", always_2d=True)
            else:
                chunks = []
                remaining = expected
                while remaining > 0:
                    chunk = handle.read(frames=min(remaining, _READ_CHUNK_FRAMES), dtype="float32", always_2d=True)
                    if chunk.shape[0] == 0:
                        break
                    remaining -= chunk.shape[0]
                    chunks.append(_mix_down(chunk) if mix_while_reading else chunk)
                width = 1 if mix_while_reading else info.n_channels
                samples = np.concatenate(chunks) if chunks else np.zeros((0, width), dtype=np.float32)
    except (sf.LibsndfileError, RuntimeError, ValueError, MemoryError) as exc:
        raise AudioError(_describe_decode_failure(path, exc)) from exc
    shortfall_s = (expected - samples.shape[0]) / info.sample_rate
    if shortfall_s > _TRUNCATION_TOLERANCE_S and exact:
        raise AudioError(
            f"{path}: truncated — header promises {expected / info.sample_rate:.1f} s but only "
            f"{samples.shape[0] / info.sample_rate:.1f} s decode; re-download or re-export it"
        )
    if shortfall_s > _TRUNCATION_TOLERANCE_S:
        log.warning(
            "%s: decodes to %.1f s where the MP3 length estimate was %.1f s (no Xing/Info header)",
            path, samples.shape[0] / info.sample_rate, expected / info.sample_rate,
        )
    if samples.shape[0] == 0 and expected > 0:
        raise AudioError(f"{path}: no audio frames could be decoded; re-download or re-export it")
    return samples


def load_audio(
    path: str | Path,
    *,
    sample_rate: int | None = None,
    mono: bool = False,
    max_seconds: float | None = None,
) -> AudioData:
    """Decode an audio file to float32 samples shaped (frames, channels).

    Parameters
    ----------
    path
        The audio file (format detected from content).
    sample_rate
        Resample (with soxr) to this rate; ``None`` keeps the native rate, as does a rate equal
        to the native one.
    mono
        Average the channels into one.
    max_seconds
        Decode at most this many seconds from the start.

    Returns
    -------
    AudioData
        Samples in [-1, 1] nominal, NaN/Inf replaced by 0 (counted in ``non_finite_samples``).

    Raises
    ------
    AudioError
        On any unusable file (see the module docstring).
    """
    path = Path(path)
    if sample_rate is not None and not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise AudioError(f"{path}: requested sample rate {sample_rate} Hz is out of range")
    if max_seconds is not None and not (math.isfinite(max_seconds) and max_seconds > 0):
        raise AudioError(f"{path}: max_seconds must be a positive number of seconds, got {max_seconds!r}")
    info = audio_info(path)
    max_frames = None if max_seconds is None else int(round(max_seconds * info.sample_rate))
    if info.format == "AUDIOREAD":
        samples, _ = _decode_with_fallback(path)
        if max_frames is not None:
            samples = samples[:max_frames]
    else:
        samples = _read_soundfile(path, info, max_frames, mono)
    samples, non_finite = _sanitize(path, samples)
    if mono and samples.shape[1] > 1:
        samples = _mix_down(samples)
    rate = info.sample_rate
    if sample_rate is not None and sample_rate != rate and samples.shape[0] > 0:
        import soxr

        samples = soxr.resample(samples, rate, sample_rate, quality="HQ").astype(np.float32, copy=False)
        samples = samples[:, None] if samples.ndim == 1 else samples
        rate = sample_rate
    elif sample_rate is not None:
        rate = sample_rate
    return AudioData(
        samples=np.ascontiguousarray(samples, dtype=np.float32),
        sample_rate=rate,
        info=info,
        non_finite_samples=non_finite,
    )


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
        samples, _ = _decode_with_fallback(path)
        samples, _ = _sanitize(path, samples)
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
                fresh, _ = _sanitize(path, fresh)
                block = fresh if tail is None else np.concatenate([tail, fresh])
                yield first, block
                if fresh.shape[0] < wanted:
                    return  # the decoder ended
                first += step
                tail = block[step:] if overlap_frames else None
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise AudioError(_describe_decode_failure(path, exc)) from exc


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
            samples, _ = _decode_with_fallback(path)
            self._buffer = np.ascontiguousarray(samples, dtype=np.float32)
            self._sanitize_in_place(self._buffer)
            self._frames = self._buffer.shape[0]
            for start in range(0, self._frames, self.block_frames):
                yield start, self._buffer[start : start + self.block_frames]
            self._finish()
            return
        # Allocate the promised length up front only when the file can hold it (a corrupt
        # header can promise billions of frames); otherwise grow as the decoder goes.
        plausible = info.frames * info.n_channels * 4 <= max(64 * path.stat().st_size, _HASH_CHUNK)
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
            raise AudioError(_describe_decode_failure(path, exc)) from exc

    def _finish(self) -> None:
        path, info = self.path, self.info
        decoded = self._frames
        shortfall_s = (info.frames - decoded) / info.sample_rate
        if shortfall_s > _TRUNCATION_TOLERANCE_S and info.format != "AUDIOREAD":
            if _frame_count_is_exact(path, info):
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


def content_hash(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex), read in 1 MiB chunks.

    Raises
    ------
    AudioError
        If the file cannot be read.
    """
    path = Path(path)
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
    except OSError as exc:
        raise AudioError(f"{path}: cannot read the file to hash it ({exc.strerror or exc}); check it exists and is readable") from exc
    return digest.hexdigest()
