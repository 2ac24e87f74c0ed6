"""Blind audio for the study page: a clip's recording decoded and re-encoded without any tag.

The AGL1K file names and ID3 titles name the place ("Battlements and Muezzin / Ancien Médina,
Essaouira, Maroc"), so the study page never serves a recording as shipped (design/web-study.md,
"Blinding, stated as a test"). Each clip is decoded through the project's loader, from the file
:func:`workbench.media.audio_statuses` finds under its dataset's media roots, and written again:

- **Codec: Ogg Vorbis, quality 6** (libsndfile's ``compression_level`` 0.4; the stream header's
  nominal bit rate is 192 kb/s for 44.1 kHz stereo, 71 kb/s for 16 kHz mono). Vorbis keeps any sample
  rate, where libsndfile's Opus takes only 8/12/16/24/48 kHz and would resample the 44.1 kHz
  recordings. Chromium (tested: tests/web/test_blind_audio.py) and Firefox play it. q6 is chosen so that the inter-aural level and time
  differences that stereo and binaural recordings carry survive: libvorbis codes stereo losslessly
  coupled from about q6 up, lower settings may merge high bands into point stereo (the tests check
  that the channels' difference keeps its level on the real recordings).
- **And MP3 for the browsers without Ogg** (Safari before 18.4, every iOS browser): the page lists
  both (``<source>`` elements, Ogg first) and the browser takes the first it can play. LAME through
  libsndfile, VBR at its best setting (``compression_level`` 0: about 245 kb/s for stereo), no ID3
  tag (only LAME's own "LAME3.100" frame, the same for every clip). MP3 takes 8 to 48 kHz: a
  recording above 48 kHz is resampled to 48 kHz (soxr) for this fallback only.
- **Channels and sample rate kept**: stereo and binaural cues are clues to the place.
- **FOA clips (ambiX, FuMa) are served as their binaural render** through the cockpit's decoder
  (:func:`workbench.audio.binaural.make_decoder`, the spherical-head model, yaw 0): 2 channels.
- **No metadata.** libsndfile writes a Vorbis comment ``ENCODER=libsndfile``; it is removed
  (:func:`strip_vorbis_comments`), leaving only the library's mandatory vendor string
  ("Xiph.Org libVorbis I 20200704"), the same for every clip. No title, artist or file name.
- **The same transcode for every participant**: one file per (source content, transcode
  version), cached by the SHA-256 of the source's bytes (:func:`workbench.audio.digests.file_digest`).
  The cache's file names hold that hash and never leave the server: the page addresses audio by
  opaque item ids.
- **Atomic**: written to a temporary file in the cache folder, then linked into place; the first
  finished writer wins and a racing one discards its copy (two processes never leave a half file
  or swap the bytes under a reader).

A level above full scale (a float WAV, or a binaural render's sum) is scaled down to a peak of
0.99 rather than clipped by the encoder.
"""

from __future__ import annotations

import functools
import os
import struct
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from workbench.errors import InputError

if TYPE_CHECKING:
    from storage import Store
    from workbench.tasks import TaskContext

VORBIS_QUALITY = 6  # of -1..10


@dataclass(frozen=True)
class AudioFormat:
    """One codec the page may ask for: its media type, the cache file's suffix, libsndfile's format
    and subtype, the encoder's setting, and the version that is part of every cache name (a changed
    transcode is a new file, never a stale one served)."""

    name: str
    media_type: str
    suffix: str
    sf_format: str
    sf_subtype: str
    compression_level: float
    version: str


