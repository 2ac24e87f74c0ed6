"""Cluster bootstrap over clips, vectorised.

Units inside one clip are not independent, so a resample draws clips with replacement and
keeps all their units and raters.  Every statistic here is a function of count tables that
add up over clips; a resample's table is therefore ``weights @ per_clip_tables`` where
``weights[b, c]`` is how often clip ``c`` was drawn in resample ``b`` — one matrix product
instead of thousands of library calls.
"""

from __future__ import annotations

import hashlib
import numpy as np


def resample_weights(n_clips: int, n_resamples: int, seed: int, stream: str) -> np.ndarray:
    """Clip multiplicities of ``n_resamples`` cluster resamples (shape B × n_clips).

    ``stream`` names the analysis (label and subset) so that each analysis has its own
    reproducible random stream, independent of the order analyses run in.
    """
    if n_resamples <= 0 or n_clips == 0:
        return np.zeros((0, n_clips))
    digest = int.from_bytes(hashlib.sha256(stream.encode("utf-8")).digest()[:8], "little")
    rng = np.random.default_rng([seed, digest])
    draws = rng.integers(0, n_clips, size=(n_resamples, n_clips))
    offsets = (np.arange(n_resamples) * n_clips)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=n_resamples * n_clips)
    return counts.reshape(n_resamples, n_clips).astype(float)


def per_clip_sum(clip_index: np.ndarray, values: np.ndarray, n_clips: int) -> np.ndarray:
    """Sum per-unit arrays (units × ...) into per-clip arrays (n_clips × ...)."""
    flat = values.reshape(values.shape[0], -1)
    out = np.zeros((n_clips, flat.shape[1]))
    np.add.at(out, clip_index, flat)
    return out.reshape((n_clips,) + values.shape[1:])


def resampled(weights: np.ndarray, per_clip: np.ndarray) -> np.ndarray:
    """Each resample's summed table: (B × n_clips) @ (n_clips × ...) → (B × ...)."""
    flat = per_clip.reshape(per_clip.shape[0], -1)
    return (weights @ flat).reshape((weights.shape[0],) + per_clip.shape[1:])


def percentile_intervals(samples: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, ...]:
    """Percentile intervals of the defined (finite) values in each row of statistics × resamples.

    Returns (low, high, n_undefined, n_resamples) arrays; low/high are NaN where no
    resample was defined.  Uses numpy's default linear interpolation.
    """
    samples = np.asarray(samples, dtype=float)
    finite = np.isfinite(samples)
    counts = finite.sum(axis=1)
    ordered = np.sort(np.where(finite, samples, np.inf), axis=1)
    tail = (1 - level) / 2
    bounds = []
    for quantile in (tail, 1 - tail):
        position = quantile * np.maximum(counts - 1, 0)
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(counts - 1, 0))
        fraction = position - below
        rows = np.arange(samples.shape[0])
        with np.errstate(invalid="ignore"):
            value = ordered[rows, below] * (1 - fraction) + ordered[rows, above] * fraction
        bounds.append(np.where(counts > 0, value, np.nan))
    return bounds[0], bounds[1], samples.shape[1] - counts, np.full(samples.shape[0], samples.shape[1])
