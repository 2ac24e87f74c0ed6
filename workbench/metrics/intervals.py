"""Per-clip terms of the leaderboard metrics, bootstrap intervals and paired comparisons.

Every leaderboard metric is a ratio of two sums over an answer's rows: a mean distance sums the
defined distances over the rows with a defined distance, an accuracy the matches over the rows
where both sides are known, a rate its hits over all rows. Written so (:func:`row_terms`), a
bootstrap resample is a count per row and each metric two dot products, which is what lets
``leaderboard --ci`` draw 2,000 resamples of every model in about a second; and the paired
comparison of two models reads the same per-clip terms (``aglw compare``).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.metrics import core
from workbench.metrics.aggregate import MetricInputs

# The metric keys that are means over rows (the rest of METRIC_KEYS are names and counts).
VALUE_KEYS = ("distance_error_km", "continent_acc", "country_acc", "city_acc", "reject_rate",
              *(f"within_{t}km" for t in core.WITHIN_THRESHOLDS_KM), "geoscore_mean")
# Correct-or-not per clip (McNemar's test in a paired comparison) vs a number per clip (paired bootstrap).
BINARY_KEYS = ("continent_acc", "country_acc", "city_acc", *(f"within_{t}km" for t in core.WITHIN_THRESHOLDS_KM))
CONTINUOUS_KEYS = ("distance_error_km", "geoscore_mean")
DEFAULT_BOOTSTRAP = 2000


def row_terms(inputs: MetricInputs, profile: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Metric key -> (value per row, weight per row): the metric is ``sum(value) / sum(weight)``,
    exactly as :func:`workbench.metrics.aggregate.metrics_of` computes it (weight 0 marks a row the
    metric leaves out: an undefined distance, a side missing for an accuracy)."""
    column = inputs.columns
    n = len(inputs)
    distances = column["distance"]
    defined = ~np.isnan(distances)
    ones = np.ones(n)
    safe = np.where(defined, distances, 0.0)
    terms: dict[str, tuple[np.ndarray, np.ndarray]] = {
        "distance_error_km": (safe, defined.astype(float)),
    }
    for key, true, pred in (("continent_acc", f"{profile}_continent_true", f"{profile}_continent_pred"),
                            ("country_acc", f"{profile}_country_true", f"{profile}_country_pred"),
                            ("city_acc", "city_true", "city_pred")):
        both = (column[true] >= 0) & (column[pred] >= 0)
        terms[key] = ((both & (column[true] == column[pred])).astype(float), both.astype(float))
    terms["reject_rate"] = (column["refused"].astype(float), ones)
    for threshold in core.WITHIN_THRESHOLDS_KM:
        terms[f"within_{threshold}km"] = ((defined & (safe < threshold)).astype(float), ones)
    terms["geoscore_mean"] = (np.where(defined, core.geoscore(safe), 0.0), defined.astype(float))
    return terms


def _rng(seed: int, name: str) -> np.random.Generator:
    # Each model's resamples depend on the seed and its own name only (not on which other
    # models are listed, nor on their order); crc32, unlike hash(), is the same in every process.
    return np.random.default_rng([int(seed), zlib.crc32(name.encode("utf-8"))])


def resample_counts(n: int, bootstrap: int, seed: int, name: str) -> np.ndarray:
    """(bootstrap, n) counts: how often each row is drawn in each resample (rows with replacement)."""
    if n == 0 or bootstrap <= 0:
        return np.zeros((max(bootstrap, 0), n))
    # n draws per resample, counted per row with one bincount over all resamples (a multinomial
    # draw per resample took ~0.3 s per model of 1,444 clips).
    draws = _rng(seed, name).integers(0, n, size=(bootstrap, n))
    draws += np.arange(bootstrap)[:, None] * n
    return np.bincount(draws.ravel(), minlength=bootstrap * n).reshape(bootstrap, n).astype(float)


def _percentile_interval(values: np.ndarray) -> list[float | None]:
    finite = values[np.isfinite(values)]
    if not finite.size:
        return [None, None]
    low, high = np.percentile(finite, [2.5, 97.5])
    return [float(low), float(high)]


