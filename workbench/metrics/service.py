"""Leaderboard metrics of the models stored in a project (reads the store, returns plain data)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from sqlalchemy import or_, select

from storage import Store
from storage.models import AlmRun, Clip, Prediction
from workbench.agl1k_record import PREDICTED_FIELDS, TRUE_FIELDS
from workbench.errors import AglwError
from workbench.metrics.aggregate import map_pairs, map_values, metric_inputs, metrics_of
from workbench.metrics.continents import continent_of_iso
from workbench.metrics.core import (
    METRIC_KEYS,
    PROFILES,
    Profile,
    country_iso,
    normalize_continent_agl1k,
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

# stored at import, the distance too: the metrics do not recompute geodesics
_RECORD_COLUMNS = (*TRUE_FIELDS, *PREDICTED_FIELDS, "distance_error_km")
# What the distance error is computed from: read only for rows without a stored distance.
_COORDINATES = ("true_latitude", "true_longitude", "predicted_latitude", "predicted_longitude")


def _remeasured(session: Any, model: str | None = None) -> dict[int, float]:
    """Prediction id -> distance error (km, NaN when undefined) of the rows whose stored
    distance was not measured from their clip's position: the record states another true
    position (a row stored before the import measured from the clip, or linked to its clip only
    when the dataset came later) or none, or no distance is stored. Computed by the one rule
    (:func:`workbench.metrics.distance.answer_distance_km`); the other rows keep the value
    stored at import. Reads only rows linked to a clip with a position."""
    from sqlalchemy import func

    from workbench.metrics.distance import SAME_POSITION_DEG, answer_distance_km

    off = or_(
        Prediction.true_latitude.is_(None),  # type: ignore[union-attr]
        Prediction.true_longitude.is_(None),  # type: ignore[union-attr]
        Prediction.distance_error_km.is_(None),  # type: ignore[union-attr]
        func.abs(Prediction.true_latitude - Clip.latitude) > SAME_POSITION_DEG,
        func.abs(Prediction.true_longitude - Clip.longitude) > SAME_POSITION_DEG,
    )
    query = (
        select(Prediction.id, Prediction.predicted_latitude, Prediction.predicted_longitude, Clip.latitude,
               Clip.longitude)
        .join(Clip, Clip.id == Prediction.clip_id)
        .where(Clip.latitude.is_not(None), Clip.longitude.is_not(None), off)  # type: ignore[union-attr]
    )
    if model is not None:
        query = query.join(AlmRun, AlmRun.id == Prediction.alm_run_id).where(AlmRun.model == model)
    out: dict[int, float] = {}
    for row_id, pred_lat, pred_lon, lat, lon in session.execute(query).all():
        value = answer_distance_km(pred_lat, pred_lon, lat, lon)
        out[int(row_id)] = math.nan if value is None else value
    return out


def _apply_remeasured(ids: np.ndarray, distances: np.ndarray, remeasured: dict[int, float]) -> np.ndarray:
    """``distances`` (object array) with the remeasured rows replaced."""
    if not remeasured:
        return distances
    out = distances.copy()
    for index, row_id in enumerate(ids.tolist()):
        value = remeasured.get(int(row_id))
        if value is not None:
            out[index] = value
    return out


def model_names(store: Store) -> list[str]:
    """Names of the models with imported predictions, alphabetically."""
    with store.session() as session:
        return list(session.execute(select(AlmRun.model).order_by(AlmRun.model)).scalars())


def prediction_records(store: Store, model: str | None = None) -> pd.DataFrame:
    """Stored result records as a DataFrame (one row per record).

    Columns: ``model``, ``question_id``, the true/predicted fields, ``distance_error_km``
    (measured from the linked clip's position: the one rule of :mod:`workbench.metrics.distance`),
    and ``human_sounds`` of the linked clip (NaN when the record has no clip).
    """
    return _record_frame(store, model).drop(columns="id")


_RECORD_NAMES = ("id", "model", "question_id", *_RECORD_COLUMNS, "human_sounds")


def _record_frame(store: Store, model: str | None) -> pd.DataFrame:
    """:func:`prediction_records` with each record's row ``id`` (what the alias table's reader asks by)."""
    import pandas as pd

    return pd.DataFrame(_record_columns(store, model), columns=list(_RECORD_NAMES), dtype=object)


def _record_columns(store: Store, model: str | None) -> dict[str, np.ndarray]:
    """The columns of :func:`_record_frame` as object arrays holding the values read (no DataFrame:
    :func:`model_metrics` computes on these)."""
    columns = [getattr(Prediction, name) for name in _RECORD_COLUMNS]
    query = (
        select(Prediction.id, AlmRun.model, Prediction.question_id, *columns, Clip.human_sounds)
        .join(AlmRun, AlmRun.id == Prediction.alm_run_id)
        .outerjoin(Clip, Clip.id == Prediction.clip_id)
        .order_by(AlmRun.model, Prediction.id)
    )
    if model is not None:
        query = query.where(AlmRun.model == model)
    with store.session() as session:
        rows = session.execute(query).all()
        remeasured = _remeasured(session, model)
    out = {name: _object_array([row[index] for row in rows]) for index, name in enumerate(_RECORD_NAMES)}
    if remeasured and rows:
        out["distance_error_km"] = _apply_remeasured(out["id"], out["distance_error_km"], remeasured)
    return out


def _truth_positions(store: Store, ids: np.ndarray) -> list[tuple[Any, Any]]:
    """The true position of each record (by row id): its clip's, else the record's own (the one
    rule, :func:`workbench.metrics.distance.truth_position`). Read for the few records an alias
    table may accept, in chunks that stay under SQLite's bound-parameter limit."""
    from workbench.metrics.distance import truth_position

    wanted = [int(row_id) for row_id in ids.tolist()]
    found: dict[int, tuple[Any, Any]] = {}
    with store.session() as session:
        for start in range(0, len(wanted), 500):
            query = (
                select(Prediction.id, Clip.latitude, Clip.longitude, Prediction.true_latitude,
                       Prediction.true_longitude)
                .outerjoin(Clip, Clip.id == Prediction.clip_id)
                .where(Prediction.id.in_(wanted[start:start + 500]))  # type: ignore[union-attr]
            )
            for row_id, clip_lat, clip_lon, record_lat, record_lon in session.execute(query).all():
                found[int(row_id)] = truth_position(clip_lat, clip_lon, record_lat, record_lon)
    return [found.get(row_id, (None, None)) for row_id in wanted]