# libsndfile's knob for Vorbis is the inverse of its quality: compression 0.4 = quality 0.6 (q6);
# for MP3 it is LAME's VBR quality, 0 the best.
OGG = AudioFormat("ogg", "audio/ogg", ".ogg", "OGG", "VORBIS", 1.0 - VORBIS_QUALITY / 10, "vorbis-q6-v1")
MP3 = AudioFormat("mp3", "audio/mpeg", ".mp3", "MP3", "MPEG_LAYER_III", 0.0, "mp3-vbr0-v1")
FORMATS = {f.name: f for f in (OGG, MP3)}
MP3_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)
FOA_LAYOUTS = ("ambix", "fuma")
_PEAK = 0.99
_BLOCK_FRAMES = 1 << 16

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@dataclass(frozen=True)
class BlindAudio:
    """One clip's blind transcode in the cache."""

    path: Path  # the cached file (server-side only: its name holds the source's hash)
    media_type: str
    sha256: str  # of the served bytes (an ETag)
    size: int  # bytes
    channels: int
    sample_rate: int
    frames: int
    quality: int  # Vorbis quality setting (0 for the MP3: LAME's best VBR has no such number)
    nominal_kbps: int  # from the Vorbis stream header (0 for MP3: VBR has none)
    bitrate_kbps: float  # measured: bytes over duration
    rendered_binaural: bool  # an FOA clip served as its binaural render

    @property
    def duration_s(self) -> float:
        return self.frames / self.sample_rate if self.sample_rate else 0.0


# (source stat, variant, cache folder) -> the transcode served, and its file's stat when described
_SERVED_MEMO_SIZE = 4096
_served: dict[tuple, BlindAudio] = {}
_served_stat: dict[tuple, tuple[str, int, int] | None] = {}


def default_cache_dir() -> Path:
    """Where ``aglw serve`` keeps the transcodes: the user cache (``AGLW_CACHE_DIR`` overrides)."""
    from workbench.config import cache_dir

    return cache_dir() / "blind-audio"


def _key_lock(name: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(name, threading.Lock())


def blind_audio(source: Path, cache_dir: Path, *, layout: str | None, audio_format: AudioFormat = OGG) -> BlindAudio:
    """The blind transcode of ``source`` (made once, then found in ``cache_dir``).

    Parameters
    ----------
    source
        The recording (any format the loader decodes).
    cache_dir
        The transcode cache (created if missing).
    layout
        The clip's channel layout; ``ambix``/``fuma`` is served as its binaural render.
    audio_format
        :data:`OGG` (what the page offers first) or :data:`MP3` (its fallback).

    Raises
    ------
    AudioError
        The source cannot be decoded (the loader's one line).
    InputError
        The cache folder cannot be written.
    """
    from workbench.audio.digests import file_digest

    source = Path(source)
    render = (layout or "").lower() in FOA_LAYOUTS
    version = audio_format.version
    variant = f"{version}-{layout.lower()}-binaural" if render and layout else version
    memo_key = (_stat(source), variant, str(cache_dir))
    known = _served.get(memo_key)
    if known is not None and _stat(known.path) == _served_stat.get(memo_key):
        return known  # every request of the page asks: a stat of both files instead of a header read
    name = f"{file_digest(source)}-{variant}{audio_format.suffix}"
    target = Path(cache_dir) / name
    with _key_lock(str(target)):
        if not target.is_file():
            try:
                Path(cache_dir).mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"{cache_dir}: cannot create the audio cache ({exc.strerror or exc}); "
                                 "check the folder's permissions") from exc
            _transcode(source, target, layout if render else None, audio_format)
        out = describe(target, rendered_binaural=render, audio_format=audio_format)
    with _locks_guard:
        if len(_served) >= _SERVED_MEMO_SIZE:
            _served.clear()
            _served_stat.clear()
        _served[memo_key] = out
        _served_stat[memo_key] = _stat(target)
    return out


