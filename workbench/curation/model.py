"""Pure algorithms of the Audio Localizability model (design doc curation-model.md).

Everything here takes and returns plain data (DataFrames, Series, dataclasses)
and never touches the database.  The data travel as *long* frames with one row
per (clip, category):

``contributions``
    columns ``clip``, ``category``, ``x`` (consensus contribution in [0, 1]).
``fit frame``
    ``contributions`` joined with ``error_km`` (the reference ALM's geodesic
    error of the clip; NaN when the prediction could not be parsed).

Decisions documented here (the design doc leaves them open):

* A clip whose ALM error is undefined (unparsable coordinates, as the
  leaderboard metrics define it) is left out of the *fit* (it is in no S_i and
  counts towards no support), because neither "success" nor "failure" can be
  said of it.  It still receives a localizability score, which does not
  depend on its own error.
* A category whose support is below ``n_min`` gets the fitted polarity
  ``insufficient``, which acts as neutral.
* An expert polarity override marks the category ``overridden`` even when it
  agrees with the fitted polarity (the curator's word is recorded as such).
* Rolled up to the ontology roots, a clip's contribution for a root is the
  largest contribution among its detected classes under that root (a class
  with several roots counts under each); the mean would dilute a decisive
  class with incidental ones.
* The percentile of a clip is 100 × its average rank / pool size, so the best
  clip is at 100 and ties share a value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from workbench.audio.quality import QualityThresholds, pool_flags

GEOSCORE_SCALE_KM = 1492.0
"""g(e) = exp(-e / 1492): AGL1K's GeoScore divided by its 5,000 maximum."""

REFUSAL_ERROR_KM = 10_000.0
POLARITIES = ("P", "N", "neutral")
FITTED_POLARITIES = ("P", "N", "neutral", "insufficient")
ROLLUPS = ("leaf", "root")
MIN_DECISIONS_FOR_THETA = 20


