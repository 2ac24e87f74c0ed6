"""All coefficients of an agreement study, with cluster-bootstrap intervals (pure).

Input: the long rating table (``units.RATING_COLUMNS``) and the clip table; output: one
tidy DataFrame with a row per (section, label, subset, rater pair or group, coefficient).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from workbench.agreement import minimums, stats
from workbench.agreement.bootstrap import per_clip_sum, percentile_intervals, resample_weights, resampled
from workbench.agreement.units import LABELS, category_root_column, majority_per_unit

if TYPE_CHECKING:
    from workbench.tasks import TaskContext

# n_units: the units the coefficient used (paired units of a pair, pairable units of α / AC1,
# complete units of Fleiss' κ); n_raters: the raters it compared; reason: why the value is
# empty (below a floor of ``minimums``, or undefined on these data).
COEFFICIENT_COLUMNS = [
    "section", "label", "subset_kind", "subset", "rater_a", "rater_b", "coefficient",
    "value", "ci_low", "ci_high", "n_units", "n_clips", "n_boot_undefined", "n_boot", "n_raters", "reason",
]
ALL_RATERS = "(all)"
CONSENSUS_OF_OTHERS = "expert_consensus_others"
UNDEFINED = "undefined on these data"
NOMINAL_PAIR = ["percent_agreement", "cohen_kappa", "gwet_ac1", "pabak", "balanced_accuracy"]
ORDINAL_PAIR = NOMINAL_PAIR + [
    "weighted_kappa_linear", "weighted_kappa_quadratic", "alpha_ordinal", "alpha_interval",
    "icc2_1", "icc3_1", "spearman", "kendall_tau_b", "mean_bias", "mae",
]
_KIND_ORDER = {"expert": 0, "judge": 2, "derived": 3}


def _rater_order(frame: pd.DataFrame) -> list[str]:
    kinds = frame.drop_duplicates("rater").set_index("rater")["rater_kind"]
    consensus_first = {"expert_consensus": 1}
    return sorted(kinds.index, key=lambda r: (consensus_first.get(r, _KIND_ORDER.get(kinds[r], 4)), r))


def _section(kind_a: str, kind_b: str, rater_a: str, rater_b: str) -> str:
    def name(kind: str, rater: str) -> str:
        if rater == "expert_consensus":
            return "expert"
        if rater in ("judge_majority", "judge_mean"):
            return "judge"
        return "curation" if kind == "derived" else kind

    return "-".join(sorted((name(kind_a, rater_a), name(kind_b, rater_b))))


class _Coder:
    """Category codes of one label: domain order for nominal labels, numeric order otherwise."""

    def __init__(self, label: str, values: pd.Series) -> None:
        level, domain = LABELS[label]
        self.level = level
        if level == "nominal":
            known = [str(v) for v in (domain or ())]
            extra = sorted(set(values.astype(str)) - set(known))
            self.categories = known + extra
            self.numeric = None
            self.n_domain = len(self.categories)
            self._index = {c: i for i, c in enumerate(self.categories)}
        else:
            observed = set(values.astype(float))
            self.numeric = np.array(sorted(observed | {float(v) for v in (domain or ())}))
            self.categories = list(self.numeric)
            self.n_domain = len(domain) if domain else len(self.numeric)

    def codes(self, values: pd.Series) -> np.ndarray:
        if self.numeric is None:
            return values.astype(str).map(self._index).to_numpy(dtype=np.int64)
        return np.searchsorted(self.numeric, values.astype(float).to_numpy())


def _interval_rows(base: dict, points: dict[str, float], boots: dict[str, np.ndarray]) -> list[dict]:
    names = list(points)
    rows = []
    intervals = percentile_intervals(np.stack([boots[n] for n in names])) if boots else None
    for i, name in enumerate(names):
        point = points[name]
        row = dict(base, coefficient=name, value=float(point) if np.isfinite(point) else None)
        if intervals is None:
            row.update(ci_low=None, ci_high=None, n_boot_undefined=0, n_boot=0)
        else:
            low, high, undefined, total = (column[i] for column in intervals)
            row.update(ci_low=low, ci_high=high, n_boot_undefined=int(undefined), n_boot=int(total))
        rows.append(row)
    return rows


class _Matrix:
    """One label subset as arrays: units × raters codes (−1 = missing) and each unit's clip."""

    def __init__(self, frame: pd.DataFrame, coder: _Coder, raters: list[str]) -> None:
        unit_codes, units = pd.factorize(frame["unit"])
        rater_pos = {r: i for i, r in enumerate(raters)}
        self.codes = np.full((units.size, len(raters)), -1, dtype=np.int64)
        self.codes[unit_codes, frame["rater"].map(rater_pos).to_numpy()] = coder.codes(frame["value"])
        clip_of_unit = np.zeros(units.size, dtype=np.int64)
        clip_of_unit[unit_codes] = frame["clip_id"].to_numpy()
        clip_ids, self.clip = np.unique(clip_of_unit, return_inverse=True)
        self.n_clips = clip_ids.size


