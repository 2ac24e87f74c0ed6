"""Reading the stored answers for the metrics: one object array per column, no DataFrame.

Two read paths share it: one model's records (:func:`record_columns`, what ``aglw metrics``
computes on) and every model's metric columns at once (:func:`metric_records`, the leaderboard's
and ``aglw compare``'s). Distances are the ones stored at import, measured from the clip's
position; a row without one (or stored before that rule) is measured here by the one rule of
:mod:`workbench.metrics.distance`. The alias table's acceptance (:func:`alias_accepted`) reads
the true positions of the few records it may concern. What is computed from these columns lives
in :mod:`workbench.metrics.service`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import or_, select

from storage import Store
from storage import tables as T
from workbench.agl1k_record import PREDICTED_FIELDS, TRUE_FIELDS

if TYPE_CHECKING:
    import pandas as pd

    from workbench.country_aliases import AliasTable


# stored at import, the distance too: the metrics do not recompute geodesics
RECORD_COLUMNS = (*TRUE_FIELDS, *PREDICTED_FIELDS, "distance_error_km")
# What the distance error is computed from: read only for rows without a stored distance.
COORDINATES = ("true_latitude", "true_longitude", "predicted_latitude", "predicted_longitude")


# The Core read model's columns (storage.tables): the metrics start without the ORM (issue 32).
P, A, C = T.prediction.c, T.alm_run.c, T.clip.c

def answered_alm_runs(connection: Any) -> list[tuple[int, str]]:
    """The ALM runs that hold at least one answer, as ``(run id, model)`` ordered by model.

    The one rule for "which ALMs are models" (the metrics' model list, the models `judge` and
    `fit` choose from): a run the provider refused (401/403/404) keeps its failed job for the
    record, but without an answer it is no model, and it must not make "the only imported ALM"
    ambiguous.
    """
    answered = select(P.alm_run_id).distinct()
    rows = connection.execute(select(A.id, A.model).where(A.id.in_(answered))
                           .order_by(A.model)).all()
    return [(int(run_id), str(model)) for run_id, model in rows]


def unanswered_alm_run_text(connection: Any, model: str) -> str | None:
    """Why the run named ``model`` cannot be chosen when it exists without answers, else None."""
    run_id = connection.execute(select(A.id).where(A.model == model)).scalar()
    if run_id is None or connection.execute(select(P.id).where(P.alm_run_id == run_id).limit(1)).first():
        return None
    return (f"the ALM run {model!r} holds no answers yet (its `aglw alm run` stopped before any was stored); "
            "run it again, or choose another with --alm")


def _remeasured(connection: Any, model: str | None = None) -> dict[int, float]:
    """Prediction id -> distance error (km, NaN when undefined) of the rows whose stored
    distance was not measured from their clip's position: the record states another true
    position (a row stored before the import measured from the clip, or linked to its clip only
    when the dataset came later) or none, or no distance is stored. Computed by the one rule
    (:func:`workbench.metrics.distance.answer_distance_km`); the other rows keep the value
    stored at import. Reads only rows linked to a clip with a position."""
    from sqlalchemy import func

    from workbench.metrics.distance import SAME_POSITION_DEG, answer_distance_km

    off = or_(
        P.true_latitude.is_(None),
        P.true_longitude.is_(None),
        P.distance_error_km.is_(None),
        func.abs(P.true_latitude - C.latitude) > SAME_POSITION_DEG,
        func.abs(P.true_longitude - C.longitude) > SAME_POSITION_DEG,
    )
    query = (
        select(P.id, P.predicted_latitude, P.predicted_longitude, C.latitude,
               C.longitude)
        .join(T.clip, C.id == P.clip_id)
        .where(C.latitude.is_not(None), C.longitude.is_not(None), off)
    )
    if model is not None:
        query = query.join(T.alm_run, A.id == P.alm_run_id).where(A.model == model)
    out: dict[int, float] = {}
    for row_id, pred_lat, pred_lon, lat, lon in connection.execute(query).all():
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


RECORD_NAMES = ("id", "model", "question_id", *RECORD_COLUMNS, "human_sounds")


def record_frame(store: Store, model: str | None) -> pd.DataFrame:
    """:func:`~workbench.metrics.service.prediction_records` with each record's row ``id`` (what the alias table's reader asks by)."""
    import pandas as pd

    return pd.DataFrame(record_columns(store, model), columns=list(RECORD_NAMES), dtype=object)


def record_columns(store: Store, model: str | None) -> dict[str, np.ndarray]:
    """The columns of :func:`record_frame` as object arrays holding the values read (no DataFrame:
    :func:`~workbench.metrics.service.model_metrics` computes on these)."""
    columns = [P[name] for name in RECORD_COLUMNS]
    query = (
        select(P.id, A.model, P.question_id, *columns, C.human_sounds)
        .join(T.alm_run, A.id == P.alm_run_id)
        .outerjoin(T.clip, C.id == P.clip_id)
        .order_by(A.model, P.id)
    )
    if model is not None:
        query = query.where(A.model == model)
    with store.read() as connection:
        rows = connection.execute(query).all()
        remeasured = _remeasured(connection, model)
    out = {name: object_array([row[index] for row in rows]) for index, name in enumerate(RECORD_NAMES)}
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
    with store.read() as connection:
        for start in range(0, len(wanted), 500):
            query = (
                select(P.id, C.latitude, C.longitude, P.true_latitude,
                       P.true_longitude)
                .outerjoin(T.clip, C.id == P.clip_id)
                .where(P.id.in_(wanted[start:start + 500]))
            )
            for row_id, clip_lat, clip_lon, record_lat, record_lon in connection.execute(query).all():
                found[int(row_id)] = truth_position(clip_lat, clip_lon, record_lat, record_lon)
    return [found.get(row_id, (None, None)) for row_id in wanted]


def alias_accepted(store: Store, columns: Mapping[str, np.ndarray], table: AliasTable | None) -> np.ndarray | None:
    """Per record: accepted under the alias table (see :mod:`workbench.metrics.aliased`); None
    when no table applies, so that every number stays as without one. Both paths
    (:func:`~workbench.metrics.service.model_metrics`, :func:`~workbench.metrics.service.leaderboard`)
    ask here, with their records' row ids."""
    from workbench.metrics.aliased import accepted_answers, applies

    if not applies(table):
        return None
    ids = columns["id"]
    return accepted_answers(columns["true_country"], columns["predicted_country"], table,  # type: ignore[arg-type]
                            lambda rows: _truth_positions(store, ids[rows]))