@dataclass(frozen=True)
class FitParameters:
    """Every parameter of one fit; stored with the run.

    Attributes
    ----------
    gamma_km
        Success threshold γ on the ALM error (km).
    alpha
        Margin α between a and ā for a P or N polarity.
    theta
        Candidate threshold θ on the localizability score.
    tau
        Tag probability threshold τ for a detected category.
    n_min
        Minimum support for a fitted polarity.
    top_n
        At most this many detected categories per clip (highest probability).
    rollup
        ``leaf`` (AudioSet classes) or ``root`` (the 7 ontology roots).
    rms_min_dbfs, flatness_max, clipping_max, aci_min_percentile
        Acoustic quality filters (design doc section 1).
    """

    gamma_km: float = 1000.0
    alpha: float = 0.05
    theta: float = 0.0
    tau: float = 0.15
    n_min: int = 5
    top_n: int = 10
    rollup: str = "leaf"
    rms_min_dbfs: float = -50.0
    flatness_max: float = 0.5
    clipping_max: float = 0.001
    aci_min_percentile: float = 2.0

    def __post_init__(self) -> None:
        problems = []
        if not (self.gamma_km > 0 and math.isfinite(self.gamma_km)):
            problems.append(f"gamma must be a positive number of km, got {self.gamma_km}")
        if not (self.alpha >= 0 and math.isfinite(self.alpha)):
            problems.append(f"alpha must be ≥ 0, got {self.alpha}")
        if not math.isfinite(self.theta):
            problems.append(f"theta must be a finite number, got {self.theta}")
        if not 0.0 <= self.tau <= 1.0:
            problems.append(f"tau must lie in [0, 1], got {self.tau}")
        if self.n_min < 1:
            problems.append(f"n-min must be ≥ 1, got {self.n_min}")
        if self.top_n < 1:
            problems.append(f"top-n must be ≥ 1, got {self.top_n}")
        if self.rollup not in ROLLUPS:
            problems.append(f"rollup must be one of {', '.join(ROLLUPS)}, got {self.rollup!r}")
        if not 0.0 <= self.aci_min_percentile <= 100.0:
            problems.append(f"the ACI percentile must lie in [0, 100], got {self.aci_min_percentile}")
        if problems:
            raise ValueError("; ".join(problems))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "FitParameters":
        """Rebuild parameters stored with a run (unknown keys are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


# --------------------------------------------------------------------------- detection


def detected_categories(tags: pd.DataFrame, tau: float, top_n: int) -> pd.DataFrame:
    """C_k: the classes with probability ≥ τ, at most ``top_n`` highest per clip.

    Parameters
    ----------
    tags
        Columns ``clip``, ``category``, ``probability``.
    tau, top_n
        Threshold and per-clip cap.

    Returns
    -------
    DataFrame
        Columns ``clip``, ``category``, ``probability``, sorted by clip then
        decreasing probability (ties broken by category id, so the result is
        deterministic).
    """
    kept = tags.loc[tags["probability"] >= tau, ["clip", "category", "probability"]]
    kept = kept.sort_values(["clip", "probability", "category"], ascending=[True, False, True], kind="mergesort")
    kept = kept[kept.groupby("clip", sort=False).cumcount() < top_n]
    return kept.reset_index(drop=True)


def roll_up(contributions: pd.DataFrame, roots_of: Mapping[str, list[str]]) -> pd.DataFrame:
    """Roll leaf contributions up to ontology roots (max over the classes under a root).

    Parameters
    ----------
    contributions
        Columns ``clip``, ``category``, ``x``.
    roots_of
        AudioSet class id → ids of its roots (a class with several roots counts
        under each; a root maps to itself).

    Raises
    ------
    ValueError
        A category has no entry in ``roots_of`` (it is not in the ontology in use).
    """
    missing = sorted(set(contributions["category"]) - set(roots_of))
    if missing:
        raise ValueError(
            f"{len(missing)} categories are not in the ontology used for the roll-up "
            f"(first: {', '.join(missing[:5])}); use the leaf level or update the ontology"
        )
    mapping = pd.DataFrame(
        [(leaf, root) for leaf, roots in roots_of.items() for root in roots], columns=["category", "root"]
    )
    merged = contributions.merge(mapping, on="category", how="inner")
    rolled = merged.groupby(["clip", "root"], as_index=False, sort=True)["x"].max()
    return rolled.rename(columns={"root": "category"})


# --------------------------------------------------------------------------- contributions


def consensus_contributions(judge_scores: pd.DataFrame, expert_scores: pd.DataFrame | None = None) -> pd.DataFrame:
    """x_{k,i}: the mean of valid judge scores / 3, replaced by expert values where present.

    Parameters
    ----------
    judge_scores
        Columns ``clip``, ``category``, ``judge``, ``score`` (0–3). Rows with a
        missing score (a failed judgment) are ignored.
    expert_scores
        Columns ``clip``, ``category``, ``annotator``, ``score`` (0–3),
        ``adjudicator`` (bool). Where an adjudicator scored a (clip, category),
        the adjudicators' mean is used; otherwise the mean of all experts.

    Returns
    -------
    DataFrame
        Columns ``clip``, ``category``, ``x`` in [0, 1], ``source``
        (``judges`` or ``expert``), sorted by clip and category.
    """
    valid = judge_scores.dropna(subset=["score"])
    judged = valid.groupby(["clip", "category"], as_index=False, sort=False)["score"].mean()
    judged["x"] = judged["score"].astype(float) / 3.0
    judged["source"] = "judges"
    result = judged[["clip", "category", "x", "source"]]
    if expert_scores is not None and len(expert_scores):
        experts = expert_scores.dropna(subset=["score"])
        has_adjudicator = experts.groupby(["clip", "category"])["adjudicator"].transform("any")
        deciding = experts[~has_adjudicator | experts["adjudicator"].astype(bool)]
        human = deciding.groupby(["clip", "category"], as_index=False, sort=False)["score"].mean()
        human["x"] = human["score"].astype(float) / 3.0
        human["source"] = "expert"
        human = human[["clip", "category", "x", "source"]]
        keys = pd.MultiIndex.from_frame(human[["clip", "category"]])
        overridden = pd.MultiIndex.from_frame(result[["clip", "category"]]).isin(keys)
        result = pd.concat([result[~overridden], human], ignore_index=True)
    return result.sort_values(["clip", "category"], kind="mergesort").reset_index(drop=True)


# --------------------------------------------------------------------------- fit


def geoscore(error_km: np.ndarray | pd.Series) -> np.ndarray:
    """Normalised GeoScore g(e) = exp(-e / 1492)."""
    return np.exp(-np.asarray(error_km, dtype=float) / GEOSCORE_SCALE_KM)


def fit_categories(
    frame: pd.DataFrame,
    params: FitParameters,
    polarity_overrides: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Fit a_i, ā_i, support and polarity of every category (design doc section 4).

    Parameters
    ----------
    frame
        Columns ``clip``, ``category``, ``x``, ``error_km`` (NaN = undefined).
    params
        Uses ``gamma_km``, ``alpha`` and ``n_min``.
    polarity_overrides
        Category id → expert polarity (P / N / neutral); wins over the fit.
        Categories only named here (no data) are listed with a = ā = 0.

    Returns
    -------
    DataFrame
        Indexed by ``category`` (sorted), columns ``a``, ``a_bar``, ``support``,
        ``fitted_polarity``, ``polarity``, ``overridden``.
    """
    overrides = dict(polarity_overrides or {})
    bad = {c: p for c, p in overrides.items() if p not in POLARITIES}
    if bad:
        raise ValueError(f"polarity overrides must be P, N or neutral; got {bad}")
    x = frame["x"].to_numpy(dtype=float)
    error = frame["error_km"].to_numpy(dtype=float)
    in_fit = (x > 0) & np.isfinite(error)
    g = geoscore(np.where(np.isfinite(error), error, 0.0))
    success = error < params.gamma_km
    parts = pd.DataFrame(
        {
            "category": frame["category"].to_numpy(),
            "num_a": np.where(in_fit & success, x * g, 0.0),
            "num_a_bar": np.where(in_fit & ~success, x * (1.0 - g), 0.0),
            "denominator": np.where(in_fit, x * x, 0.0),
            "support": in_fit.astype(np.int64),
        }
    )
    sums = parts.groupby("category", sort=True).sum()
    all_categories = sorted(set(sums.index) | set(overrides))
    sums = sums.reindex(all_categories, fill_value=0)
    sums.index.name = "category"
    denominator = sums["denominator"].to_numpy(dtype=float)
    safe = np.where(denominator > 0, denominator, 1.0)
    a = np.where(denominator > 0, sums["num_a"].to_numpy(dtype=float) / safe, 0.0)
    a_bar = np.where(denominator > 0, sums["num_a_bar"].to_numpy(dtype=float) / safe, 0.0)
    support = sums["support"].to_numpy(dtype=np.int64)
    fitted = np.where(
        support < params.n_min,
        "insufficient",
        np.where(a - a_bar > params.alpha, "P", np.where(a_bar - a > params.alpha, "N", "neutral")),
    )
    result = pd.DataFrame(
        {"a": a, "a_bar": a_bar, "support": support, "fitted_polarity": fitted},
        index=sums.index,
    )
    override_series = pd.Series(overrides, dtype=object).reindex(result.index)
    result["overridden"] = override_series.notna().to_numpy()
    result["polarity"] = override_series.where(result["overridden"], result["fitted_polarity"]).astype(str)
    return result[["a", "a_bar", "support", "fitted_polarity", "polarity", "overridden"]]