def _includes(kinds: Mapping[str, str], rater_a: str, rater_b: str) -> bool:
    """True when one rater is the all-expert consensus and the other an expert in it."""
    return any(a == "expert_consensus" and kinds.get(b) == "expert" for a, b in ((rater_a, rater_b), (rater_b, rater_a)))


def _pair_tables(matrix: _Matrix, raters: list[str], kinds: Mapping[str, str]) -> list[tuple]:
    """Per-clip count tables of every rater pair that shares units, over the categories it used.

    An expert is never paired with the consensus of all experts (it contains her own rating);
    :func:`_leave_one_out_rows` compares her with the consensus of the others instead.
    """
    tables = []
    for (i, rater_a), (j, rater_b) in itertools.combinations(enumerate(raters), 2):
        if _includes(kinds, rater_a, rater_b):
            continue
        both = (matrix.codes[:, i] >= 0) & (matrix.codes[:, j] >= 0)
        if not both.any():
            continue
        raw_a, raw_b = matrix.codes[both, i], matrix.codes[both, j]
        # only the categories this pair used: the tables stay small and empty rows change nothing
        used, compact = np.unique(np.concatenate([raw_a, raw_b]), return_inverse=True)
        q = used.size
        clips = matrix.clip[both]
        flat = np.zeros((matrix.n_clips, q * q))
        np.add.at(flat, (clips, compact[: raw_a.size] * q + compact[raw_a.size:]), 1.0)
        tables.append((rater_a, rater_b, used, flat, int(both.sum()), int(np.unique(clips).size)))
    return tables


def _pair_rows(matrix, coder, label, subset_kind, subset, raters, kinds, weights, section_override=None):
    rows = []
    names = ORDINAL_PAIR if coder.numeric is not None else NOMINAL_PAIR
    tables = _pair_tables(matrix, raters, kinds)
    if not tables:
        return rows
    # one product for all pairs: the weight matrix is read once per subset, not once per pair
    stacked = np.concatenate([t[3] for t in tables], axis=1)
    boot_stacked = resampled(weights, stacked) if weights.size else None
    offset = 0
    for rater_a, rater_b, used, flat, n_units, n_clips in tables:
        q = used.size
        per_clip = flat.reshape(matrix.n_clips, q, q)
        values = coder.numeric[used] if coder.numeric is not None else None
        total = per_clip.sum(0)
        point = stats.pair_table_stats(total, values, n_categories=coder.n_domain)
        boot_tables = None
        if boot_stacked is not None:
            boot_tables = boot_stacked[:, offset: offset + q * q].reshape(-1, q, q)
        offset += q * q
        boot = stats.pair_table_stats(boot_tables, values, n_categories=coder.n_domain) if boot_tables is not None else {}
        section = section_override or _section(kinds[rater_a], kinds[rater_b], rater_a, rater_b)
        base = dict(section=section, label=label, subset_kind=subset_kind, subset=subset, rater_a=rater_a,
                    rater_b=rater_b, n_units=n_units, n_clips=n_clips, n_raters=2)
        points = {name: float(point[name]) for name in names}
        boots = {name: boot[name] for name in names} if boot else {}
        if {kinds[rater_a], kinds[rater_b]} == {"expert", "judge"}:
            points["changed_fraction"] = 1 - points["percent_agreement"]
            if boot:
                boots["changed_fraction"] = 1 - boot["percent_agreement"]
        if coder.numeric is None:
            with np.errstate(divide="ignore", invalid="ignore"):
                for k, category in enumerate(coder.categories):
                    position = np.flatnonzero(used == k)
                    if position.size == 0:
                        points[f"prevalence:{category}"] = 0.0
                        if boot:
                            boots[f"prevalence:{category}"] = np.zeros(weights.shape[0])
                        continue
                    c = position[0]
                    points[f"prevalence:{category}"] = (total[c].sum() + total[:, c].sum()) / (2 * total.sum())
                    if boot:
                        boots[f"prevalence:{category}"] = (boot_tables[:, c, :].sum(-1) + boot_tables[:, :, c].sum(-1)) / (
                            2 * boot_tables.sum((-2, -1)))
        rows += _interval_rows(base, points, boots)
        if subset_kind == "all" and section_override is None and coder.numeric is None:
            analytic = stats.cohen_kappa_analytic(total)
            rows.append(dict(base, coefficient="cohen_kappa_asymptotic_se", value=analytic.std_error,
                             ci_low=analytic.ci_low, ci_high=analytic.ci_high, n_boot_undefined=0, n_boot=0))
    return rows