def _stat(path: Path) -> tuple[str, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (str(path), info.st_size, info.st_mtime_ns)


def blind_audio_for_clip(store: Store, clip_id: int, cache_dir: Path, audio_format: AudioFormat = OGG) -> BlindAudio:
    """The blind transcode of a clip's recording, found under its dataset's media roots.

    Raises
    ------
    InputError
        The clip is unknown or has no playable audio (the media rule's message says what to do).
    """
    from sqlalchemy import select

    from storage import tables as T
    from workbench.audio.layout import detect_layout
    from workbench.media import clip_audio, dataset_roots

    c = T.clip.c
    with store.read() as connection:
        row = connection.execute(select(c.key, c.audio_path, c.dataset_id, c.layout, c.layout_override,
                                        c.n_channels, c.description).where(c.id == int(clip_id))).first()
    if row is None:
        raise InputError(f"clip id {clip_id}: no such clip in this project")
    # the one media rule (workbench.media): a file under the clip's dataset's media roots
    status = clip_audio(row.key, row.audio_path, dataset_roots(store).get(row.dataset_id, []))
    if not status.ok or status.path is None:
        raise InputError(status.message or f"clip id {clip_id}: no playable audio")
    layout = row.layout_override or row.layout
    if not layout:
        n_channels = row.n_channels or _channels(status.path, _stat(status.path))
        layout = detect_layout(n_channels, row.description)
    return blind_audio(status.path, cache_dir, layout=layout, audio_format=audio_format)


@functools.lru_cache(maxsize=4096)
def _channels(path: Path, stat: tuple[str, int, int] | None) -> int:
    """A file's channel count, read once per (path, size, mtime): a clip not analysed has none stored."""
    from workbench.audio.loader import audio_info

    return audio_info(path).n_channels


def warm_cache(store: Store, clip_ids: list[int], cache_dir: Path,
               task: TaskContext | None = None) -> dict[int, BlindAudio]:
    """Transcode every clip not yet in the cache (``aglw serve`` calls it before listening).

    Each clip is one item of ``task`` (both formats the page offers); one that fails (no audio, an
    undecodable file) is a failed item with its reason, and the others go on. Returns clip id -> its
    Ogg transcode.
    """
    from workbench.errors import AglwError
    from workbench.tasks import TaskContext

    task = task or TaskContext()
    task.set_total(len(clip_ids))
    out: dict[int, BlindAudio] = {}
    for clip_id in clip_ids:
        try:
            out[int(clip_id)] = blind_audio_for_clip(store, int(clip_id), cache_dir)
            blind_audio_for_clip(store, int(clip_id), cache_dir, MP3)
        except AglwError as exc:
            task.item_done(str(clip_id), ok=False, error=str(exc))
            continue
        task.item_done(str(clip_id))
    return out


def _level(samples: np.ndarray) -> np.ndarray:
    peak = float(np.max(np.abs(samples))) if samples.size else 0.0
    if peak > 1.0:
        return (samples * (_PEAK / peak)).astype(np.float32)
    return samples.astype(np.float32, copy=False)


def _decoded(source: Path, foa_layout: str | None) -> tuple[np.ndarray, int]:
    from workbench.audio.loader import load_audio

    audio = load_audio(source)
    samples = audio.samples
    if foa_layout is not None:
        if samples.shape[1] != 4:
            raise InputError(f"{source}: layout {foa_layout} needs 4 channels, the file has {samples.shape[1]}; "
                             "fix the clip's layout override")
        from workbench.audio.direction import fuma_to_ambix
        from workbench.audio.binaural import make_decoder

        foa = fuma_to_ambix(samples) if foa_layout == "fuma" else samples
        samples = make_decoder(audio.sample_rate).render(foa)
    return _level(samples), audio.sample_rate


def _mp3_rate(rate: int) -> int:
    """The rate an MP3 can hold: the recording's own where MP3 has it, else the next one up (48 kHz at most)."""
    return next((r for r in MP3_RATES if r >= rate), MP3_RATES[-1])


def _transcode(source: Path, target: Path, foa_layout: str | None, audio_format: AudioFormat = OGG) -> None:
    import soundfile as sf

    samples, rate = _decoded(source, foa_layout)
    if audio_format is MP3 and _mp3_rate(rate) != rate:
        import soxr

        new_rate = _mp3_rate(rate)
        samples, rate = _level(soxr.resample(samples, rate, new_rate).astype(np.float32)), new_rate
    handle, staging_name = tempfile.mkstemp(prefix=".partial-", suffix=audio_format.suffix, dir=target.parent)
    os.close(handle)
    staging = Path(staging_name)
    try:
        with sf.SoundFile(str(staging), "w", samplerate=rate, channels=samples.shape[1], format=audio_format.sf_format,
                          subtype=audio_format.sf_subtype, compression_level=audio_format.compression_level) as out:
            for start in range(0, samples.shape[0], _BLOCK_FRAMES):
                out.write(samples[start:start + _BLOCK_FRAMES])
        if audio_format is OGG:
            strip_vorbis_comments(staging)  # the MP3 has no tag to strip: libsndfile writes no ID3
        os.chmod(staging, 0o644)
        try:
            # First finished writer wins; a racing copy is dropped, so bytes never change under a reader.
            os.link(staging, target)
        except FileExistsError:
            pass
        except OSError:
            os.replace(staging, target)  # a file system without hard links: replace is atomic too
    except OSError as exc:
        raise InputError(f"{target.parent}: cannot write the audio cache ({exc.strerror or exc}); "
                         "check free space and the folder's permissions") from exc
    finally:
        staging.unlink(missing_ok=True)


def describe(path: Path, *, rendered_binaural: bool = False, audio_format: AudioFormat = OGG) -> BlindAudio:
    """What a cached transcode is (header fields, measured bit rate, the digest of its bytes)."""
    import soundfile as sf

    from workbench.audio.digests import file_digest

    info = sf.info(str(path))
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(4096)
    at = head.find(b"\x01vorbis")
    nominal = struct.unpack_from("<i", head, at + 7 + 4 + 1 + 4 + 4)[0] if at >= 0 else 0
    duration = info.frames / info.samplerate if info.samplerate else 0.0
    return BlindAudio(
        path=path, media_type=audio_format.media_type, sha256=file_digest(path), size=size, channels=int(info.channels),
        sample_rate=int(info.samplerate), frames=int(info.frames),
        quality=VORBIS_QUALITY if audio_format is OGG else 0,
        nominal_kbps=round(nominal / 1000), bitrate_kbps=size * 8 / duration / 1000 if duration else 0.0,
        rendered_binaural=rendered_binaural,
    )


# --- removing the Vorbis comment ----------------------------------------------------------------

def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7) if crc & 0x80000000 else crc << 1
        table.append(crc & 0xFFFFFFFF)
    return table


