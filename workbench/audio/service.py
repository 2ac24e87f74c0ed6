"""Audio services: analyse a file, store a clip's properties and quality (the pool step's one
writer), the pool-relative quality flags, open a clip without the GUI (one decode feeds the
spectrogram pyramid, the direction map and playback)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlmodel import select

from storage import Store
from storage.models import Clip, ClipQuality
from workbench.audio.layout import detect_layout
from workbench.audio.loader import content_hash, load_audio
from workbench.audio.opening import OpenedAudio, open_audio
from workbench.audio.quality import (
    DEFAULT_THRESHOLDS,
    QualityMetrics,
    QualityThresholds,
    aci_percentile,
    quality_flags,
    quality_metrics,
)
from workbench.audio.pyramid_cache import cached_pyramids, store_pyramids
from workbench.audio.spectrogram import SpectrogramParams, SpectrogramPyramid, WaveformEnvelope

_hash_file = content_hash  # open_clip's parameter of the same name would hide it


def analyze_file(path: str | Path, *, layout: str | None = None, description: str | None = None) -> dict:
    """Decode one file and describe it (the ``aglw analyze`` command).

    Parameters
    ----------
    path
        The audio file.
    layout
        Layout override (wins over detection).
    description
        Metadata text used by layout detection (e.g. "binaural").

    Returns
    -------
    dict
        ``path``, ``duration_s``, ``sample_rate``, ``n_channels``, ``layout``, ``format``,
        ``subtype``, ``quality`` (``rms_dbfs``, ``spectral_flatness``, ``clipping_ratio``,
        ``aci``), ``flags`` (without the pool-relative ACI filter: one file has no pool) and
        ``non_finite_samples``.

    Raises
    ------
    AudioError
        If the file cannot be used.
    InputError
        If ``layout`` is not a known layout.
    """
    # Metrics use the mono mix only; mixing while loading keeps memory to one channel.
    audio = load_audio(path, mono=True)
    metrics = quality_metrics(audio.samples, audio.sample_rate)
    return {
        "path": str(audio.info.path),
        "duration_s": audio.samples.shape[0] / audio.sample_rate,
        "sample_rate": audio.sample_rate,
        "n_channels": audio.info.n_channels,
        "layout": detect_layout(audio.info.n_channels, description, override=layout),
        "format": audio.info.format,
        "subtype": audio.info.subtype,
        "quality": metrics.as_dict(),
        "flags": quality_flags(metrics, aci_p2=None),
        "non_finite_samples": audio.non_finite_samples,
    }


def write_clip_analysis(
    session: Any, clip_id: int, *, sample_rate: int, n_channels: int, duration_s: float, layout: str,
    content_hash: str, metrics: QualityMetrics,
) -> bool:
    """Store one clip's audio properties and quality metrics in ``session`` (the caller's transaction).

    The one writer of :class:`~storage.models.ClipQuality`: a single clip's analysis and the pool
    step (``aglw analyze-pool``, either engine) both store through it. Upserts by clip, so storing
    the same result twice leaves one row. Returns False when the clip no longer exists.
    """
    row = session.get(Clip, clip_id)
    if row is None:
        return False
    row.sample_rate = sample_rate
    row.n_channels = n_channels
    row.duration_s = duration_s
    row.layout = layout
    row.content_hash = content_hash
    session.add(row)
    quality = session.exec(select(ClipQuality).where(ClipQuality.clip_id == clip_id)).first() or ClipQuality(clip_id=clip_id)
    # SQL has no infinity: digital silence is stored as NULL rms and read back as -inf.
    quality.rms_dbfs = metrics.rms_dbfs if metrics.rms_dbfs > float("-inf") else None
    quality.spectral_flatness = metrics.spectral_flatness
    quality.clipping_ratio = metrics.clipping_ratio
    quality.aci = metrics.aci
    quality.content_hash = content_hash
    session.add(quality)
    return True


def pool_quality_flags(store: Store, thresholds: QualityThresholds = DEFAULT_THRESHOLDS) -> dict[int, list[str]]:
    """Quality flags of every analysed clip, the ACI filter relative to the pool's 2nd percentile.

    Returns
    -------
    dict[int, list[str]]
        clip id -> flag names (see :func:`~workbench.audio.quality.quality_flags`).
    """
    with store.session() as s:
        rows = s.exec(select(ClipQuality)).all()
    aci_p2 = aci_percentile([row.aci for row in rows if row.aci is not None])
    flags: dict[int, list[str]] = {}
    for row in rows:
        metrics = QualityMetrics(
            rms_dbfs=row.rms_dbfs if row.rms_dbfs is not None else float("-inf"),
            spectral_flatness=row.spectral_flatness or 0.0,
            clipping_ratio=row.clipping_ratio or 0.0,
            aci=row.aci if row.aci is not None else 0.0,
        )
        flags[row.clip_id] = quality_flags(metrics, aci_p2, thresholds)
    return flags


# What open_clip returns: one decode's playback buffer, pyramids and direction analysis
# (see workbench.audio.opening.OpenedAudio).
OpenedClip = OpenedAudio


def has_second_core() -> bool:
    """Whether this process may run on two or more cores (its CPU affinity, else the core count).

    The machine's load is deliberately not consulted: the 1-minute load average mostly reflects
    the workbench's own recent work (the previous clip it opened), and on a busy machine running
    side by side costs only a few percent against halving the wait on a free one.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores >= 2


