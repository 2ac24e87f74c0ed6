"""Audio services: analyse a file, store a clip's properties and quality (the pool step's one
writer), the pool-relative quality flags. Opening a clip for the player is
:mod:`workbench.audio.clip_open`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import select

from storage import Store
from storage.models import Clip, ClipQuality
from workbench.audio.layout import detect_layout
from workbench.audio.loader import load_audio
from workbench.audio.quality import (
    DEFAULT_THRESHOLDS,
    QualityMetrics,
    QualityThresholds,
    quality_flags,
    quality_metrics,
)


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
    """Quality flag names of every analysed clip now, as the one owner says
    (:func:`workbench.audio.flags.quality_flags_now`: the ACI filter relative to the project's pool).

    Returns
    -------
    dict[int, list[str]]
        clip id -> flag names (empty for an analysed clip that passes).
    """
    from workbench.audio.flags import quality_flags_now

    now = quality_flags_now(store, thresholds)
    return {clip: list(now.names(clip)) for clip in now.measured}
