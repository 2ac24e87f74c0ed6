"""Paired comparison of two models on the clips both answered (``aglw compare``).

Accuracies and within-k-km rates: McNemar's exact test (two-sided binomial test on the
discordant pairs; p = 1 without any), on the common clips where both answers count for that
metric, with the paired bootstrap's percentile interval of the difference. Mean distance and
GeoScore: a paired bootstrap of the per-clip differences (percentile interval; p = 2 · min(share ≤ 0,
share ≥ 0), at least 1/B). Holm's correction over the metrics reported. See ``design/studies.md`` ("Counting").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from storage import Store
from workbench.errors import AglwError, InputError, UsageError
from workbench.metrics.aggregate import metric_inputs
from workbench.metrics.intervals import (
    BINARY_KEYS,
    CONTINUOUS_KEYS,
    clip_terms,
    DEFAULT_BOOTSTRAP,
    holm,
    mcnemar_exact,
    paired_bootstrap,
    row_terms,
)
from workbench.metrics.keys import PROFILES

if TYPE_CHECKING:
    from workbench.country_aliases import AliasTable

COMPARED_KEYS = ("distance_error_km", "geoscore_mean", *BINARY_KEYS)


def _nan_to_none(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _paired_interval(values_a: np.ndarray, values_b: np.ndarray, bootstrap: int, seed: int, model_a: str,
                     model_b: str, metric: str) -> list[float | None]:
    """The paired bootstrap's 95 % percentile interval of a binary metric's difference (clips
    resampled in pairs, as for the continuous metrics); its test stays McNemar's."""
    return paired_bootstrap(values_a, values_b, bootstrap=bootstrap, seed=seed, name=f"{model_a}|{model_b}|{metric}")[1]