def localizability(
    contributions: pd.DataFrame,
    categories: pd.DataFrame,
    clips: pd.Index | list | None = None,
    clip_polarity_overrides: pd.DataFrame | None = None,
) -> pd.Series:
    """l_k = Σ_{P} a_i·x − Σ_{N} ā_i·x with per-clip expert overrides (design doc section 5).

    Parameters
    ----------
    contributions
        Columns ``clip``, ``category``, ``x`` (the detected categories C_k).
    categories
        The result of :func:`fit_categories`.
    clips
        Every clip of the pool; clips without contributions score 0.
    clip_polarity_overrides
        Columns ``clip``, ``category``, ``polarity``: overrides the category's
        sign for that clip only (P: +a·x, N: −ā·x, neutral: 0).

    Returns
    -------
    Series
        Localizability per clip (index ``clip``).
    """
    merged = contributions[["clip", "category", "x"]].merge(
        categories[["a", "a_bar", "polarity"]], left_on="category", right_index=True, how="left"
    )
    polarity = merged["polarity"].fillna("neutral").to_numpy(dtype=object)
    if clip_polarity_overrides is not None and len(clip_polarity_overrides):
        bad = set(clip_polarity_overrides["polarity"]) - set(POLARITIES)
        if bad:
            raise ValueError(f"per-clip polarity overrides must be P, N or neutral; got {sorted(bad)}")
        keyed = clip_polarity_overrides.drop_duplicates(["clip", "category"], keep="last").set_index(
            ["clip", "category"]
        )["polarity"]
        looked_up = keyed.reindex(pd.MultiIndex.from_frame(merged[["clip", "category"]])).to_numpy(dtype=object)
        polarity = np.where(pd.isna(looked_up), polarity, looked_up)
    x = merged["x"].to_numpy(dtype=float)
    a = merged["a"].fillna(0.0).to_numpy(dtype=float)
    a_bar = merged["a_bar"].fillna(0.0).to_numpy(dtype=float)
    term = np.where(polarity == "P", a * x, np.where(polarity == "N", -a_bar * x, 0.0))
    scores = pd.Series(term, index=merged["clip"].to_numpy()).groupby(level=0, sort=True).sum()
    if clips is not None:
        scores = scores.reindex(pd.Index(clips), fill_value=0.0)
    scores.index.name = "clip"
    scores.name = "localizability"
    return scores.astype(float)


