"""Paired comparison of two models on the clips both answered (``aglw compare``).

Accuracies and within-k-km rates: McNemar's exact test (two-sided binomial test on the
discordant pairs; p = 1 without any), on the common clips where both answers count for that
metric. Mean distance and GeoScore: a paired bootstrap of the per-clip differences (percentile
interval; p = 2 · min(share ≤ 0, share ≥ 0), at least 1/B). Holm's correction over the metrics
reported. See ``design/studies.md`` ("Counting").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from storage import Store
from workbench.errors import AglwError, InputError
from workbench.metrics.aggregate import metric_inputs
from workbench.metrics.intervals import (
    BINARY_KEYS,
    CONTINUOUS_KEYS,
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
) -> dict[str, Any]:
    """Compare two stored models on the clips (dataset keys) both answered.

    ``aliases``: the country alias table, applied to both models' answers as the leaderboard
    applies it (:mod:`workbench.metrics.aliased`; None or empty: none).

    Returns
    -------
    dict
        ``models`` ([A, B]), ``profile``, ``n_common``, ``bootstrap``, ``seed`` and ``metrics``:
        one ``{metric, n, a, b, difference, test, p_value, p_holm}`` per metric (``n``: the
        common clips the metric counts; ``difference`` = a − b; ``ci`` the paired bootstrap's
        95 % interval of the difference for the continuous metrics). Where an alias table
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
        raise AglwError(f"--models names {model_a!r} twice; compare two different models")
    chosen = list(metrics) if metrics else list(COMPARED_KEYS)
    unknown = [m for m in chosen if m not in COMPARED_KEYS]
    if unknown:
        raise AglwError(f"--metric {', '.join(unknown)}: use any of {', '.join(COMPARED_KEYS)}")
    if bootstrap < 1:
        raise AglwError(f"--bootstrap {bootstrap}: at least one resample is needed")
    records = metric_records(store, human_sounds=False, question_ids=True)
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
    out = []
    for metric in chosen:
        (value_a, weight_a), (value_b, weight_b) = terms[0][metric], terms[1][metric]
        both = (weight_a > 0) & (weight_b > 0)
        n = int(np.count_nonzero(both))
        a = float(value_a[both].mean()) if n else math.nan
        b = float(value_b[both].mean()) if n else math.nan
        row: dict[str, Any] = {"metric": metric, "n": n, "a": _nan_to_none(a), "b": _nan_to_none(b),
                               "difference": _nan_to_none(a - b)}
        if metric in CONTINUOUS_KEYS:
            p, interval = paired_bootstrap(value_a[both], value_b[both], bootstrap=bootstrap, seed=seed,
                                           name=f"{model_a}|{model_b}|{metric}")
            row.update(test="paired_bootstrap", p_value=_nan_to_none(p), ci=interval)
        else:
            p = mcnemar_exact(value_a[both] > 0, value_b[both] > 0) if n else math.nan
            row.update(test="mcnemar_exact", p_value=_nan_to_none(p))
        out.append(row)
    tested = [i for i, row in enumerate(out) if row["p_value"] is not None]
    adjusted = holm([out[i]["p_value"] for i in tested])
    for row in out:
        row["p_holm"] = None
    for i, p in zip(tested, adjusted):
        out[i]["p_holm"] = p
    result = {"models": [model_a, model_b], "profile": profile, "n_common": len(common), "bootstrap": bootstrap,
              "seed": seed, "metrics": out}
    if changed["country_alias_n"] and aliases is not None:
        from workbench.metrics.aliased import table_summary

        result["alias_table"] = {**table_summary(aliases), **changed}
    return result


def profiles() -> tuple[str, ...]:
    """The profiles ``compare`` accepts."""
    return PROFILES