def _group_rows(matrix, coder, label, subset_kind, subset, raters, kinds, weights):
    rows = []
    primary = [i for i, r in enumerate(raters) if kinds[r] in ("judge", "expert")]
    if len(primary) < 2:
        return rows
    q = len(coder.categories)
    codes = matrix.codes[:, primary]
    counts = stats.unit_counts(codes, q)
    pairable = counts.sum(1) >= 2
    n_raters = int(((codes >= 0) & pairable[:, None]).any(axis=0).sum())
    base = dict(section="all-raters", label=label, subset_kind=subset_kind, subset=subset, rater_a=ALL_RATERS,
                rater_b="+".join(raters[i] for i in primary), n_units=int(pairable.sum()),
                n_clips=int(np.unique(matrix.clip[pairable]).size), n_raters=n_raters)
    coincidence = per_clip_sum(matrix.clip, stats.coincidence_matrices(counts), matrix.n_clips)
    boot_coincidence = resampled(weights, coincidence) if weights.size else None
    points: dict[str, float] = {}
    boots: dict[str, np.ndarray] = {}
    for level in (["nominal"] if coder.numeric is None else ["ordinal", "interval"]):
        points[f"krippendorff_alpha_{level}"] = float(stats.alpha_from_coincidence(coincidence.sum(0), coder.numeric, level))
        if boot_coincidence is not None:
            boots[f"krippendorff_alpha_{level}"] = stats.alpha_from_coincidence(boot_coincidence, coder.numeric, level)
    pieces = [per_clip_sum(matrix.clip, np.asarray(p, float), matrix.n_clips) for p in stats.ac1_sums(counts)]
    points["gwet_ac1"] = float(stats.ac1_from_sums(*(p.sum(0) for p in pieces), n_categories=coder.n_domain))
    if weights.size:
        boots["gwet_ac1"] = stats.ac1_from_sums(*(resampled(weights, p) for p in pieces), n_categories=coder.n_domain)
    rows += _interval_rows(base, points, boots)
    judges = [i for i in primary if kinds[raters[i]] == "judge"]
    if len(judges) >= 2 and coder.numeric is None:
        complete = (matrix.codes[:, judges] >= 0).all(axis=1)
        judge_counts = stats.unit_counts(matrix.codes[complete][:, judges], q)
        fleiss = [per_clip_sum(matrix.clip[complete], np.asarray(p, float), matrix.n_clips)
                  for p in stats.fleiss_sums(judge_counts)]
        m = len(judges)
        fleiss_base = dict(base, section="judge-judge", rater_b="+".join(raters[i] for i in judges),
                           n_units=int(complete.sum()), n_clips=int(np.unique(matrix.clip[complete]).size), n_raters=m)
        point = {"fleiss_kappa": float(stats.fleiss_from_sums(*(p.sum(0) for p in fleiss), m))}
        boot = {"fleiss_kappa": stats.fleiss_from_sums(*(resampled(weights, p) for p in fleiss), m)} if weights.size else {}
        rows += _interval_rows(fleiss_base, point, boot)
    return rows