def _alias_accepted(store: Store, columns: Mapping[str, np.ndarray], table: AliasTable | None) -> np.ndarray | None:
    """Per record: accepted under the alias table (see :mod:`workbench.metrics.aliased`); None
    when no table applies, so that every number stays as without one. Both paths
    (:func:`model_metrics`, :func:`leaderboard`) ask here, with their records' row ids."""
    from workbench.metrics.aliased import accepted_answers, applies

    if not applies(table):
        return None
    ids = columns["id"]
    return accepted_answers(columns["true_country"], columns["predicted_country"], table,  # type: ignore[arg-type]
                            lambda rows: _truth_positions(store, ids[rows]))


def _fetch(session: Any, query: Any) -> list[tuple]:
    """Rows of a parameter-free query through the DB-API cursor: a leaderboard reads tens of
    thousands of rows, and building SQLAlchemy rows for them cost as much as the metrics."""
    # No parameters are bound, so the compiled text runs as is on SQLite and PostgreSQL.
    sql = str(query.compile(dialect=session.get_bind().dialect))
    cursor = session.connection().connection.cursor()
    try:
        cursor.execute(sql)
        return cursor.fetchall()
    finally:
        cursor.close()


@dataclass(frozen=True)
class _MetricRecords:
    """Every stored record's metric columns (object arrays, in no particular order) and the
    rank of its model in the alphabetical order of :attr:`models`."""

    columns: dict[str, np.ndarray]
    model_rank: np.ndarray
    models: list[str]
    # Rank of a model -> the datasets its records are linked to (the coverage's denominator).
    datasets: dict[int, set[Any]] = field(default_factory=dict)