def open_clip(
    path: str | Path,
    *,
    layout: str | None = None,
    spacing_m: float | None = None,
    params: SpectrogramParams = SpectrogramParams(),
    cache_dir: Path | None = None,
    content_hash: str | None = None,
    use_cache: bool = True,
    parallel: bool | None = None,
    write_behind: bool = False,
) -> OpenedClip:
    """Open a clip without the GUI: decode, spectrogram pyramid, waveform envelope, direction map.

    The file is decoded once (:func:`workbench.audio.opening.open_audio`): the playback
    buffer, the spectrogram pyramid and the direction analysis are fed from the same blocks
    as they arrive, the pyramid on this thread and the direction analysis on another (both
    spend their time in numpy/scipy code that releases the GIL). A pyramid already in the
    cache is read from it instead; a new one is written to it.

    Parameters
    ----------
    path
        The audio file.
    layout
        Layout for the direction map (``binaural``, ``ab``, ``xy``, ``ms``, ``stereo``, ``ambix``,
        ``fuma``); detected from the channel count when None.
    spacing_m
        Microphone spacing for ``ab``.
    params
        Spectrogram parameters.
    cache_dir
        Pyramid cache directory (default: the user cache).
    content_hash
        The file's SHA-256 when known (e.g. stored with the clip); hashed here otherwise.
    use_cache
        Read and write the pyramid cache.
    parallel
        Analyse the direction on a second thread beside the spectrogram (at a lower
        scheduling priority: ``spectrogram_first`` of :func:`~workbench.audio.opening.open_audio`),
        or on the calling thread. None (default): side by side when the process has a second
        core (:func:`has_second_core`).
    write_behind
        Write a new cache entry on the cache's background thread, as the review window does,
        and return without waiting for it (:func:`~workbench.audio.pyramid_cache.wait_for_cache_writes`
        waits); False: it is on disk when this returns.

    Returns
    -------
    OpenedClip
        Samples for playback, pyramid, envelope, direction analysis and stage timings
        (``hash`` too when the cache was used, and ``cache_write`` when a new entry was
        written before returning).

    Raises
    ------
    AudioError
        If the file cannot be decoded.
    """
    path = Path(path)
    if parallel is None:
        parallel = has_second_core()
    extra: dict[str, float] = {}
    file_hash: str | None = None
    cached = None
    if use_cache:
        began = time.perf_counter()
        file_hash = content_hash if content_hash is not None else _hash_file(path)
        cached = cached_pyramids(file_hash, params, cache_dir=cache_dir)
        extra["hash"] = time.perf_counter() - began

    def store(pyramid: SpectrogramPyramid, envelope: WaveformEnvelope) -> None:
        # Written while the direction analysis finishes on its thread; behind, only once the
        # clip is handed over, so that writing never competes with the end of the analysis.
        if file_hash is not None and cached is None and not write_behind:
            began = time.perf_counter()
            store_pyramids(file_hash, pyramid, envelope, cache_dir=cache_dir)
            extra["cache_write"] = time.perf_counter() - began

    # The direction thread at a lower priority: on two cores the decoder keeps one to itself and
    # the direction analysis takes what the spectrogram leaves of the other (on an idle 2-core
    # machine the P1 MP3 opened in 1.23 × its decode-only time, 1.34 × with three equal threads).
    opened = open_audio(
        path, layout=layout, spacing_m=spacing_m, params=params, cached=cached, parallel=parallel,
        spectrogram_first=True, on_spectrogram=store,
    )
    if file_hash is not None and cached is None and write_behind:
        store_pyramids(file_hash, opened.pyramid, opened.envelope, cache_dir=cache_dir, write_behind=True)
    opened.timings.update(extra)
    return opened
