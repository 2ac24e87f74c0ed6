"""Leaderboard metrics of the models stored in a project (reads the store, returns plain data)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from sqlalchemy import select

from storage import Store
from storage import tables as T
from workbench.errors import AglwError
from workbench.metrics.aggregate import map_pairs, map_values, metric_counts, metric_inputs, metrics_of
from workbench.metrics.continents import continent_of_iso
from workbench.metrics.core import (
    METRIC_KEYS,
    PROFILES,
    Profile,
    country_iso,
    normalize_continent_agl1k,
)
from workbench.metrics.records import (
    MetricRecords,
    alias_accepted,
    answered_alm_runs,
    metric_records,
    object_array,
    record_columns,
    record_frame,
)
from workbench.speech import HUMAN_SOUNDS_THRESHOLD

if TYPE_CHECKING:
    import pandas as pd

    from workbench.country_aliases import AliasTable

# pandas is loaded only by what returns a DataFrame (prediction_records, leaderboard) and by the
# groupings: `aglw metrics` and `aglw leaderboard` start without it (issue 32, bench P11).

GroupBy = Literal["continent", "speech"]
GROUP_BY_OPTIONS: tuple[str, ...] = ("continent", "speech")
# AGL1K's published speech split: human_sounds alone, at the threshold of the one speech rule.
SPEECH_THRESHOLD = HUMAN_SOUNDS_THRESHOLD
SPEECH = "speech"
NO_SPEECH = "no speech"
NO_CLIP = "(no clip)"
NO_CONTINENT = "(missing)"


def model_names(store: Store) -> list[str]:
    """Names of the models with answers stored, alphabetically (:func:`~workbench.metrics.records.answered_alm_runs`)."""
    with store.read() as connection:
        return [model for _, model in answered_alm_runs(connection)]


def prediction_records(store: Store, model: str | None = None) -> pd.DataFrame:
    """Stored result records as a DataFrame (one row per record).

    Columns: ``model``, ``question_id``, the true/predicted fields, ``distance_error_km``
    (measured from the linked clip's position: the one rule of :mod:`workbench.metrics.distance`),
    and ``human_sounds`` of the linked clip (NaN when the record has no clip).
    """
    return record_frame(store, model).drop(columns="id")


def check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise AglwError(f"unknown metric profile {profile!r}; use one of {', '.join(PROFILES)}")


def model_metrics(store: Store, model: str, profile: Profile = "agl1k", *,
                  aliases: AliasTable | None = None) -> dict[str, Any]:
    """Leaderboard metrics of one stored model.

    Parameters
    ----------
    store : Store
        The project store.
    model : str
        A model name given at ``import predictions``.
    profile : {"agl1k", "iso"}
        Metric profile (see :func:`workbench.metrics.aggregate.compute_metrics`).
    aliases : AliasTable, optional
        The country alias table (:func:`workbench.country_aliases.alias_table`): an answer
        naming the country its clip's position lies in counts as correct where the table
        accepts the stated country covering it (:mod:`workbench.metrics.aliased`). None or an
        empty table: no alias applies.

    Returns
    -------
    dict
        The :data:`~workbench.metrics.core.METRIC_KEYS`, ``n_<metric>`` for each metric computed on
        fewer answers than ``n`` and ``n_unreadable``
        (:func:`~workbench.metrics.aggregate.metric_counts`); where a table applies also
        ``country_alias_n`` and ``continent_alias_n`` (of the ``n`` answers, how many the table
        turned correct) and ``alias_table`` (its file and aliases).

    Raises
    ------
    AglwError
        Unknown profile, or no predictions stored for ``model`` (the message lists the models).
    """
    check_profile(profile)
    records = record_columns(store, model)
    if not len(records["id"]):
        known = ", ".join(model_names(store)) or "none imported yet"
        raise AglwError(f"no predictions for model {model!r} (models: {known})")
    accepted = alias_accepted(store, records, aliases)
    # compute_metrics without its DataFrame: the same inputs, read from the same values.
    inputs = metric_inputs(records, (profile,), alias_accepted=accepted)
    result = metrics_of(inputs, profile, model)
    result.update(metric_counts(inputs, profile))  # n_<metric> where fewer than n, n_unreadable (issue 40)
    if accepted is not None and aliases is not None:
        from workbench.metrics.aliased import table_summary

        result["alias_table"] = table_summary(aliases)
    return result


def group_labels(records: Mapping[str, np.ndarray], profile: str, by: str) -> np.ndarray:
    """Each record's group: speech or not (linked clip's ``human_sounds``), or the true
    continent in the profile's sense; computed once per distinct value."""
    if by == "speech":
        import pandas as pd

        human_sounds = pd.to_numeric(pd.Series(records["human_sounds"], dtype=object), errors="coerce").to_numpy(
            dtype=float, na_value=np.nan
        )
        labels = np.where(human_sounds >= SPEECH_THRESHOLD, SPEECH, NO_SPEECH).astype(object)
        labels[np.isnan(human_sounds)] = NO_CLIP
        return labels
    if profile == "iso":
        return map_pairs(
            records["true_country"],
            records["true_continent"],
            lambda country, continent: continent_of_iso(country_iso(country))
            or normalize_continent_agl1k(continent)
            or NO_CONTINENT,
        )
    return map_values(records["true_continent"], lambda v: normalize_continent_agl1k(v) or NO_CONTINENT)