def compare_models(
    store: Store,
    model_a: str,
    model_b: str,
    *,
    profile: str = "agl1k",
    metrics: Sequence[str] | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    aliases: AliasTable | None = None,
    answers: Mapping[str, Mapping[str, np.ndarray]] | None = None,
    accepted: Mapping[str, np.ndarray | None] | None = None,
) -> dict[str, Any]:
    """Compare two stored models, or any two leaderboard rows, on the clips (dataset keys) both answered.

    ``aliases``: the country alias table, applied to both models' answers as the leaderboard
    applies it (:mod:`workbench.metrics.aliased`; None or empty: none). ``answers``: the records
    (one object array per field, with ``question_id``) of rows that are not stored models, e.g.
    the human rows (:func:`workbench.studies.crowd.compare_rows` gives them), and ``accepted``
    their answers' acceptance under the alias table. Where a side answers a clip several times
    (a pooled human row), the clip's score is the mean over its answers and every metric is
    tested by the paired bootstrap over clips; McNemar's test only when both sides answer each
    clip once (:func:`_compare_sets`).

    Returns
    -------
    dict
        ``models`` ([A, B]), ``profile``, ``n_common``, ``bootstrap``, ``seed`` and ``metrics``:
        one ``{metric, n, a, b, difference, test, p_value, p_holm}`` per metric (``n``: the
        common clips the metric counts; ``difference`` = a − b; ``ci`` the paired bootstrap's
        95 % percentile interval of the difference, for every metric: the accuracies' too, whose
        p-value is McNemar's). Where an alias table
        applies, ``alias_table``: its file, its aliases and ``country_alias_n`` /
        ``continent_alias_n`` ([A, B]: of the ``n_common`` answers, how many it turned correct).

    Raises
    ------
    AglwError
        Unknown model or profile, the same model twice, or an unknown metric.
    InputError
        The models share no clip.
    """
    from workbench.metrics.records import alias_accepted, metric_records
    from workbench.metrics.service import check_profile

    check_profile(profile)
    if model_a == model_b:
        raise UsageError(f"--models names {model_a!r} twice; compare two different models")
    chosen = list(metrics) if metrics else list(COMPARED_KEYS)
    unknown = [m for m in chosen if m not in COMPARED_KEYS]
    if unknown:
        raise UsageError(f"--metric {', '.join(unknown)}: use any of {', '.join(COMPARED_KEYS)}")
    if bootstrap < 1:
        raise UsageError(f"--bootstrap {bootstrap}: at least one resample is needed")
    records = metric_records(store, human_sounds=False, question_ids=True)
    answers = answers or {}
    if model_a in answers or model_b in answers:
        return _compare_sets(store, records, model_a, model_b, answers, accepted or {}, profile=profile,
                             chosen=chosen, bootstrap=bootstrap, seed=seed, aliases=aliases)
    missing = [m for m in (model_a, model_b) if m not in records.models]
    if missing:
        known = ", ".join(records.models) or "none imported yet"
        raise AglwError(f"no predictions for model(s) {', '.join(map(repr, missing))} (models: {known})")
    keys = records.columns["question_id"]
    ranks = [records.models.index(model_a), records.models.index(model_b)]
    rows_of = []
    for rank in ranks:
        positions = np.flatnonzero(records.model_rank == rank)
        rows_of.append({key: int(p) for key, p in zip(keys[positions].tolist(), positions.tolist())})
    common = sorted(set(rows_of[0]) & set(rows_of[1]))
    if not common:
        raise InputError(f"{model_a} and {model_b} answered no clip in common; nothing to compare")
    terms = []
    changed: dict[str, list[int]] = {"country_alias_n": [], "continent_alias_n": []}
    for index in range(2):
        order = np.array([rows_of[index][key] for key in common], dtype=np.int64)
        part = {name: values[order] for name, values in records.columns.items()}
        inputs = metric_inputs(part, (profile,), alias_accepted=alias_accepted(store, part, aliases))
        terms.append(row_terms(inputs, profile))
        for kind in ("country", "continent"):
            if f"{profile}_{kind}_alias" in inputs.columns:
                changed[f"{kind}_alias_n"].append(int(np.count_nonzero(inputs.columns[f"{profile}_{kind}_alias"])))
    out = _tested_metrics(terms[0], terms[1], chosen, one_answer_each=True, bootstrap=bootstrap, seed=seed,
                          names=(model_a, model_b))
    result = {"models": [model_a, model_b], "profile": profile, "n_common": len(common), "bootstrap": bootstrap,
              "seed": seed, "metrics": out}
    if changed["country_alias_n"] and aliases is not None:
        from workbench.metrics.aliased import table_summary

        result["alias_table"] = {**table_summary(aliases), **changed}
    return result


def _side(store: Store, records: Any, name: str, answers: Mapping[str, Mapping[str, np.ndarray]],
          accepted: Mapping[str, np.ndarray | None], aliases: AliasTable | None) -> tuple[dict[str, np.ndarray], Any]:
    """A compared row's records (columns) and their acceptance under the alias table."""
    from workbench.metrics.records import alias_accepted

    if name in answers:
        return dict(answers[name]), accepted.get(name)
    rows = np.flatnonzero(records.model_rank == records.models.index(name))
    part = {column: values[rows] for column, values in records.columns.items()}
    return part, alias_accepted(store, part, aliases)