def percentiles(scores: pd.Series) -> pd.Series:
    """Percentile of each score within the pool: 100 × average rank / n (best = 100)."""
    if len(scores) == 0:
        return scores.astype(float)
    return scores.rank(method="average", pct=True) * 100.0


# --------------------------------------------------------------------------- θ recalibration


@dataclass(frozen=True)
class ThetaCalibration:
    """θ that best separates expert accepts from rejects, and how well l_k agrees with experts.

    ``theta`` is None when fewer than 20 clips carry decisions or only one
    kind of decision exists; ``spearman`` is None with fewer than 3 rated
    clips or constant inputs.
    """

    theta: float | None
    balanced_accuracy: float | None
    n_decisions: int
    n_accept: int
    n_reject: int
    spearman: float | None
    spearman_p: float | None
    n_ratings: int
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def recalibrate_theta(scores: pd.Series, decisions: pd.Series, ratings: pd.Series | None = None) -> ThetaCalibration:
    """θ maximising the balanced accuracy of (l > θ) against accept/reject decisions.

    Parameters
    ----------
    scores
        Localizability per clip.
    decisions
        ``accept`` / ``reject`` per clip (other values are ignored).
    ratings
        Expert localizability ratings (1–5) per clip, for the Spearman correlation.

    Notes
    -----
    The candidate thresholds are the midpoints between consecutive distinct
    scores of the decided clips, so the chosen θ never sits on a clip's score;
    among equally good thresholds the lowest is taken (it keeps more clips).
    """
    decided = decisions[decisions.isin(["accept", "reject"])]
    decided = decided[decided.index.isin(scores.index)]
    n_accept = int((decided == "accept").sum())
    n_reject = int((decided == "reject").sum())
    spearman, spearman_p, n_ratings = _spearman(scores, ratings)
    common = dict(
        n_decisions=len(decided), n_accept=n_accept, n_reject=n_reject,
        spearman=spearman, spearman_p=spearman_p, n_ratings=n_ratings,
    )
    if len(decided) < MIN_DECISIONS_FOR_THETA:
        return ThetaCalibration(
            theta=None, balanced_accuracy=None,
            reason=f"{len(decided)} clips carry accept/reject decisions; {MIN_DECISIONS_FOR_THETA} are needed",
            **common,
        )
    if n_accept == 0 or n_reject == 0:
        return ThetaCalibration(
            theta=None, balanced_accuracy=None,
            reason="the decisions are all accepts or all rejects; both are needed", **common,
        )
    values = scores.reindex(decided.index).to_numpy(dtype=float)
    accepted = (decided == "accept").to_numpy()
    distinct = np.unique(values)
    if len(distinct) < 2:
        return ThetaCalibration(
            theta=None, balanced_accuracy=None, reason="every decided clip has the same score", **common
        )
    thresholds = (distinct[:-1] + distinct[1:]) / 2.0
    above = values[None, :] > thresholds[:, None]
    true_positive_rate = (above & accepted).sum(axis=1) / n_accept
    true_negative_rate = (~above & ~accepted).sum(axis=1) / n_reject
    balanced = (true_positive_rate + true_negative_rate) / 2.0
    best = int(np.argmax(balanced))
    return ThetaCalibration(theta=float(thresholds[best]), balanced_accuracy=float(balanced[best]), **common)


def _spearman(scores: pd.Series, ratings: pd.Series | None) -> tuple[float | None, float | None, int]:
    if ratings is None:
        return None, None, 0
    rated = ratings.dropna()
    rated = rated[rated.index.isin(scores.index)]
    if len(rated) < 3:
        return None, None, len(rated)
    values = scores.reindex(rated.index).to_numpy(dtype=float)
    if np.ptp(values) == 0 or np.ptp(rated.to_numpy(dtype=float)) == 0:
        return None, None, len(rated)
    result = stats.spearmanr(values, rated.to_numpy(dtype=float))
    return float(result.statistic), float(result.pvalue), len(rated)


# --------------------------------------------------------------------------- quality


def quality_thresholds(params: FitParameters) -> QualityThresholds:
    """A fit's quality cut-offs in the terms of the one flag rule (:mod:`workbench.audio.quality`)."""
    return QualityThresholds(min_rms_dbfs=params.rms_min_dbfs, max_spectral_flatness=params.flatness_max,
                             max_clipping_ratio=params.clipping_max, aci_percentile=params.aci_min_percentile)