_CRC = _crc_table()


def ogg_crc(data: bytes) -> int:
    """The Ogg page checksum (CRC-32, polynomial 0x04C11DB7, unreflected, no final xor)."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[((crc >> 24) ^ byte) & 0xFF]
    return crc


def _page(data: bytes, at: int) -> tuple[bytes, list[int], int]:
    """(27-byte header, lacing values, offset after the page) of the Ogg page at ``at``."""
    if data[at:at + 4] != b"OggS":
        raise ValueError(f"no Ogg page at byte {at}")
    header = data[at:at + 27]
    n_segments = header[26]
    lacing = list(data[at + 27:at + 27 + n_segments])
    return header, lacing, at + 27 + n_segments + sum(lacing)


def strip_vorbis_comments(path: Path) -> None:
    """Rewrite the Vorbis comment packet with no comments (the vendor string stays, as the format needs).

    libvorbis puts the comment packet first on the second page, whole; only that page changes
    (its lacing, body and checksum), so every later page, and the page sequence, stays as written.
    """
    data = path.read_bytes()
    _, _, second = _page(data, 0)
    header, lacing, end = _page(data, second)
    body_at = second + 27 + len(lacing)
    if header[5] & 0x01 or data[body_at:body_at + 7] != b"\x03vorbis":
        raise ValueError(f"{path}: the Vorbis comment is not at the start of the second page")
    n_segments = next(i for i, value in enumerate(lacing) if value < 255) + 1
    packet_len = sum(lacing[:n_segments])
    packet = data[body_at:body_at + packet_len]
    (vendor_len,) = struct.unpack_from("<I", packet, 7)
    vendor = packet[11:11 + vendor_len]
    bare = b"\x03vorbis" + struct.pack("<I", vendor_len) + vendor + struct.pack("<I", 0) + b"\x01"
    new_lacing = [255] * (len(bare) // 255) + [len(bare) % 255] + lacing[n_segments:]
    if len(new_lacing) > 255:
        raise ValueError(f"{path}: the rewritten comment page would exceed 255 segments")
    body = bare + data[body_at + packet_len:end]
    page = bytearray(header[:22] + b"\0\0\0\0" + bytes([len(new_lacing)]) + bytes(new_lacing) + body)
    page[22:26] = struct.pack("<I", ogg_crc(bytes(page)))
    path.write_bytes(data[:second] + bytes(page) + data[end:])