def _metric_records(store: Store, *, human_sounds: bool, question_ids: bool = False) -> _MetricRecords:
    """Every stored record's metric columns, in row id order.

    The distance error and the rejection flag are read as stored at import, from the covering
    index ``ix_prediction_metrics``; the coordinates they derive from are read (from the table,
    whose rows hold the long texts) only when some row lacks a stored value (written before
    migration 0003 or by hand). Each row's clip link (``clip_id``) and the clips' datasets
    (``dataset_id``, for the coverage column) come from their own indexes and are matched by
    row id; the linked clip's ``human_sounds`` only when asked (grouping by speech), the
    record's ``question_id`` only when asked (``--common``). No DataFrame and no ORM rows are
    built: the DB-API rows become one object array per column, which is what the metrics read.
    """
    read = [name for name in _RECORD_COLUMNS if name not in _COORDINATES] + ["refused"]
    unstored = or_(Prediction.distance_error_km.is_(None), Prediction.refused.is_(None))  # type: ignore[union-attr]
    with store.session() as session:
        runs = dict(session.execute(select(AlmRun.id, AlmRun.model)).all())
        lacking = session.execute(select(Prediction.id).where(unstored).limit(1)).first() is not None
        if lacking:
            read += list(_COORDINATES)
        # The row id sits in every index: reading it keeps the scan on the covering index.
        names = ["id", "alm_run_id", *read]
        rows = _fetch(session, select(*(getattr(Prediction, name) for name in names)))
        need_links = human_sounds or lacking
        clip_info = {row[0]: row[1:] for row in _fetch(
            session, select(Clip.id, Clip.dataset_id, Clip.human_sounds, Clip.latitude, Clip.longitude))}
        if need_links:
            # Joining the clip would read the table rows (the covering index has no clip id);
            # the clip links come from their own index instead, and are matched by row id.
            clip_of = dict(_fetch(session, select(Prediction.id, Prediction.clip_id)))
        else:
            # The coverage needs only each model's dataset: an import links a result file to one
            # dataset, so one linked row per run names it (no scan of every row's link).
            first_clip = {run_id: session.execute(select(Prediction.clip_id).where(
                Prediction.alm_run_id == run_id, Prediction.clip_id.is_not(None)).limit(1)).scalar()  # type: ignore[union-attr]
                for run_id in runs}
        keys = dict(_fetch(session, select(Prediction.id, Prediction.question_id))) if question_ids else {}
    table = np.empty((len(rows), len(names)), dtype=object)
    if rows:
        table[:] = rows
    columns = {name: table[:, index] for index, name in enumerate(names)}
    if not lacking:
        for name in _COORDINATES:
            columns[name] = np.full(len(rows), None, dtype=object)
    datasets_of_run: dict[int, set[Any]] = {}
    if not need_links:
        for run_id, clip_id in first_clip.items():
            dataset = clip_info.get(clip_id, (None,))[0] if clip_id is not None else None
            datasets_of_run[run_id] = {dataset} if dataset is not None else set()
    else:
        # In row id order, the order the join with the clips read them in: a sum over the same
        # values in another order may differ in its last digit.
        by_id = np.argsort(columns["id"].astype(np.int64), kind="stable")
        columns = {name: values[by_id] for name, values in columns.items()}
        links = [clip_of.get(row_id) for row_id in columns["id"].tolist()]
        info = [clip_info.get(c, (None,) * 4) if c is not None else (None,) * 4 for c in links]
        for run_id, i in zip(columns["alm_run_id"].tolist(), info):
            found = datasets_of_run.setdefault(run_id, set())
            if i[0] is not None:
                found.add(i[0])
    if human_sounds:
        columns["human_sounds"] = _object_array([i[1] for i in info])
    if lacking:
        # A row without a stored distance is measured here, from its clip's position (the one
        # rule of workbench.metrics.distance); the stored distances were measured so at import
        # (and by migration 0009 for rows stored before).
        from workbench.metrics.distance import truth_position

        truths = [truth_position(i[2], i[3], lat, lon) for i, lat, lon in zip(
            info, columns["true_latitude"].tolist(), columns["true_longitude"].tolist())]
        columns["true_latitude"] = _object_array([t[0] for t in truths])
        columns["true_longitude"] = _object_array([t[1] for t in truths])
    if question_ids:
        columns["question_id"] = _object_array([keys.get(row_id) for row_id in columns["id"].tolist()])
    # The row id stays (the metrics read columns by name): the alias table's positions are read by it.
    models = sorted(set(runs.values()))
    rank_of_run = {run_id: models.index(model) for run_id, model in runs.items()}
    run_ids, inverse = np.unique(columns.pop("alm_run_id").astype(np.int64), return_inverse=True)
    # A record of no known run (impossible through the foreign key) is left out, as before.
    ranks = np.array([rank_of_run.get(run_id, -1) for run_id in run_ids.tolist()], dtype=np.int64)[inverse.reshape(-1)]
    known = ranks >= 0
    if not known.all():
        columns = {name: values[known] for name, values in columns.items()}
        ranks = ranks[known]
    datasets: dict[int, set[Any]] = {}
    for run_id, found in datasets_of_run.items():
        if run_id in rank_of_run:
            datasets.setdefault(rank_of_run[run_id], set()).update(found)
    return _MetricRecords(columns, ranks, models, datasets)


