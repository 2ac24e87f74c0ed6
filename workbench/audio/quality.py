"""Acoustic quality metrics and the curation filters built on them (curation-model.md §1).

Metrics are computed on the mono mix at the native sample rate:

- RMS level in dBFS (full-scale sine = -3.01 dBFS; digital silence = -inf);
- mean spectral flatness as librosa computes it with its defaults (power spectrum, n_fft 2048,
  hop 512, floor 1e-10), averaged over frames: ~0 for a tone, ~0.56 for white noise, 1 for
  digital silence;
- clipping ratio: fraction of mono-mix samples with ``|x| >= 0.999``;
- Acoustic Complexity Index as scikit-maad computes it (amplitude spectrogram, 1024-sample
  Hann windows, sum over bins). Digital silence has ACI 0 (no activity), where the formula
  itself would divide 0 by 0.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy inside the functions: `aglw clips show` reads quality_flags without it
    import numpy as np

CLIPPING_LEVEL = 0.999


@dataclass
class QualityMetrics:
    """Per-clip acoustic quality metrics."""

    rms_dbfs: float
    spectral_flatness: float
    clipping_ratio: float
    aci: float

    def as_dict(self) -> dict[str, float]:
        """The metrics as a plain mapping (for JSON and storage)."""
        return asdict(self)


# Below this many clips with a measured ACI the pool-relative flag (low_complexity) is not raised:
# the 2nd percentile of 4 clips is the quietest clip whatever it sounds like (issue 40).
MIN_RELATIVE_POOL = 50


@dataclass(frozen=True)
class QualityThresholds:
    """Drop thresholds: a clip is flagged when a metric is on the wrong side; the ACI cut-off is the
    pool's ``aci_percentile``-th percentile, raised only in a pool of at least ``min_relative_pool``
    clips with a measured ACI."""

    min_rms_dbfs: float = -50.0
    max_spectral_flatness: float = 0.5
    max_clipping_ratio: float = 0.001
    aci_percentile: float = 2.0
    min_relative_pool: int = MIN_RELATIVE_POOL


DEFAULT_THRESHOLDS = QualityThresholds()


def _mono_mix(samples: np.ndarray) -> np.ndarray:
    import numpy as np

    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim == 2:
        return samples.mean(axis=1, dtype=np.float32) if samples.shape[1] > 1 else samples[:, 0]
    if samples.ndim == 1:
        return samples
    raise ValueError(f"samples must be 1-D or (frames, channels), got shape {samples.shape}")


def _spectral_flatness(mono: np.ndarray) -> float:
    import librosa
    import numpy as np

    if mono.size < 2048:
        mono = np.pad(mono, (0, 2048 - mono.size))
    return float(np.mean(librosa.feature.spectral_flatness(y=mono)))


def _aci(mono: np.ndarray, sample_rate: int) -> float:
    import numpy as np
    from maad import features, sound

    if not np.any(mono):
        return 0.0
    if mono.size < 2048:
        mono = np.pad(mono, (0, 2048 - mono.size))
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        # maad divides by per-bin sums; bins with no energy give 0/0, dropped below.
        warnings.simplefilter("ignore", RuntimeWarning)
        amplitude, *_ = sound.spectrogram(mono.astype(np.float64), sample_rate, nperseg=1024, mode="amplitude")
        _, per_bin, _ = features.acoustic_complexity_index(amplitude)
    return float(np.nansum(per_bin))


def quality_metrics(samples: np.ndarray, sample_rate: int) -> QualityMetrics:
    """Compute the quality metrics of one clip.

    Parameters
    ----------
    samples
        Float samples, 1-D or shaped (frames, channels); channels are averaged.
    sample_rate
        Native sample rate in Hz.

    Returns
    -------
    QualityMetrics
        ``rms_dbfs`` is ``-inf`` for digital silence; other metrics are finite.
    """
    import numpy as np

    mono = _mono_mix(samples)
    if mono.size == 0:
        return QualityMetrics(rms_dbfs=-math.inf, spectral_flatness=0.0, clipping_ratio=0.0, aci=0.0)
    mean_square = float(np.mean(np.square(mono, dtype=np.float64)))
    rms_dbfs = 10.0 * math.log10(mean_square) if mean_square > 0 else -math.inf
    clipping_ratio = float(np.count_nonzero(np.abs(mono) >= CLIPPING_LEVEL)) / mono.size
    flatness, aci = _spectral_flatness(mono), _aci(mono, sample_rate)
    return QualityMetrics(
        rms_dbfs=rms_dbfs,
        spectral_flatness=flatness,
        clipping_ratio=clipping_ratio,
        aci=aci,
    )


# The four filters of curation-model.md section 1, by the names every output uses.
QUALITY_FLAGS: tuple[str, ...] = ("low_level", "flat_spectrum", "clipping", "low_complexity")


def stored_flag_name(flag: object) -> str:
    """The name of one entry of a stored ``quality_flags`` list: a ``{"flag": ...}`` dict (with its
    cut-off and pool) or, in fits stored before those were kept, the bare name."""
    if isinstance(flag, dict):
        return str(flag.get("flag") or flag.get("name") or flag)
    return str(flag)


def aci_percentile(pool_aci: np.ndarray | list[float], percentile: float = 2.0) -> float | None:
    """The pool's ACI percentile used as the low-complexity cut (``None`` for an empty pool)."""
    import numpy as np

    values = np.asarray(pool_aci, dtype=np.float64)
    values = values[np.isfinite(values)]
    return float(np.percentile(values, percentile)) if values.size else None


