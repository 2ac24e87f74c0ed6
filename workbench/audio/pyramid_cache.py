"""The disk cache of spectrogram pyramids and waveform envelopes.

Entries live under ``cache_dir()/"pyramids"``, keyed by the file's content hash, the
parameters and the cache format; a cached clip reopens by memory-mapping two ``.npy`` files
(the spectrogram's levels stored time-major, as :mod:`workbench.audio.spectrogram` computes
them). An entry is written to a staging folder and renamed, so a reader never sees half of
one. The cache keeps within a size budget (4 GiB, or ``AGLW_PYRAMID_CACHE_MB``) by dropping
the least recently opened entries.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import numpy as np

from workbench.audio.loader import AudioData, content_hash as file_content_hash
from workbench.audio.spectrogram import SpectrogramParams, SpectrogramPyramid, WaveformEnvelope, build_pyramids
from workbench.config import cache_dir as user_cache_dir

log = logging.getLogger(__name__)

# 2: entries written before iter_blocks ended at the decoder's end may hold a stale tail (MP3s
# without a Xing header); they are recomputed.
# 3: the spectrogram levels are stored time-major, (columns, bins).
_CACHE_FORMAT = 3
# A 140 s clip takes ~25 MB; beyond this budget the least recently opened entries go.
DEFAULT_CACHE_BUDGET_BYTES = 4 << 30


def cached_pyramids(
    content_hash: str, params: SpectrogramParams = SpectrogramParams(), *, cache_dir: Path | None = None
) -> tuple[SpectrogramPyramid, WaveformEnvelope] | None:
    """The cached pyramid and envelope of the file with this content hash, or None if not cached.

    Cached arrays are memory-mapped read-only.
    """
    return _read_cache(_cache_entry(content_hash, params, cache_dir), params)


def _cache_key(content_hash: str, params: SpectrogramParams) -> str:
    text = json.dumps({"hash": content_hash, "params": asdict(params), "format": _CACHE_FORMAT}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _write_cache(entry: Path, pyramid: SpectrogramPyramid, waveform: WaveformEnvelope) -> None:
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    try:
        spec_offsets = np.cumsum([0] + [level.shape[1] for level in pyramid.levels]).tolist()
        # Stored time-major (see _StftAccumulator): a window of columns is one contiguous
        # range of the memory-mapped file, and the computed levels are saved without a transpose.
        np.save(staging / "spectrogram.npy", np.concatenate([np.asarray(level).T for level in pyramid.levels], axis=0))
        wave_offsets = np.cumsum([0] + [level.shape[0] for level in waveform.mins]).tolist()
        np.save(staging / "envelope.npy", np.stack([np.concatenate(waveform.mins), np.concatenate(waveform.maxs)]))
        np.save(staging / "freqs.npy", np.asarray(pyramid.freqs_hz, dtype=np.float64))
        meta = {
            "format": _CACHE_FORMAT,
            "params": asdict(pyramid.params),
            "frame_hop_s": pyramid.frame_hop_s,
            "duration_s": pyramid.duration_s,
            "bucket_s": waveform.bucket_s,
            "spec_offsets": spec_offsets,
            "wave_offsets": wave_offsets,
        }
        (staging / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        try:
            os.replace(staging, entry)
        except OSError:
            # Another process stored the same entry first; theirs is identical.
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _read_cache(entry: Path, params: SpectrogramParams) -> tuple[SpectrogramPyramid, WaveformEnvelope] | None:
    try:
        meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != _CACHE_FORMAT or meta.get("params") != asdict(params):
            return None
        spectrogram = np.load(entry / "spectrogram.npy", mmap_mode="r")
        envelope = np.load(entry / "envelope.npy", mmap_mode="r")
        freqs = np.load(entry / "freqs.npy")
    except (OSError, ValueError, KeyError):
        return None
    so, wo = meta["spec_offsets"], meta["wave_offsets"]
    if spectrogram.ndim != 2 or so[-1] != spectrogram.shape[0] or wo[-1] != envelope.shape[1]:
        return None
    try:
        os.utime(entry / "meta.json")  # marks the entry as recently used for pruning
    except OSError:
        pass
    levels = [spectrogram[a:b].T for a, b in zip(so[:-1], so[1:])]
    pyramid = SpectrogramPyramid(levels, meta["frame_hop_s"], meta["duration_s"], freqs, params)
    waveform = WaveformEnvelope(
        mins=[envelope[0, a:b] for a, b in zip(wo[:-1], wo[1:])],
        maxs=[envelope[1, a:b] for a, b in zip(wo[:-1], wo[1:])],
        bucket_s=meta["bucket_s"],
        duration_s=meta["duration_s"],
    )
    return pyramid, waveform


def prune_cache(cache_dir: Path | None = None, budget_bytes: int | None = None) -> int:
    """Delete the least recently opened pyramid entries until the cache fits its budget.

    Parameters
    ----------
    cache_dir
        The pyramid cache; default ``cache_dir()/"pyramids"``.
    budget_bytes
        Size limit; default ``AGLW_PYRAMID_CACHE_MB`` (in MiB) if set, else 4 GiB.

    Returns
    -------
    int
        Number of entries removed.
    """
    root = cache_dir if cache_dir is not None else user_cache_dir() / "pyramids"
    if budget_bytes is None:
        configured = os.environ.get("AGLW_PYRAMID_CACHE_MB")
        budget_bytes = int(float(configured) * (1 << 20)) if configured else DEFAULT_CACHE_BUDGET_BYTES
    entries: list[tuple[float, int, Path]] = []
    try:
        children = list(root.iterdir())
    except OSError:
        return 0
    for entry in children:
        if entry.name.startswith(".tmp-") or not entry.is_dir():
            continue
        try:
            size = sum(item.stat().st_size for item in entry.iterdir())
            used = (entry / "meta.json").stat().st_mtime
        except OSError:
            used, size = 0.0, 0
        entries.append((used, size, entry))
    total = sum(size for _, size, _ in entries)
    removed = 0
    for _, size, entry in sorted(entries, key=lambda item: item[0]):
        if total <= budget_bytes:
            break
        shutil.rmtree(entry, ignore_errors=True)
        total -= size
        removed += 1
    return removed


def compute_pyramids(
    path_or_audio: str | Path | AudioData,
    params: SpectrogramParams = SpectrogramParams(),
    *,
    cache_dir: Path | None = None,
    content_hash: str | None = None,
    write_behind: bool = False,
    use_cache: bool = True,
) -> tuple[SpectrogramPyramid, WaveformEnvelope]:
    """Spectrogram pyramid and waveform envelope of a clip, from the disk cache when possible.

    Parameters
    ----------
    path_or_audio
        An audio file (streamed in blocks) or already decoded audio.
    params
        STFT and quantisation parameters (part of the cache key).
    cache_dir
        Cache directory; default ``cache_dir()/"pyramids"``.
    content_hash
        The file's SHA-256 (see :func:`workbench.audio.loader.content_hash`). Computed for a
        path when omitted; decoded audio without a hash is not cached.
    write_behind
        Write a new cache entry on a background thread and return at once (the GUI paints
        first). Entries are written to a staging folder and renamed, so a reader never sees
        half an entry; one that is not there yet is simply computed again.
    use_cache
        False: neither read nor write the cache (nor hash the file); see :func:`store_pyramids`.

    Returns
    -------
    tuple[SpectrogramPyramid, WaveformEnvelope]
        Cached results are memory-mapped read-only arrays.

    Raises
    ------
    AudioError
        If the file cannot be decoded.
    """
    if not use_cache:
        return build_pyramids(path_or_audio, params)
    if content_hash is None and not isinstance(path_or_audio, AudioData):
        content_hash = file_content_hash(path_or_audio)
    if content_hash is None:
        return build_pyramids(path_or_audio, params)
    cached = _read_cache(_cache_entry(content_hash, params, cache_dir), params)
    if cached is not None:
        return cached
    pyramid, waveform = build_pyramids(path_or_audio, params)
    store_pyramids(content_hash, pyramid, waveform, cache_dir=cache_dir, write_behind=write_behind)
    return pyramid, waveform


def _cache_entry(content_hash: str, params: SpectrogramParams, cache_dir: Path | None) -> Path:
    return (cache_dir if cache_dir is not None else user_cache_dir() / "pyramids") / _cache_key(content_hash, params)


def store_pyramids(
    content_hash: str,
    pyramid: SpectrogramPyramid,
    waveform: WaveformEnvelope,
    *,
    cache_dir: Path | None = None,
    write_behind: bool = False,
) -> None:
    """Cache pyramids computed with ``use_cache=False`` under the file's content hash.

    An entry already there and readable is kept. With ``write_behind`` the entry is written
    on the cache's background thread (see :func:`compute_pyramids`).
    """
    entry = _cache_entry(content_hash, pyramid.params, cache_dir)
    if write_behind:
        _cache_writer().submit(_store_in_cache, entry, pyramid, waveform)
    else:
        _store_in_cache(entry, pyramid, waveform)


_background: dict[str, ThreadPoolExecutor] = {}
_background_lock = threading.Lock()


def background_thread(name: str) -> ThreadPoolExecutor:
    """The process's one background thread called ``name``, started on first use.

    Work submitted to it runs in order; it is joined at interpreter exit.
    """
    with _background_lock:
        if name not in _background:
            _background[name] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        return _background[name]


def _cache_writer() -> ThreadPoolExecutor:
    """The one background thread that writes cache entries."""
    return background_thread("aglw-cache-write")


def wait_for_cache_writes() -> None:
    """Block until every cache entry submitted with ``write_behind`` is on disk."""
    _cache_writer().submit(lambda: None).result()


def _store_in_cache(entry: Path, pyramid: SpectrogramPyramid, waveform: WaveformEnvelope) -> None:
    if entry.exists() and _read_cache(entry, pyramid.params) is not None:
        return  # stored meanwhile (another window or process): identical
    if entry.exists():
        # Unreadable or from an older cache format: replace it.
        shutil.rmtree(entry, ignore_errors=True)
    try:
        _write_cache(entry, pyramid, waveform)
        prune_cache(entry.parent)
    except OSError as exc:
        # A read-only or full cache must not stop the clip from opening.
        log.warning("could not cache pyramids in %s: %s", entry, exc)
