"""Writing prediction rows: the one place a prediction's stored fields, distance error included, are built.

``aglw import predictions`` and the ALM runner both store records through
:func:`prediction_row` and :func:`insert_predictions`, so every stored prediction carries its
geodesic distance error and whether it is a rejection, computed once here instead of on every
metrics query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from storage.models import Prediction
from workbench.metrics.distance import record_distance_and_refused

# Rows are inserted in batches so that a large result file never sits in memory as one list.
INSERT_BATCH = 500

# The record fields a prediction row stores as given (see workbench.importing.predictions).
_STORED_FIELDS = (
    "task_id",
    "true_city",
    "true_country",
    "true_continent",
    "true_longitude",
    "true_latitude",
    "predicted_city",
    "predicted_country",
    "predicted_continent",
    "predicted_longitude",
    "predicted_latitude",
    "reasoning",
    "model_output",
    "question",
    "seed",
)


def prediction_row(
    alm_run_id: int,
    question_id: str,
    values: Mapping[str, Any],
    *,
    clip_id: int | None = None,
    line_no: int | None = None,
) -> dict[str, Any]:
    """The ``prediction`` table row of one result record, with its distance error.

    Parameters
    ----------
    alm_run_id : int
        The run (model) the record belongs to.
    question_id : str
        The dataset key of the clip.
    values : Mapping
        The record's fields: predicted values as raw text (``"Unknown"``, ``""`` and ``"0"``
        are meaningful to the metrics), true coordinates as floats; absent fields are stored
        as NULL.
    clip_id : int, optional
        The linked clip, when the key is in a dataset.
    line_no : int, optional
        Where the record was in its result file.

    Returns
    -------
    dict
        Column name -> value, ready for :func:`insert_predictions`; ``distance_error_km`` is
        the geodesic distance (10,000 km for a refusal, None when undefined) and ``refused``
        whether any predicted field is a refusal value.
    """
    row: dict[str, Any] = {name: values.get(name) for name in _STORED_FIELDS}
    distance, refused = record_distance_and_refused(values)
    row.update(
        alm_run_id=alm_run_id,
        clip_id=clip_id,
        question_id=question_id,
        line_no=line_no,
        distance_error_km=distance,
        refused=refused,
    )
    return row


def insert_predictions(session: Session, rows: Iterable[dict[str, Any]]) -> int:
    """Insert prediction rows (from :func:`prediction_row`) in batches, in the caller's transaction.

    Parameters
    ----------
    session : Session
        A write session (``Store.write()``); nothing is committed here.
    rows : iterable of dict
        Consumed lazily, :data:`INSERT_BATCH` rows at a time.

    Returns
    -------
    int
        How many rows were inserted.
    """
    # SQLAlchemy's executemany (Python-side defaults, type conversions, every driver). Sending
    # tuples to the driver by hand saved ~6 % of P5 and was not worth a second insert path.
    statement = insert(Prediction.__table__)
    batch: list[dict[str, Any]] = []
    count = 0
    for row in rows:
        batch.append(row)
        if len(batch) >= INSERT_BATCH:
            session.execute(statement, batch)
            count += len(batch)
            batch = []
    if batch:
        session.execute(statement, batch)
        count += len(batch)
    return count
