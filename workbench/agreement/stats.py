"""Agreement coefficients: library-backed scalar functions and a vectorised table path.

Two families live here, both pure (plain arrays in, floats out):

* Scalar functions (``cohen_kappa``, ``fleiss_kappa``, ``krippendorff_alpha``, ``icc``, ...)
  wrap scikit-learn, statsmodels, krippendorff, pingouin and scipy and return
  ``float | None`` where ``None`` means *undefined* (never 0, never an exception).
* Table functions (``pair_table_stats``, ``alpha_from_coincidence``, ``fleiss_from_sums``,
  ``ac1_from_sums``) compute the same coefficients from summed count tables with any
  leading batch shape, which is what makes the cluster bootstrap fast: per-clip tables
  are built once and each resample is a weighted sum of them.  Undefined entries are NaN.

Tests check the table path against the library functions.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

_EPS = 1e-12


def _defined(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _paired(a: Sequence, b: Sequence) -> tuple[list, list]:
    if len(a) != len(b):
        raise ValueError(f"the two raters have {len(a)} and {len(b)} ratings; pass one rating per unit each")
    pairs = [(x, y) for x, y in zip(a, b) if not _is_missing(x) and not _is_missing(y)]
    return [x for x, _ in pairs], [y for _, y in pairs]


# --------------------------------------------------------------------------- scalar functions


def percent_agreement(a: Sequence, b: Sequence) -> float | None:
    """Observed agreement p_o over the units both raters rated (None when there are none)."""
    x, y = _paired(a, b)
    if not x:
        return None
    return float(np.mean([u == v for u, v in zip(x, y)]))


def cohen_kappa(
    a: Sequence, b: Sequence, *, labels: Sequence | None = None, weights: str | None = None
) -> float | None:
    """Cohen's κ (optionally linearly or quadratically weighted) via scikit-learn.

    Parameters
    ----------
    a, b
        One rating per unit for each rater; ``None``/NaN is missing and drops the unit.
    labels
        The category domain (its order defines the weights); default: the observed values.
    weights
        ``None``, ``"linear"`` or ``"quadratic"``.

    Returns
    -------
    float or None
        ``None`` when κ is undefined: no paired units, or both raters used one constant
        label each (chance agreement then leaves nothing to correct; sklearn would give
        NaN or a meaningless 0).
    """
    from sklearn.metrics import cohen_kappa_score

    x, y = _paired(a, b)
    if not x or (len(set(x)) == 1 and len(set(y)) == 1):
        return None
    domain = list(labels) if labels is not None else sorted(set(x) | set(y))
    with warnings.catch_warnings():
        # the undefined case is detected above; anything left over is reported as None
        warnings.simplefilter("ignore", category=RuntimeWarning)
        from sklearn.exceptions import UndefinedMetricWarning

        warnings.simplefilter("ignore", category=UndefinedMetricWarning)
        value = cohen_kappa_score(x, y, labels=domain, weights=weights)
    return _defined(value)


@dataclass(frozen=True)
class KappaInterval:
    """Cohen's κ with its asymptotic standard error and Wald interval (statsmodels)."""

    kappa: float | None
    std_error: float | None
    ci_low: float | None
    ci_high: float | None