def quality_flags(quality: pd.DataFrame, params: FitParameters,
                  what: str = "clips of this pool with a measured ACI") -> dict[Any, list[dict[str, Any]]]:
    """Acoustic quality flags per clip of a frame (design doc section 1), by the one rule
    :func:`workbench.audio.quality.pool_flags` (a stored project asks
    :func:`workbench.audio.flags.quality_flags_now`).

    Parameters
    ----------
    quality
        Columns ``clip``, ``rms_dbfs``, ``spectral_flatness``, ``clipping_ratio``,
        ``aci`` (NaN = not measured, which raises no flag); the rows are the pool.
    params
        The thresholds; the ACI limit is the pool's ``aci_min_percentile``-th
        percentile over the clips with a measured ACI, raised only in a pool of at
        least ``MIN_RELATIVE_POOL`` of them.

    Returns
    -------
    dict
        Clip → list of ``{"flag", "metric", "value", "threshold"}`` (only flagged clips).
    """
    rows = {clip: (rms, flatness, clipping, aci) for clip, rms, flatness, clipping, aci in quality[
        ["clip", "rms_dbfs", "spectral_flatness", "clipping_ratio", "aci"]].itertuples(index=False, name=None)}
    return pool_flags(rows, quality_thresholds(params), what=what)[0]


# --------------------------------------------------------------------------- diff


@dataclass(frozen=True)
class ScoreMove:
    clip: Any
    old: float
    new: float

    @property
    def delta(self) -> float:
        return self.new - self.old


@dataclass(frozen=True)
class PolarityChange:
    category: str
    old: str | None
    new: str | None


@dataclass
class RunDiff:
    """What changed between two fits: polarities, the candidate set, the largest score moves."""

    polarity_changes: list[PolarityChange] = field(default_factory=list)
    entered: list[Any] = field(default_factory=list)
    left: list[Any] = field(default_factory=list)
    largest_moves: list[ScoreMove] = field(default_factory=list)
    base_run_id: int | None = None

    @property
    def empty(self) -> bool:
        return not (self.polarity_changes or self.entered or self.left or self.largest_moves)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_run_id": self.base_run_id,
            "empty": self.empty,
            "polarity_changes": [asdict(c) for c in self.polarity_changes],
            "entered": list(self.entered),
            "left": list(self.left),
            "largest_moves": [
                {"clip": m.clip, "old": m.old, "new": m.new, "delta": m.delta} for m in self.largest_moves
            ],
        }


def diff_runs(
    old_categories: pd.Series,
    old_clips: pd.DataFrame,
    new_categories: pd.Series,
    new_clips: pd.DataFrame,
    *,
    top: int = 20,
    tolerance: float = 1e-12,
) -> RunDiff:
    """Compare two fits.

    Parameters
    ----------
    old_categories, new_categories
        Polarity per category id (a category present in one run only shows
        as a change from/to None).
    old_clips, new_clips
        Indexed by clip, columns ``localizability`` and ``candidate``.
    top
        How many of the largest score moves to list.
    tolerance
        Moves up to this size are not moves (identical inputs give identical
        scores, so the default only absorbs float noise).
    """
    old_pol = old_categories.astype(object)
    new_pol = new_categories.astype(object)
    union = sorted(set(old_pol.index) | set(new_pol.index))
    before = old_pol.reindex(union)
    after = new_pol.reindex(union)
    changed = [
        PolarityChange(category, None if pd.isna(b) else str(b), None if pd.isna(a) else str(a))
        for category, b, a in zip(union, before, after)
        if (pd.isna(b) != pd.isna(a)) or (not pd.isna(b) and b != a)
    ]
    old_candidates = set(old_clips.index[old_clips["candidate"].astype(bool)])
    new_candidates = set(new_clips.index[new_clips["candidate"].astype(bool)])
    common = old_clips.index.intersection(new_clips.index)
    old_scores = old_clips.loc[common, "localizability"].astype(float)
    new_scores = new_clips.loc[common, "localizability"].astype(float)
    delta = (new_scores - old_scores).abs()
    moved = delta[delta > tolerance].sort_values(ascending=False, kind="mergesort").head(top)
    moves = [ScoreMove(clip, float(old_scores[clip]), float(new_scores[clip])) for clip in moved.index]
    return RunDiff(
        polarity_changes=changed,
        entered=sorted(new_candidates - old_candidates, key=str),
        left=sorted(old_candidates - new_candidates, key=str),
        largest_moves=moves,
    )