def _object_array(values: list[Any]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _check_profile(profile: str) -> None:
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
        The :data:`~workbench.metrics.core.METRIC_KEYS`; where a table applies also
        ``country_alias_n`` and ``continent_alias_n`` (of the ``n`` answers, how many the table
        turned correct) and ``alias_table`` (its file and aliases).

    Raises
    ------
    AglwError
        Unknown profile, or no predictions stored for ``model`` (the message lists the models).
    """
    _check_profile(profile)
    records = _record_columns(store, model)
    if not len(records["id"]):
        known = ", ".join(model_names(store)) or "none imported yet"
        raise AglwError(f"no predictions for model {model!r} (models: {known})")
    accepted = _alias_accepted(store, records, aliases)
    # compute_metrics without its DataFrame: the same inputs, read from the same values.
    result = metrics_of(metric_inputs(records, (profile,), alias_accepted=accepted), profile, model)
    if accepted is not None and aliases is not None:
        from workbench.metrics.aliased import table_summary

        result["alias_table"] = table_summary(aliases)
    return result


def _group_labels(records: Mapping[str, np.ndarray], profile: str, by: str) -> np.ndarray:
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


def _common_mask(records: _MetricRecords, listed: list[int]) -> tuple[np.ndarray, int]:
    """Rows of the listed models (ranks) on the clips (dataset keys) every one of them answered,
    and how many such clips there are."""
    keys = records.columns["question_id"]
    ranks = records.model_rank
    common: set[Any] | None = None
    for rank in listed:
        answered = set(keys[ranks == rank].tolist())
        common = answered if common is None else common & answered
    common = common or set()
    mask = np.isin(ranks, listed) & np.array([key in common for key in keys.tolist()], dtype=bool)
    return mask, len(common)


def _dataset_sizes(store: Store, profile: str, by: str | None) -> dict[tuple[Any, Any], int]:
    """(dataset id, group) -> how many of the dataset's clips fall in the group (group None
    without a breakdown): the denominator of each row's coverage."""
    with store.session() as session:
        clips = session.execute(select(Clip.dataset_id, Clip.country, Clip.continent, Clip.human_sounds)).all()
    if not clips:
        return {}
    dataset = _object_array([c[0] for c in clips])
    if by is None:
        labels = _object_array([None] * len(clips))
    else:
        labels = _group_labels({"true_country": _object_array([c[1] for c in clips]),
                                "true_continent": _object_array([c[2] for c in clips]),
                                "human_sounds": _object_array([c[3] for c in clips])}, profile, by)
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


def _sort_rows(rows: list[dict[str, Any]], keys: list[str]) -> list[dict[str, Any]]:
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
        _check_profile(name)
    if by is not None and by not in GROUP_BY_OPTIONS:
        raise AglwError(f"unknown grouping {by!r}; use one of {', '.join(GROUP_BY_OPTIONS)}")
    records = _metric_records(store, human_sounds=by == "speech", question_ids=common)
    if models is not None:
        unknown = [m for m in models if m not in records.models]
        if unknown:
            known = ", ".join(records.models) or "none imported yet"
            raise AglwError(f"no predictions for model(s) {', '.join(map(repr, unknown))} (models: {known})")
    listed = [records.models.index(m) for m in models] if models is not None else list(range(len(records.models)))
    n_common = None
    keep = np.isin(records.model_rank, listed)
    if common:
        keep, n_common = _common_mask(records, listed)
    if not keep.all():
        records = _MetricRecords({k: v[keep] for k, v in records.columns.items()}, records.model_rank[keep],
                                 records.models, records.datasets)
    columns = [*METRIC_KEYS, "n_dataset"] if by is None else ["group", *METRIC_KEYS, "n_dataset"]
    accepted = _alias_accepted(store, records.columns, aliases)
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
        labels = None if by is None else _group_labels(records.columns, names[0], by)
        order, slices = _groups(records.model_rank, labels)
        passes.append((names, _dataset_sizes(store, names[0], by), inputs.take(order), slices))
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
    return LeaderboardRows(columns, _sort_rows(rows, sort_keys), n_common, summary)