def bootstrap_intervals(
    inputs: MetricInputs, profile: str, *, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, name: str = "",
    counts: np.ndarray | None = None,
) -> dict[str, list[float | None]]:
    """``<key>_ci`` -> [low, high]: 95 % percentile intervals of every metric, clips resampled
    with replacement ``bootstrap`` times (seeded by ``seed`` and ``name``; ``counts``: those
    resamples drawn already, :func:`resample_counts`); [None, None] where no resample defines
    the metric."""
    if counts is None:
        counts = resample_counts(len(inputs), bootstrap, seed, name)
    return term_intervals(row_terms(inputs, profile), counts)


def term_intervals(terms: dict[str, tuple[np.ndarray, np.ndarray]],
                   counts: np.ndarray) -> dict[str, list[float | None]]:
    """``<key>_ci`` of metrics given as (value, weight) per resampled unit (a row, or a clip's
    sums: :func:`clip_terms`) and the resamples' ``counts`` of those units."""
    out: dict[str, list[float | None]] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for key, (value, weight) in terms.items():
            stats = (counts @ value) / (counts @ weight)
            out[f"{key}_ci"] = _percentile_interval(stats)
    return out


def clip_terms(terms: dict[str, tuple[np.ndarray, np.ndarray]], clips: np.ndarray,
               *, mean: bool) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The row terms of answers gathered per clip: the distinct clips (sorted) and per metric
    (value, weight) per clip.

    ``mean`` False: the sums of the clip's values and weights (resampling clips with them gives
    the pooled metric over answers: a cluster bootstrap). ``mean`` True: the mean over the clip's
    counted answers and weight 1 where it has one, else 0 (a clip with several answers, e.g. a
    crowd's guesses, weighs as much as a clip with one: how it pairs with a model per clip).
    """
    distinct, inverse = np.unique(clips, return_inverse=True)
    inverse = inverse.reshape(-1)
    out = {}
    for key, (value, weight) in terms.items():
        value_sum = np.bincount(inverse, weights=value, minlength=len(distinct))
        weight_sum = np.bincount(inverse, weights=weight, minlength=len(distinct))
        if mean:
            counted = weight_sum > 0
            out[key] = (np.divide(value_sum, weight_sum, out=np.zeros_like(value_sum), where=counted),
                        counted.astype(float))
        else:
            out[key] = (value_sum, weight_sum)
    return distinct, out


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (statsmodels' ``multipletests``, method ``holm``)."""
    if not len(p_values):
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(list(p_values), method="holm")[1]]


def mcnemar_exact(a_right: np.ndarray, b_right: np.ndarray) -> float:
    """Two-sided exact McNemar p-value (binomial test on the discordant pairs); 1 without any."""
    only_a = int(np.count_nonzero(a_right & ~b_right))
    only_b = int(np.count_nonzero(~a_right & b_right))
    if only_a + only_b == 0:
        return 1.0
    from statsmodels.stats.contingency_tables import mcnemar

    table = [[0, only_a], [only_b, 0]]
    return float(mcnemar(table, exact=True).pvalue)


def paired_bootstrap(values_a: np.ndarray, values_b: np.ndarray, *, bootstrap: int, seed: int,
                     name: str) -> tuple[float, list[float | None]]:
    """p-value and 95 % interval of mean(a − b) over clips resampled in pairs.

    p = 2 · min(share of resampled differences ≤ 0, share ≥ 0), at least 1/B, at most 1.
    """
    diff = values_a - values_b
    counts = resample_counts(len(diff), bootstrap, seed, name)
    if not len(diff) or bootstrap <= 0:
        return math.nan, [None, None]
    means = (counts @ diff) / len(diff)
    p = 2.0 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0)))
    return min(1.0, max(p, 1.0 / bootstrap)), _percentile_interval(means)


def per_clip(inputs: MetricInputs, profile: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    """(value per row, whether the row counts) of one metric, for paired comparisons."""
    value, weight = row_terms(inputs, profile)[key]
    return value, weight > 0


def interval_keys() -> tuple[str, ...]:
    """The ``<key>_ci`` names ``--ci`` adds, in the order of the metric keys."""
    return tuple(f"{key}_ci" for key in VALUE_KEYS)


def as_row(metrics: dict[str, Any], intervals: dict[str, list[float | None]]) -> dict[str, Any]:
    """A leaderboard row with its intervals after the metrics."""
    return {**metrics, **intervals}