def quality_flags(
    metrics: QualityMetrics,
    aci_p2: float | None,
    thresholds: QualityThresholds = DEFAULT_THRESHOLDS,
) -> list[str]:
    """Names of the quality filters a clip fails.

    Parameters
    ----------
    metrics
        The clip's metrics.
    aci_p2
        The pool's 2nd-percentile ACI (see :func:`aci_percentile`); ``None`` skips that filter.
    thresholds
        Drop thresholds (defaults from curation-model.md §1).

    Returns
    -------
    list[str]
        A subset of ``low_level``, ``flat_spectrum``, ``clipping``, ``low_complexity`` in that order.
    """
    flags: list[str] = []
    if metrics.rms_dbfs < thresholds.min_rms_dbfs:
        flags.append("low_level")
    if metrics.spectral_flatness > thresholds.max_spectral_flatness:
        flags.append("flat_spectrum")
    if metrics.clipping_ratio > thresholds.max_clipping_ratio:
        flags.append("clipping")
    if aci_p2 is not None and metrics.aci < aci_p2:
        flags.append("low_complexity")
    return flags


def _finite(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def relative_pool(n_measured: int, value_at: Callable[[int], float], thresholds: QualityThresholds = DEFAULT_THRESHOLDS,
                  *, what: str) -> dict[str, Any]:
    """The pool a ``low_complexity`` cut-off is relative to, and that cut-off.

    Parameters
    ----------
    n_measured
        How many clips of the pool have a measured (finite) ACI.
    value_at
        The k-th smallest of those ACIs (0-based): the cut-off reads two of them, so a caller
        with a database asks it for two rows instead of reading every clip.
    thresholds, what
        As :func:`pool_flags`.

    Returns
    -------
    dict
        ``clips``, ``percentile``, ``cut_off`` (numpy's default, linear percentile; None when not
        raised), ``minimum``, ``raised``, ``what`` and ``why_not`` (why not raised, else None).
    """
    raised = n_measured >= max(1, thresholds.min_relative_pool)
    cut_off = None
    if raised:
        position = (n_measured - 1) * thresholds.aci_percentile / 100.0
        low = math.floor(position)
        low_value = value_at(low)
        high_value = value_at(low + 1) if low + 1 < n_measured else low_value
        cut_off = low_value + (high_value - low_value) * (position - low)
    why_not = None
    if not raised:
        why_not = (f"low_complexity not raised: {n_measured} {what}, fewer than the {thresholds.min_relative_pool} "
                   f"its cut-off needs (percentile {thresholds.aci_percentile:g} of a small pool flags its "
                   "quietest clip whatever it sounds like)")
    return {"clips": n_measured, "percentile": float(thresholds.aci_percentile), "cut_off": cut_off,
            "minimum": int(thresholds.min_relative_pool), "raised": raised, "what": what, "why_not": why_not}


_METRICS = (("rms_dbfs", "low_level"), ("spectral_flatness", "flat_spectrum"), ("clipping_ratio", "clipping"),
            ("aci", "low_complexity"))


def clip_flags(values: tuple[float | None, float | None, float | None, float | None], pool: dict[str, Any],
               thresholds: QualityThresholds = DEFAULT_THRESHOLDS) -> list[dict[str, Any]]:
    """The flags of one clip of ``pool`` (:func:`relative_pool`): ``values`` are its (rms_dbfs,
    spectral_flatness, clipping_ratio, aci); see :func:`pool_flags`."""
    limits = {"low_level": thresholds.min_rms_dbfs, "flat_spectrum": thresholds.max_spectral_flatness,
              "clipping": thresholds.max_clipping_ratio, "low_complexity": pool["cut_off"]}
    flags: list[dict[str, Any]] = []
    for (metric, name), raw in zip(_METRICS, values):
        value, limit = _finite(raw), limits[name]
        if value is None or limit is None:
            continue
        below = name in ("low_level", "low_complexity")
        if (value < limit) if below else (value > limit):
            flag: dict[str, Any] = {"flag": name, "metric": metric, "value": value, "threshold": float(limit)}
            if name == "low_complexity":
                flag["pool"] = {k: pool[k] for k in ("clips", "percentile", "cut_off", "minimum", "what")}
            flags.append(flag)
    return flags


def pool_flags(
    rows: dict[Any, tuple[float | None, float | None, float | None, float | None]],
    thresholds: QualityThresholds = DEFAULT_THRESHOLDS,
    *,
    what: str,
) -> tuple[dict[Any, list[dict[str, Any]]], dict[str, Any]]:
    """The quality flags of every clip of a pool: the one rule (curation-model.md section 1).

    Parameters
    ----------
    rows
        clip -> (rms_dbfs, spectral_flatness, clipping_ratio, aci) as measured; a metric not
        measured (None or NaN) raises no flag. Digital silence has rms ``-inf``.
    thresholds
        The cut-offs; the ACI one is the pool's ``aci_percentile``-th percentile over the clips
        with a measured ACI, raised only when the pool holds at least ``min_relative_pool`` of them.
    what
        What the pool is, for people ("analysed clips of the project with a measured ACI").

    Returns
    -------
    (flags, pool)
        clip -> list of ``{"flag", "metric", "value", "threshold"}`` (flagged clips only;
        ``low_complexity`` also has ``"pool"``), and the pool (:func:`relative_pool`).
    """
    measured = sorted(v for v in (_finite(r[3]) for r in rows.values()) if v is not None and math.isfinite(v))
    pool = relative_pool(len(measured), measured.__getitem__, thresholds, what=what)
    flags = {clip: found for clip, values in rows.items() if (found := clip_flags(values, pool, thresholds))}
    return flags, pool


def describe_flag(flag: dict[str, Any] | str) -> str:
    """One quality flag for people: its value against the cut-off, and for a pool-relative flag the pool
    (a fit stored before values were kept has the name alone)."""
    if not isinstance(flag, dict):
        return str(flag)
    op = {"low_level": "<", "flat_spectrum": ">", "clipping": ">", "low_complexity": "<"}.get(flag.get("flag"), "vs")
    text = f"{flag.get('flag')} ({flag.get('metric')} {flag.get('value', float('nan')):.4g} {op} " \
           f"{flag.get('threshold', float('nan')):.4g}"
    pool = flag.get("pool")
    if pool:
        text += f", cut-off at percentile {pool['percentile']:g} of {pool['clips']} {pool['what']}"
    return text + ")"