def _fetch(connection: Any, query: Any) -> list[tuple]:
    """Rows of a parameter-free query through the DB-API cursor: a leaderboard reads tens of
    thousands of rows, and building SQLAlchemy rows for them cost as much as the metrics."""
    # No parameters are bound, so the compiled text runs as is on SQLite and PostgreSQL.
    sql = str(query.compile(dialect=connection.dialect))
    cursor = connection.connection.cursor()
    try:
        cursor.execute(sql)
        return cursor.fetchall()
    finally:
        cursor.close()


@dataclass(frozen=True)
class MetricRecords:
    """Every stored record's metric columns (object arrays, in no particular order) and the
    rank of its model in the alphabetical order of :attr:`models`."""

    columns: dict[str, np.ndarray]
    model_rank: np.ndarray
    models: list[str]
    # Rank of a model -> the datasets its records are linked to (the coverage's denominator).
    datasets: dict[int, set[Any]] = field(default_factory=dict)


def metric_records(store: Store, *, human_sounds: bool, question_ids: bool = False) -> MetricRecords:
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
    read = [name for name in RECORD_COLUMNS if name not in COORDINATES] + ["refused"]
    unstored = or_(P.distance_error_km.is_(None), P.refused.is_(None))
    with store.read() as connection:
        runs = dict(connection.execute(select(A.id, A.model)).all())
        lacking = connection.execute(select(P.id).where(unstored).limit(1)).first() is not None
        if lacking:
            read += list(COORDINATES)
        # The row id sits in every index: reading it keeps the scan on the covering index.
        names = ["id", "alm_run_id", *read]
        rows = _fetch(connection, select(*(P[name] for name in names)))
        need_links = human_sounds or lacking
        clip_info = {row[0]: row[1:] for row in _fetch(
            connection, select(C.id, C.dataset_id, C.human_sounds, C.latitude, C.longitude))}
        if need_links:
            # Joining the clip would read the table rows (the covering index has no clip id);
            # the clip links come from their own index instead, and are matched by row id.
            clip_of = dict(_fetch(connection, select(P.id, P.clip_id)))
        else:
            # The coverage needs only each model's dataset: an import links a result file to one
            # dataset, so one linked row per run names it (no scan of every row's link).
            first_clip = {run_id: connection.execute(select(P.clip_id).where(
                P.alm_run_id == run_id, P.clip_id.is_not(None)).limit(1)).scalar()
                for run_id in runs}
        keys = dict(_fetch(connection, select(P.id, P.question_id))) if question_ids else {}
    table = np.empty((len(rows), len(names)), dtype=object)
    if rows:
        table[:] = rows
    columns = {name: table[:, index] for index, name in enumerate(names)}
    if not lacking:
        for name in COORDINATES:
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
        columns["human_sounds"] = object_array([i[1] for i in info])
    if lacking:
        # A row without a stored distance is measured here, from its clip's position (the one
        # rule of workbench.metrics.distance); the stored distances were measured so at import
        # (and by migration 0009 for rows stored before).
        from workbench.metrics.distance import truth_position

        truths = [truth_position(i[2], i[3], lat, lon) for i, lat, lon in zip(
            info, columns["true_latitude"].tolist(), columns["true_longitude"].tolist())]
        columns["true_latitude"] = object_array([t[0] for t in truths])
        columns["true_longitude"] = object_array([t[1] for t in truths])
    if question_ids:
        columns["question_id"] = object_array([keys.get(row_id) for row_id in columns["id"].tolist()])
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
    return MetricRecords(columns, ranks, models, datasets)


def object_array(values: list[Any]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