def _leave_one_out_rows(part, label, subset_kind, subset, bootstrap, seed):
    """Each expert against the consensus of the *other* experts (leave one out).

    The consensus on a unit is the majority (nominal; ties missing) or the mean (ordinal) of
    the other experts' ratings, on units at least ``minimums.MIN_OTHER_EXPERTS`` of them rated.
    Where no unit qualifies the rows are there with an empty value and the reason.
    """
    rows = []
    experts_only = part[part["rater_kind"] == "expert"]
    experts = sorted(experts_only["rater"].unique())
    if len(experts) < 2:
        return rows  # one expert: no consensus to compare her with (and none was ever built)
    nominal = LABELS[label][0] == "nominal"
    for expert in experts:
        own = experts_only[experts_only["rater"] == expert]
        others = experts_only[(experts_only["rater"] != expert) & experts_only["unit"].isin(own["unit"])]
        n_others = others.groupby("unit")["rater"].nunique()
        qualified = others[others["unit"].isin(n_others.index[n_others >= minimums.MIN_OTHER_EXPERTS])]
        if nominal:
            consensus = majority_per_unit(qualified) if not qualified.empty else pd.Series(dtype=object)
        else:
            consensus = qualified.assign(value=qualified["value"].astype(float)).groupby("unit")["value"].mean()
        base = dict(section="expert-expert", label=label, subset_kind=subset_kind, subset=subset, rater_a=expert,
                    rater_b=CONSENSUS_OF_OTHERS, n_raters=2)
        if consensus.empty:
            if qualified.empty:
                available = int(n_others.max()) if not n_others.empty else 0
                why = f"needs at least {minimums.MIN_OTHER_EXPERTS} other experts on a unit; {available} available"
            else:
                why = "the other experts tie on every unit they share with this expert (no majority)"
            names = NOMINAL_PAIR if nominal else ORDINAL_PAIR
            rows += [dict(base, coefficient=name, value=None, ci_low=None, ci_high=None, n_units=0, n_clips=0,
                          n_boot_undefined=0, n_boot=0, reason=why) for name in names]
            continue
        meta = own.drop_duplicates("unit").set_index("unit")[["clip_id"]]
        derived = meta.loc[consensus.index].reset_index().assign(
            rater=CONSENSUS_OF_OTHERS, rater_kind="derived", value=consensus.to_numpy(dtype=object))
        frame = pd.concat([own[own["unit"].isin(consensus.index)][["unit", "clip_id", "rater", "rater_kind", "value"]],
                           derived[["unit", "clip_id", "rater", "rater_kind", "value"]]], ignore_index=True)
        coder = _Coder(label, frame["value"])
        pair = [expert, CONSENSUS_OF_OTHERS]
        matrix = _Matrix(frame, coder, pair)
        weights = resample_weights(matrix.n_clips, bootstrap, seed, f"{label}/{subset_kind}/{subset}/loo/{expert}")
        rows += _pair_rows(matrix, coder, label, subset_kind, subset, pair,
                           {expert: "expert", CONSENSUS_OF_OTHERS: "derived"}, weights, section_override="expert-expert")
    return rows


def apply_minimums(table: pd.DataFrame) -> pd.DataFrame:
    """Empty every value (and interval) below its floor in ``minimums``, with the reason.

    Rows that already carry a reason keep it; a value that is undefined on the data (e.g. κ of
    two raters who each used one label) gets the reason ``undefined on these data``.
    """
    table = table.copy()
    floors = [minimums.reason(c, int(u), int(r)) for c, u, r in zip(table["coefficient"], table["n_units"], table["n_raters"])]
    reasons = [f if pd.isna(g) else g for g, f in zip(table["reason"], floors)]
    below = pd.Series([r is not None for r in reasons], index=table.index)
    table.loc[below, ["value", "ci_low", "ci_high"]] = np.nan
    table["reason"] = [r if r is not None else (UNDEFINED if not np.isfinite(v) else None)
                       for r, v in zip(reasons, table["value"].astype(float))]
    return table