_Slices = list[tuple[int, str | None, slice]]  # (model rank, group, rows)


def _groups(model_rank: np.ndarray, labels: np.ndarray | None) -> tuple[np.ndarray, _Slices]:
    """The row order that puts each (model, group) together, and each one's slice of it.

    The order is stable: within a slice the rows keep their order, so every sum runs over the
    same values in the same order as when each model's rows were picked out one by one (the
    figures stay identical to the last digit).
    """
    if labels is None:
        group_names: list[str | None] = [None]
        key = model_rank
    else:
        import pandas as pd

        codes, uniques = pd.factorize(labels)
        # Groups in sorted order of their names, as pandas' groupby gave them.
        ranking = sorted(range(len(uniques)), key=lambda code: uniques[code])
        group_names = [uniques[code] for code in ranking]
        rank_of_code = np.empty(len(uniques), dtype=np.int64)
        rank_of_code[ranking] = np.arange(len(uniques))
        key = model_rank * len(group_names) + rank_of_code[codes]
    order = np.argsort(key, kind="stable")
    width = len(group_names)
    counts = np.bincount(key, minlength=1).tolist()
    slices: _Slices = []
    start = 0
    for k, count in enumerate(counts):
        if count:
            slices.append((k // width, group_names[k % width], slice(start, start + count)))
        start += count
    return order, slices


def _common_mask(records: MetricRecords, listed: list[int],
                 answered_too: Sequence[set[Any]] = ()) -> tuple[np.ndarray, set[Any]]:
    """Rows of the listed models (ranks) on the clips (dataset keys) every one of them, and every
    other listed row (``answered_too``: the clips each human row answered), answered; and those clips."""
    keys = records.columns["question_id"]
    ranks = records.model_rank
    common: set[Any] | None = None
    for answered in [*(set(keys[ranks == rank].tolist()) for rank in listed), *answered_too]:
        common = set(answered) if common is None else common & answered
    common = common or set()
    mask = np.isin(ranks, listed) & np.array([key in common for key in keys.tolist()], dtype=bool)
    return mask, common


def dataset_sizes(store: Store, profile: str, by: str | None) -> dict[tuple[Any, Any], int]:
    """(dataset id, group) -> how many of the dataset's clips fall in the group (group None
    without a breakdown): the denominator of each row's coverage."""
    clip = T.clip.c
    with store.read() as connection:
        clips = connection.execute(select(clip.dataset_id, clip.country, clip.continent, clip.human_sounds)).all()
    if not clips:
        return {}
    dataset = object_array([c[0] for c in clips])
    if by is None:
        labels = object_array([None] * len(clips))
    else:
        labels = group_labels({"true_country": object_array([c[1] for c in clips]),
                                "true_continent": object_array([c[2] for c in clips]),
                                "human_sounds": object_array([c[3] for c in clips])}, profile, by)
    sizes: dict[tuple[Any, Any], int] = {}
    for pair in zip(dataset.tolist(), labels.tolist()):
        sizes[pair] = sizes.get(pair, 0) + 1
    return sizes


def _coverage(linked: set[Any], group: Any, sizes: dict[tuple[Any, Any], int]) -> int | None:
    """Clips in the datasets a model's linked records belong to (in the row's group); None when
    no record is linked to a clip."""
    if not linked:
        return None
    return sum(sizes.get((d, group), 0) for d in linked)


@dataclass(frozen=True)
class LeaderboardRows:
    """The leaderboard as plain rows, in the table's order: what :func:`leaderboard` puts in a
    DataFrame, and what `aglw leaderboard` prints without loading pandas."""

    columns: list[str]
    # One dict per row, with exactly ``columns`` as keys (in that order).
    rows: list[dict[str, Any]]
    n_common: int | None = None
    alias_table: dict[str, Any] | None = None
    # With ``common``: the clips (dataset keys) every listed row answered (what other rows are ranked on).
    common_keys: frozenset[Any] | None = None


def leaderboard(
    store: Store,
    profile: Profile | Literal["both"] = "agl1k",
    by: GroupBy | None = None,
    *,
    common: bool = False,
    models: list[str] | None = None,
    ci: bool = False,
    bootstrap: int = 2000,
    seed: int = 0,
    aliases: AliasTable | None = None,
) -> pd.DataFrame:
    """Metrics of every stored model, optionally per group of clips: :func:`leaderboard_rows`
    as a DataFrame.

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`leaderboard_rows`, in its order and with its columns.
        ``attrs["n_common"]``: the clips every listed model answered (with ``common``);
        ``attrs["alias_table"]``: the applied table's file and aliases (None without one).
    """
    import pandas as pd

    board = leaderboard_rows(store, profile, by, common=common, models=models, ci=ci, bootstrap=bootstrap,
                             seed=seed, aliases=aliases)
    table = pd.DataFrame(board.rows, columns=board.columns)
    table.attrs["n_common"] = board.n_common
    table.attrs["alias_table"] = board.alias_table
    return table


def sort_rows(rows: list[dict[str, Any]], keys: list[str]) -> list[dict[str, Any]]:
    """``rows`` stably sorted by ``keys``, ascending, missing values (None, NaN) last under each key."""
    def key(row: dict[str, Any]) -> tuple[tuple[int, Any], ...]:
        return tuple((1, 0) if row[k] is None or row[k] != row[k] else (0, row[k]) for k in keys)

    return sorted(rows, key=key)


def leaderboard_rows(
    store: Store,
    profile: Profile | Literal["both"] = "agl1k",
    by: GroupBy | None = None,
    *,
    common: bool = False,
    models: list[str] | None = None,
    ci: bool = False,
    bootstrap: int = 2000,
    seed: int = 0,
    aliases: AliasTable | None = None,
    answered_too: Sequence[set[Any]] = (),
) -> LeaderboardRows:
    """Metrics of every stored model, optionally per group of clips.

    Parameters
    ----------
    store : Store
        The project store.
    profile : {"agl1k", "iso", "both"}
        Metric profile; ``"both"`` gives one row per profile (compare them side by side).
    by : {None, "continent", "speech"}
        Group rows by the true continent (in the profile's sense: for ``iso`` the continent of
        the true country's ISO code) or by speech (linked clip's AGL1K ``human_sounds`` >= 0.1).
    common : bool
        Rank every listed model on the clips (dataset keys) all of them answered.
    models : list of str, optional
        The models listed (default: every stored model).
    ci : bool
        Add ``<key>_ci`` = [low, high], 95 % percentile intervals from ``bootstrap`` resamples
        of each row's clips (seeded by ``seed`` and the model's name).
    aliases : AliasTable, optional
        The country alias table, applied as by :func:`model_metrics` (None or empty: none).
    answered_too : sequence of sets, optional
        With ``common``: the clips (dataset keys) each other listed row answered (the human rows,
        :mod:`workbench.studies.crowd`); the common clips are those every model and every one of
        these answered.

    Returns
    -------
    LeaderboardRows
        Columns :data:`METRIC_KEYS`, ``n_dataset`` (clips in the datasets the model's records
        are linked to, in the row's group; None when none is linked), ``group`` when ``by`` is
        given, the intervals with ``ci``, and ``country_alias_n``/``continent_alias_n`` where an
        alias table applies (of the row's ``n`` answers, how many it turned correct); sorted by
        group, profile, ascending mean distance error (undefined last) and model. No rows when
        no model is stored. ``n_common``: the clips every listed model answered (with
        ``common``); ``alias_table``: the applied table's file and aliases (None without one).

    Raises
    ------
    AglwError
        Unknown profile, grouping or model.
    """
    from workbench.metrics.intervals import bootstrap_intervals, interval_keys, resample_counts

    profiles: tuple[str, ...] = PROFILES if profile == "both" else (profile,)
    for name in profiles:
        check_profile(name)
    if by is not None and by not in GROUP_BY_OPTIONS:
        raise AglwError(f"unknown grouping {by!r}; use one of {', '.join(GROUP_BY_OPTIONS)}")
    records = metric_records(store, human_sounds=by == "speech", question_ids=common)
    if models is not None:
        unknown = [m for m in models if m not in records.models]
        if unknown:
            known = ", ".join(records.models) or "none imported yet"
            raise AglwError(f"no predictions for model(s) {', '.join(map(repr, unknown))} (models: {known})")
    listed = [records.models.index(m) for m in models] if models is not None else list(range(len(records.models)))
    n_common, common_keys = None, None
    keep = np.isin(records.model_rank, listed)
    if common:
        keep, found = _common_mask(records, listed, answered_too)
        n_common, common_keys = len(found), frozenset(found)
    if not keep.all():
        records = MetricRecords({k: v[keep] for k, v in records.columns.items()}, records.model_rank[keep],
                                 records.models, records.datasets)
    columns = [*METRIC_KEYS, "n_dataset"] if by is None else ["group", *METRIC_KEYS, "n_dataset"]
    accepted = alias_accepted(store, records.columns, aliases)
    if accepted is not None:
        columns += ["country_alias_n", "continent_alias_n"]
    if ci:
        columns += list(interval_keys())
    # The per-record work (distinct values normalised once) is done once for every model and
    # profile; the rows are then ordered by model and group once per profile, and each group
    # is a handful of array operations on a slice.
    inputs = metric_inputs(records.columns, profiles, alias_accepted=accepted)
    rows: list[dict[str, Any]] = []
    # Only the continent groups differ by profile; otherwise every profile reads the same slices,
    # and a slice's bootstrap resamples are drawn once for all profiles.
    passes = []
    for names in ([[name] for name in profiles] if by == "continent" else [list(profiles)]):
        labels = None if by is None else group_labels(records.columns, names[0], by)
        order, slices = _groups(records.model_rank, labels)
        passes.append((names, dataset_sizes(store, names[0], by), inputs.take(order), slices))
    for names, sizes, ordered, slices in passes:
        for rank, group, rows_of_group in slices:
            part = ordered.take(rows_of_group)
            label = records.models[rank] if group is None else f"{records.models[rank]}|{group}"
            counts = resample_counts(len(part), bootstrap, seed, label) if ci else None
            for name in names:
                metrics = metrics_of(part, name, records.models[rank])
                metrics["n_dataset"] = _coverage(records.datasets.get(rank, set()), group, sizes)
                if ci:
                    metrics.update(bootstrap_intervals(part, name, bootstrap=bootstrap, seed=seed, name=label,
                                                       counts=counts))
                row = metrics if by is None else {"group": group, **metrics}
                rows.append({column: row.get(column, math.nan) for column in columns})
    sort_keys = (["group"] if by is not None else []) + ["profile", "distance_error_km", "model"]
    summary = None
    if accepted is not None and aliases is not None:
        from workbench.metrics.aliased import table_summary

        summary = table_summary(aliases)
    return LeaderboardRows(columns, sort_rows(rows, sort_keys), n_common, summary, common_keys)