def cohen_kappa_analytic(table: np.ndarray) -> KappaInterval:
    """κ, asymptotic SE and 95 % Wald CI from a square contingency table (statsmodels)."""
    from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa

    table = np.asarray(table, dtype=float)
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    if table.sum() <= 0 or ((rows > 0).sum() == 1 and (cols > 0).sum() == 1):
        return KappaInterval(None, None, None, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = sm_cohens_kappa(table)
    return KappaInterval(
        _defined(result.kappa), _defined(result.std_kappa), _defined(result.kappa_low), _defined(result.kappa_upp)
    )


def fleiss_kappa(counts: np.ndarray) -> float | None:
    """Fleiss' κ from a units × categories count table (same number of raters per unit)."""
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[0] == 0:
        return None
    per_unit = counts.sum(axis=1)
    if per_unit.min() < 2 or not np.allclose(per_unit, per_unit[0]):
        return None
    if (counts.sum(axis=0) > 0).sum() < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return _defined(sm_fleiss_kappa(counts, method="fleiss"))


def fleiss_kappa_from_ratings(ratings: np.ndarray) -> float | None:
    """Fleiss' κ from a units × raters array of category codes, over units every rater rated."""
    from statsmodels.stats.inter_rater import aggregate_raters

    ratings = np.asarray(ratings, dtype=float)
    complete = ratings[~np.isnan(ratings).any(axis=1)]
    if complete.shape[0] == 0 or complete.shape[1] < 2:
        return None
    counts, _ = aggregate_raters(complete.astype(np.int64))
    return fleiss_kappa(counts)


def krippendorff_alpha(reliability_data: np.ndarray, level: str) -> float | None:
    """Krippendorff's α of a raters × units array (NaN = missing) at ``level``.

    ``level`` is ``nominal``, ``ordinal``, ``interval`` or ``ratio`` (the package's default
    would be interval, so it is always passed explicitly).  Returns None when fewer than
    two values occur among pairable units or the expected disagreement is zero.
    """
    import krippendorff

    data = np.asarray(reliability_data, dtype=float)
    if data.ndim != 2 or data.size == 0:
        return None
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    values = data[:, pairable]
    if np.unique(values[~np.isnan(values)]).size < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        return _defined(krippendorff.alpha(reliability_data=values, level_of_measurement=level))


def gwet_ac1(reliability_data: np.ndarray, n_categories: int | None = None) -> float | None:
    """Gwet's AC1 for any number of raters (raters × units category codes, NaN = missing).

    Follows Gwet (2008) as implemented in irrCAC: units nobody rated are dropped; the
    category prevalences π_k average r_ik / r_i over the remaining units; observed
    agreement averages r_ik (r_ik − 1) / (r_i (r_i − 1)) over units with at least two
    ratings; p_e = Σ π_k (1 − π_k) / (q − 1).
    """
    data = np.asarray(reliability_data, dtype=float)
    observed = np.unique(data[~np.isnan(data)])
    if observed.size == 0:
        return None
    index = {value: i for i, value in enumerate(observed)}
    q = n_categories if n_categories is not None else observed.size
    counts = np.zeros((data.shape[1], max(q, observed.size)))
    for rater_row in data:
        for unit, value in enumerate(rater_row):
            if not math.isnan(value):
                counts[unit, index[value]] += 1
    agreement, pairable, shares, rated = ac1_sums(counts)
    value = ac1_from_sums(agreement.sum(), pairable.sum(), shares.sum(axis=0), rated.sum(), n_categories=max(q, observed.size))
    return _defined(float(value))


def pabak(p_o: float | None, n_categories: int = 2) -> float | None:
    """Prevalence- and bias-adjusted κ: (q·p_o − 1) / (q − 1); 2·p_o − 1 for binary labels."""
    if p_o is None or n_categories < 2:
        return None
    return (n_categories * p_o - 1.0) / (n_categories - 1.0)


@dataclass(frozen=True)
class IccResult:
    icc2_1: float | None
    icc3_1: float | None
    n_units: int


def icc(ratings: np.ndarray) -> IccResult:
    """ICC(2,1) absolute agreement and ICC(3,1) consistency (pingouin) of units × raters.

    Units with a missing rating are left out (complete cases).
    """
    import pingouin

    data = np.asarray(ratings, dtype=float)
    complete = data[~np.isnan(data).any(axis=1)] if data.ndim == 2 else np.empty((0, 0))
    if complete.shape[0] < 2 or complete.shape[1] < 2:
        return IccResult(None, None, int(complete.shape[0]))
    if np.allclose(complete, complete.flat[0]):
        return IccResult(None, None, int(complete.shape[0]))
    frame = pd.DataFrame(
        {
            "unit": np.repeat(np.arange(complete.shape[0]), complete.shape[1]),
            "rater": np.tile(np.arange(complete.shape[1]), complete.shape[0]),
            "value": complete.ravel(),
        }
    )
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", category=RuntimeWarning)
        table = pingouin.intraclass_corr(frame, targets="unit", raters="rater", ratings="value")
    by_type = table.set_index("Type")["ICC"]
    # pingouin ≥ 0.6 names them ICC(A,1) / ICC(C,1); older releases ICC2 / ICC3
    icc2 = by_type["ICC(A,1)"] if "ICC(A,1)" in by_type else by_type["ICC2"]
    icc3 = by_type["ICC(C,1)"] if "ICC(C,1)" in by_type else by_type["ICC3"]
    return IccResult(_defined(icc2), _defined(icc3), int(complete.shape[0]))


def spearman(a: Sequence, b: Sequence) -> float | None:
    """Spearman's ρ (scipy) over paired units; None when either side is constant."""
    from scipy.stats import spearmanr

    x, y = _paired(a, b)
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return _defined(spearmanr(x, y).statistic)


def kendall_tau_b(a: Sequence, b: Sequence) -> float | None:
    """Kendall's τ-b (scipy) over paired units; None when either side is constant."""
    from scipy.stats import kendalltau

    x, y = _paired(a, b)
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return _defined(kendalltau(x, y, variant="b").statistic)


def mean_bias(a: Sequence, b: Sequence) -> float | None:
    """Mean of (b − a) over paired units."""
    x, y = _paired(a, b)
    return float(np.mean(np.asarray(y, float) - np.asarray(x, float))) if x else None


def mean_absolute_error(a: Sequence, b: Sequence) -> float | None:
    """Mean of |b − a| over paired units."""
    x, y = _paired(a, b)
    return float(np.mean(np.abs(np.asarray(y, float) - np.asarray(x, float)))) if x else None


def balanced_accuracy(reference: Sequence, other: Sequence) -> float | None:
    """Balanced accuracy (scikit-learn) of ``other`` against ``reference`` as the truth.

    Classes that only ``other`` uses have no recall and are left out of the mean (sklearn
    warns about them; the warning is expected here and silenced at this call only).
    """
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import balanced_accuracy_score

    x, y = _paired(reference, other)
    if not x:
        return None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true", category=UserWarning)
        warnings.simplefilter("ignore", category=UndefinedMetricWarning)
        return _defined(balanced_accuracy_score(x, y))


# --------------------------------------------------------------------------- table path


def pair_table_stats(
    tables: np.ndarray, values: np.ndarray | None, *, n_categories: int | None = None
) -> dict[str, np.ndarray]:
    """Pairwise coefficients from count tables of shape (..., q, q).

    Parameters
    ----------
    tables
        Rows are rater a's categories, columns rater b's, in the order of ``values``.
    values
        Numeric category values (ordinal/interval labels) or None for nominal labels;
        weighted κ uses distances between values (sklearn's index distances when the
        values are consecutive integers), ρ and τ-b use their order.
    n_categories
        Size of the label's domain for AC1 and PABAK (default: q).

    Returns
    -------
    dict of str to ndarray
        Each coefficient with the batch shape; NaN where undefined.
    """
    t = np.asarray(tables, dtype=float)
    q = t.shape[-1]
    domain = n_categories or q
    n = t.sum(axis=(-2, -1))
    rows = t.sum(axis=-1)
    cols = t.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = np.trace(t, axis1=-2, axis2=-1) / n
        p_e = (rows * cols).sum(axis=-1) / (n * n)
        both_constant = ((rows > 0).sum(axis=-1) <= 1) & ((cols > 0).sum(axis=-1) <= 1)
        kappa = np.where(both_constant | (n == 0), np.nan, (p_o - p_e) / (1 - p_e))
        pi = (rows + cols) / (2 * n)[..., None]
        pe_ac1 = (pi * (1 - pi)).sum(axis=-1) / (domain - 1) if domain > 1 else np.full_like(n, np.nan)
        out: dict[str, np.ndarray] = {
            "n_units": n,
            "percent_agreement": np.where(n > 0, p_o, np.nan),
            "cohen_kappa": kappa,
            "gwet_ac1": np.where(n > 0, (p_o - pe_ac1) / (1 - pe_ac1), np.nan),
            "pabak": np.where(n > 0, (domain * p_o - 1) / (domain - 1), np.nan) if domain > 1 else n * np.nan,
        }
        present = rows > 0
        recall = np.where(present, np.diagonal(t, axis1=-2, axis2=-1) / np.where(present, rows, 1), 0.0)
        n_present = present.sum(axis=-1)
        out["balanced_accuracy"] = np.where(n_present > 0, recall.sum(axis=-1) / np.maximum(n_present, 1), np.nan)
        if values is None:
            return out
        v = np.asarray(values, dtype=float)
        expected = rows[..., :, None] * cols[..., None, :] / n[..., None, None]
        diff = v[:, None] - v[None, :]
        for name, w in (("weighted_kappa_linear", np.abs(diff)), ("weighted_kappa_quadratic", diff**2)):
            out[name] = np.where(both_constant | (n == 0), np.nan, 1 - (w * t).sum((-2, -1)) / (w * expected).sum((-2, -1)))
        out["mean_bias"] = (-diff * t).sum((-2, -1)) / n
        out["mae"] = (np.abs(diff) * t).sum((-2, -1)) / n
        out["spearman"] = _spearman_from_table(t, rows, cols, n)
        out["kendall_tau_b"] = _kendall_from_table(t, rows, cols, n)
        icc2, icc3 = _pair_icc_from_table(t, v, n)
        out["icc2_1"], out["icc3_1"] = icc2, icc3
        coincidence = t + np.swapaxes(t, -1, -2)
        for level in ("ordinal", "interval"):
            out[f"alpha_{level}"] = alpha_from_coincidence(coincidence, v, level)
        out["alpha_nominal"] = alpha_from_coincidence(coincidence, v, "nominal")
    return out


def _midranks(margins: np.ndarray) -> np.ndarray:
    before = np.cumsum(margins, axis=-1) - margins
    return before + (margins + 1) / 2


def _spearman_from_table(t: np.ndarray, rows: np.ndarray, cols: np.ndarray, n: np.ndarray) -> np.ndarray:
    # Pearson correlation of tied midranks, which is exactly scipy's spearmanr with ties.
    ra, rb = _midranks(rows), _midranks(cols)
    mean_a = (rows * ra).sum(-1) / n
    mean_b = (cols * rb).sum(-1) / n
    da, db = ra - mean_a[..., None], rb - mean_b[..., None]
    cov = (t * da[..., :, None] * db[..., None, :]).sum((-2, -1))
    var_a = (rows * da**2).sum(-1)
    var_b = (cols * db**2).sum(-1)
    denom = np.sqrt(var_a * var_b)
    return np.where(denom > _EPS * np.maximum(n, 1) ** 3, cov / denom, np.nan)


def _kendall_from_table(t: np.ndarray, rows: np.ndarray, cols: np.ndarray, n: np.ndarray) -> np.ndarray:
    # below_right[i, j] = Σ_{k>i, l>j} t[k, l]; below_left[i, j] = Σ_{k>i, l<j} t[k, l]
    suffix = np.flip(np.cumsum(np.cumsum(np.flip(t, (-2, -1)), -2), -1), (-2, -1))
    below_right = np.zeros_like(t)
    below_right[..., :-1, :-1] = suffix[..., 1:, 1:]
    col_suffix_rows = np.flip(np.cumsum(np.flip(t, -2), -2), -2)  # Σ_{k>=i} t[k, l]
    prefix_cols = np.cumsum(col_suffix_rows, -1)  # Σ_{k>=i, l<=j}
    below_left = np.zeros_like(t)
    below_left[..., :-1, 1:] = prefix_cols[..., 1:, :-1]
    concordant = (t * below_right).sum((-2, -1))
    discordant = (t * below_left).sum((-2, -1))
    pairs = n * (n - 1) / 2
    ties_a = (rows * (rows - 1) / 2).sum(-1)
    ties_b = (cols * (cols - 1) / 2).sum(-1)
    denom = np.sqrt((pairs - ties_a) * (pairs - ties_b))
    return np.where(denom > 0, (concordant - discordant) / np.where(denom > 0, denom, 1), np.nan)


def _pair_icc_from_table(t: np.ndarray, v: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Two-way ANOVA mean squares of an n × 2 design, all sums read off the table.
    k = 2.0
    vi, vj = v[:, None], v[None, :]
    total = (t * (vi + vj)).sum((-2, -1))
    sum_sq = (t * (vi**2 + vj**2)).sum((-2, -1))
    row_sq = (t * (vi + vj) ** 2).sum((-2, -1))
    col_a = (t.sum(-1) * v).sum(-1)
    col_b = (t.sum(-2) * v).sum(-1)
    correction = total**2 / (n * k)
    ss_total = sum_sq - correction
    ss_rows = row_sq / k - correction
    ss_cols = (col_a**2 + col_b**2) / n - correction
    ss_error = ss_total - ss_rows - ss_cols
    ms_rows = ss_rows / (n - 1)
    ms_cols = ss_cols / (k - 1)
    ms_error = ss_error / ((n - 1) * (k - 1))
    icc2 = (ms_rows - ms_error) / (ms_rows + (k - 1) * ms_error + k * (ms_cols - ms_error) / n)
    icc3 = (ms_rows - ms_error) / (ms_rows + (k - 1) * ms_error)
    degenerate = (n < 2) | (ss_total <= _EPS)
    return np.where(degenerate, np.nan, icc2), np.where(degenerate, np.nan, icc3)


def unit_counts(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """units × q counts from a units × raters array of integer codes (−1 = missing)."""
    counts = np.zeros((codes.shape[0], n_categories))
    for column in codes.T:
        rated = column >= 0
        counts[np.flatnonzero(rated), column[rated]] += 1
    return counts


def coincidence_matrices(counts: np.ndarray) -> np.ndarray:
    """Per-unit Krippendorff coincidence matrices (units × q × q) from units × q counts.

    Units with fewer than two ratings are not pairable and contribute zeros.
    """
    m = counts.sum(axis=1)
    pairable = m >= 2
    scale = np.zeros_like(m)
    scale[pairable] = 1.0 / (m[pairable] - 1)
    outer = counts[:, :, None] * counts[:, None, :]
    idx = np.arange(counts.shape[1])
    outer[:, idx, idx] -= counts
    return outer * scale[:, None, None]


def alpha_from_coincidence(coincidence: np.ndarray, values: np.ndarray | None, level: str) -> np.ndarray:
    """Krippendorff's α from summed coincidence matrices of shape (..., q, q).

    ``values`` are the numeric category values (needed for interval; ordinal uses only
    their order and the marginals, as in Krippendorff's definition).
    """
    o = np.asarray(coincidence, dtype=float)
    q = o.shape[-1]
    n_c = o.sum(-1)
    n = n_c.sum(-1)
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(q), o.shape)
    elif level == "interval":
        v = np.asarray(values, dtype=float)
        delta = np.broadcast_to((v[:, None] - v[None, :]) ** 2, o.shape)
    elif level == "ordinal":
        cum = np.cumsum(n_c, -1)
        # Σ_{g=c}^{k} n_g − (n_c + n_k)/2 for c ≤ k (symmetric)
        lo = np.minimum.outer(np.arange(q), np.arange(q))
        hi = np.maximum.outer(np.arange(q), np.arange(q))
        between = cum[..., hi] - cum[..., lo] + n_c[..., lo]
        delta = (between - (n_c[..., :, None] + n_c[..., None, :]) / 2) ** 2
    else:
        raise ValueError(f"unknown level of measurement {level!r}; use nominal, ordinal or interval")
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (o * delta).sum((-2, -1))
        expected = (n_c[..., :, None] * n_c[..., None, :] * delta).sum((-2, -1)) / (n - 1)
        alpha = 1 - observed / expected
    return np.where(expected > _EPS, alpha, np.nan)


def fleiss_sums(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Additive pieces of Fleiss' κ for units that all have the same number m of ratings:
    (Σ_i Σ_j n_ij (n_ij − 1) per unit, 1 per unit, n_ij per unit) — sum them over any units."""
    agreement = (counts * (counts - 1)).sum(axis=-1)
    return agreement, np.ones(counts.shape[0]), counts


def fleiss_from_sums(agreement: np.ndarray, n_units: np.ndarray, category_totals: np.ndarray, m: int) -> np.ndarray:
    """Fleiss' κ from summed :func:`fleiss_sums` pieces (batch shape allowed); m raters per unit."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = agreement / (n_units * m * (m - 1))
        p_j = category_totals / (n_units * m)[..., None]
        p_e = (p_j**2).sum(-1)
        kappa = (p_bar - p_e) / (1 - p_e)
    return np.where((1 - p_e > _EPS) & (n_units > 0), kappa, np.nan)


def ac1_sums(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Additive pieces of Gwet's AC1 per unit from units × q counts:
    (agreement term, 1 if pairable, r_ik / r_i, 1 if rated)."""
    r = counts.sum(axis=1)
    rated = r >= 1
    pairable = r >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        agreement = np.where(pairable, (counts * (counts - 1)).sum(axis=1) / (r * (r - 1)), 0.0)
        shares = np.where(rated[:, None], counts / r[:, None], 0.0)
    return agreement, pairable.astype(float), shares, rated.astype(float)


def ac1_from_sums(
    agreement: np.ndarray, n_pairable: np.ndarray, shares: np.ndarray, n_rated: np.ndarray, *, n_categories: int
) -> np.ndarray:
    """Gwet's AC1 from :func:`ac1_sums` pieces summed over units (batch shape allowed)."""
    agreement, n_pairable, shares, n_rated = (np.asarray(x, dtype=float) for x in (agreement, n_pairable, shares, n_rated))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_a = agreement / n_pairable
        pi = shares / np.asarray(n_rated)[..., None]
        p_e = (pi * (1 - pi)).sum(-1) / (n_categories - 1) if n_categories > 1 else np.nan
        ac1 = (p_a - p_e) / (1 - p_e)
    return np.where(n_pairable > 0, ac1, np.nan)
