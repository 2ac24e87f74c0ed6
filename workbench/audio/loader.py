"""Loading audio files safely: probing, checking, decoding whole, hashing (streaming in blocks:
:mod:`workbench.audio.streaming`).

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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from workbench.errors import InputError

log = logging.getLogger(__name__)

MIN_SAMPLE_RATE = 1_000
MAX_SAMPLE_RATE = 768_000
MAX_CHANNELS = 32
# MP3 frame counts in headers are estimates; a shortfall beyond this is a truncated file.
TRUNCATION_TOLERANCE_S = 1.0
_HASH_CHUNK = 1 << 20
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


def describe_decode_failure(path: Path, exc: BaseException) -> str:
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


def decode_with_fallback(path: Path) -> tuple[np.ndarray, int]:
    """Decode with librosa/audioread; returns (frames, channels) float32 at the native rate."""
    import warnings

    import audioread
    import audioread.rawread

    decoders = [b for b in audioread.available_backends() if b is not audioread.rawread.RawAudioFile]
    if not decoders:
        # Python's own WAV/AIFF reader is all audioread has here, and libsndfile already
        # reads those: nothing more could decode this file.
        raise AudioError(describe_decode_failure(path, RuntimeError("libsndfile cannot decode it and no ffmpeg/GStreamer decoder is installed")))
    try:
        import librosa

        with warnings.catch_warnings():
            # librosa warns when it falls back to audioread; that is exactly the case here.
            warnings.simplefilter("ignore")
            samples, rate = librosa.load(str(path), sr=None, mono=False, dtype=np.float32)
    except Exception as exc:  # noqa: BLE001 - any decoder failure is a bad file for the user
        raise AudioError(describe_decode_failure(path, exc)) from exc
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
        samples, rate = decode_with_fallback(path)
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


def sanitize(path: Path, samples: np.ndarray) -> tuple[np.ndarray, int]:
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


def frame_count_is_exact(path: Path, info: AudioInfo) -> bool:
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


def can_hold(path: Path, frames: int, n_channels: int) -> bool:
    """Whether the file is big enough to hold ``frames`` float32 frames (64x covers any lossy codec).

    A corrupt header can promise billions of frames: a buffer is allocated up front only when
    this holds; otherwise the decode reads in chunks or grows its buffer as it goes.
    """
    return frames * n_channels * 4 <= max(64 * path.stat().st_size, _HASH_CHUNK)


def _read_soundfile(path: Path, info: AudioInfo, max_frames: int | None, mono: bool) -> np.ndarray:
    expected = info.frames if max_frames is None else min(info.frames, max_frames)
    plausible = can_hold(path, expected, info.n_channels)
    exact = frame_count_is_exact(path, info)
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
        raise AudioError(describe_decode_failure(path, exc)) from exc
    shortfall_s = (expected - samples.shape[0]) / info.sample_rate
    if shortfall_s > TRUNCATION_TOLERANCE_S and exact:
        raise AudioError(
            f"{path}: truncated — header promises {expected / info.sample_rate:.1f} s but only "
            f"{samples.shape[0] / info.sample_rate:.1f} s decode; re-download or re-export it"
        )
    if shortfall_s > TRUNCATION_TOLERANCE_S:
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
        samples, _ = decode_with_fallback(path)
        if max_frames is not None:
            samples = samples[:max_frames]
    else:
        samples = _read_soundfile(path, info, max_frames, mono)
    samples, non_finite = sanitize(path, samples)
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