def _compare_sets(store: Store, records: Any, model_a: str, model_b: str,
                  answers: Mapping[str, Mapping[str, np.ndarray]], accepted: Mapping[str, np.ndarray | None], *,
                  profile: str, chosen: list[str], bootstrap: int, seed: int,
                  aliases: AliasTable | None) -> dict[str, Any]:
    """:func:`compare_models` where a side is not a stored model: per clip, the mean over its answers."""
    missing = [m for m in (model_a, model_b) if m not in records.models and m not in answers]
    if missing:
        known = ", ".join([*records.models, *answers]) or "none imported yet"
        raise AglwError(f"no answers for row(s) {', '.join(map(repr, missing))} (rows: {known})")
    sides = [_side(store, records, name, answers, accepted, aliases) for name in (model_a, model_b)]
    common = set(sides[0][0]["question_id"].tolist()) & set(sides[1][0]["question_id"].tolist())
    if not common:
        raise InputError(f"{model_a} and {model_b} answered no clip in common; nothing to compare")
    per_clip, n_answers, single = [], [], True
    changed: dict[str, list[int]] = {"country_alias_n": [], "continent_alias_n": []}
    for columns, ok in sides:
        keep = np.array([key in common for key in columns["question_id"].tolist()], dtype=bool)
        part = {name: values[keep] for name, values in columns.items()}
        inputs = metric_inputs(part, (profile,), alias_accepted=None if ok is None else ok[keep])
        clips, terms = clip_terms(row_terms(inputs, profile), part["question_id"], mean=True)
        per_clip.append(terms)
        n_answers.append(int(keep.sum()))
        single = single and int(keep.sum()) == len(clips)
        for kind in ("country", "continent"):
            if f"{profile}_{kind}_alias" in inputs.columns:
                changed[f"{kind}_alias_n"].append(int(np.count_nonzero(inputs.columns[f"{profile}_{kind}_alias"])))
    out = _tested_metrics(per_clip[0], per_clip[1], chosen, one_answer_each=single, bootstrap=bootstrap, seed=seed,
                          names=(model_a, model_b))
    result = {"models": [model_a, model_b], "profile": profile, "n_common": len(common), "bootstrap": bootstrap,
              "seed": seed, "metrics": out, "n_answers": n_answers}
    if len(changed["country_alias_n"]) == 2 and aliases is not None:
        from workbench.metrics.aliased import table_summary

        result["alias_table"] = {**table_summary(aliases), **changed}
    return result


def _tested_metrics(terms_a: Mapping[str, Any], terms_b: Mapping[str, Any], chosen: list[str], *,
                    one_answer_each: bool, bootstrap: int, seed: int, names: tuple[str, str]) -> list[dict[str, Any]]:
    """One row per metric on the clips both sides count for it: the two means, their difference,
    the test and its interval, Holm's correction over the metrics tested.

    ``terms_*``: metric -> (per-clip value, counted) on the common clips in one order. McNemar's
    exact test needs one answer per clip on each side (``one_answer_each``); otherwise every metric
    gets the paired bootstrap over clips.
    """
    model_a, model_b = names
    out = []
    for metric in chosen:
        (value_a, counted_a), (value_b, counted_b) = terms_a[metric], terms_b[metric]
        both = (counted_a > 0) & (counted_b > 0)
        n = int(np.count_nonzero(both))
        a = float(value_a[both].mean()) if n else math.nan
        b = float(value_b[both].mean()) if n else math.nan
        row: dict[str, Any] = {"metric": metric, "n": n, "a": _nan_to_none(a), "b": _nan_to_none(b),
                               "difference": _nan_to_none(a - b)}
        if metric in CONTINUOUS_KEYS or not one_answer_each:
            p, interval = paired_bootstrap(value_a[both], value_b[both], bootstrap=bootstrap, seed=seed,
                                           name=f"{model_a}|{model_b}|{metric}")
            row.update(test="paired_bootstrap", p_value=_nan_to_none(p), ci=interval)
        else:
            p = mcnemar_exact(value_a[both] > 0, value_b[both] > 0) if n else math.nan
            row.update(test="mcnemar_exact", p_value=_nan_to_none(p),
                       ci=_paired_interval(value_a[both], value_b[both], bootstrap, seed, model_a, model_b, metric))
        out.append(row)
    tested = [i for i, row in enumerate(out) if row["p_value"] is not None]
    adjusted = holm([out[i]["p_value"] for i in tested])
    for row in out:
        row["p_holm"] = None
    for i, p in zip(tested, adjusted):
        out[i]["p_holm"] = p
    return out


def profiles() -> tuple[str, ...]:
    """The profiles ``compare`` accepts."""
    return PROFILES