def _localizability_rows(ratings, seed, n_resamples):
    rows = []
    scores = ratings[(ratings["label"] == "localizability")].set_index("clip_id")["value"].astype(float)
    expert_ratings = ratings[ratings["label"] == "rating"]
    for rater, group in expert_ratings.groupby("rater", sort=True):
        joined = group.set_index("clip_id")["value"].astype(float).to_frame("rating").join(scores.rename("l_k"), how="inner")
        if joined.empty:
            continue
        x, y = joined["rating"].to_numpy(), joined["l_k"].to_numpy()
        point = stats.spearman(list(x), list(y))
        samples = None
        if n_resamples > 0 and len(x) > 1:
            rng = np.random.default_rng([seed, len(x), 7])
            idx = rng.integers(0, len(x), size=(n_resamples, len(x)))
            rx, ry = rankdata(x[idx], axis=1), rankdata(y[idx], axis=1)
            rx -= rx.mean(1, keepdims=True)
            ry -= ry.mean(1, keepdims=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                samples = (rx * ry).sum(1) / np.sqrt((rx**2).sum(1) * (ry**2).sum(1))
        base = dict(section="curation-expert", label="rating~localizability", subset_kind="all", subset="all",
                    rater_a=rater, rater_b="curation_fit", n_units=len(x), n_clips=len(x), n_raters=2)
        rows += _interval_rows(base, {"spearman": np.nan if point is None else point},
                               {} if samples is None else {"spearman": samples})
    return rows


def compute_coefficients(
    ratings: pd.DataFrame,
    clips: pd.DataFrame,
    *,
    category_roots: Mapping[str, str] | None = None,
    bootstrap: int = 2000,
    seed: int = 0,
    retest: pd.DataFrame | None = None,
    breakdowns: bool = True,
    task: TaskContext | None = None,
) -> pd.DataFrame:
    """Every coefficient, for all units and each breakdown, with bootstrap intervals.

    Parameters
    ----------
    ratings
        The long rating table (``units.RATING_COLUMNS``), derived raters included.
    clips
        clip_id, continent, speech per clip.
    category_roots
        category id → AudioSet root name; without it the root breakdown is skipped.
    bootstrap, seed
        Number of cluster resamples (0 = none) and the seed.
    retest
        Earlier judge-run ratings (``RATING_COLUMNS`` + judge_run_id) for test-retest.
    breakdowns
        False: only the "all units" rows (a quick overview, e.g. the cockpit's).
    task
        Progress (one unit per label and subset, the bootstrap's cost) and cancel: a cancel
        raises :class:`~workbench.tasks.TaskCancelled` between subsets (nothing is returned,
        so nothing is written).

    Returns
    -------
    DataFrame
        ``COEFFICIENT_COLUMNS``; every row carries its n (``n_units``, ``n_raters``), and a value
        below its floor in :mod:`workbench.agreement.minimums` is empty with a ``reason``.
    """
    rows: list[dict] = []
    info = clips.set_index("clip_id")
    ratings = ratings.assign(
        root=category_root_column(ratings, category_roots),
        continent=ratings["clip_id"].map(info["continent"]),
        speech=ratings["clip_id"].map(info["speech"]).map({True: "speech", False: "no speech"}),
    )
    work: list[tuple[str, _Coder, str, str, pd.DataFrame]] = []
    for label in ("contribution", "effect", "polarity", "rating", "decision"):
        frame = ratings[ratings["label"] == label]
        if frame["rater"].nunique() < 2:
            continue
        coder = _Coder(label, frame["value"])
        work.append((label, coder, "all", "all", frame))
        columns = ["continent", "speech"] if label in ("rating", "decision") else ["category_id", "root", "continent", "speech"]
        for column in columns if breakdowns else []:
            if frame[column].isna().all():
                continue
            for value, part in frame.groupby(column, sort=True):
                work.append((label, coder, "category" if column == "category_id" else column, str(value), part))
    if task is not None:
        task.set_total(len(work) + 1)
    for label, coder, subset_kind, subset, part in work:
        raters = _rater_order(part)
        kinds = part.drop_duplicates("rater").set_index("rater")["rater_kind"].to_dict()
        matrix = _Matrix(part, coder, raters)
        weights = resample_weights(matrix.n_clips, bootstrap, seed, f"{label}/{subset_kind}/{subset}")
        rows += _pair_rows(matrix, coder, label, subset_kind, subset, raters, kinds, weights)
        rows += _leave_one_out_rows(part, label, subset_kind, subset, bootstrap, seed)
        rows += _group_rows(matrix, coder, label, subset_kind, subset, raters, kinds, weights)
        if task is not None:
            task.advance()
            task.check_cancel()
    rows += _localizability_rows(ratings, seed, bootstrap)
    if retest is not None and not retest.empty:
        rows += _retest_rows(ratings, retest, bootstrap, seed)
    if task is not None:
        task.advance()
    table = pd.DataFrame(rows, columns=COEFFICIENT_COLUMNS)
    table = table.astype({"value": float, "ci_low": float, "ci_high": float, "n_units": int, "n_raters": int})
    return apply_minimums(table)


def _retest_rows(ratings, retest, bootstrap, seed):
    rows = []
    for (rater, run_id, label), earlier in retest.groupby(["rater", "judge_run_id", "label"], sort=True):
        latest = ratings[(ratings["rater"] == rater) & (ratings["label"] == label)]
        rerun = earlier.assign(rater=f"{rater}@run{run_id}")[latest.columns.intersection(earlier.columns)]
        frame = pd.concat([latest[rerun.columns], rerun], ignore_index=True)
        coder = _Coder(label, frame["value"])
        pair = [rater, f"{rater}@run{run_id}"]
        matrix = _Matrix(frame, coder, pair)
        weights = resample_weights(matrix.n_clips, bootstrap, seed, f"retest/{rater}/{run_id}/{label}")
        rows += _pair_rows(matrix, coder, label, "all", "all", pair, dict.fromkeys(pair, "judge"), weights,
                           section_override="test-retest")
    return rows
