"""Writing prediction rows: the one place a prediction's stored fields, distance error included, are built.

``aglw import predictions`` and the ALM runner both store records through
:func:`prediction_row` and :func:`insert_predictions`, so every stored prediction carries its
geodesic distance error and whether it is a rejection, computed once here instead of on every
metrics query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from storage.models import Prediction
from workbench.agl1k_record import CLIP_FIELDS, RECORD_FIELDS
from workbench.metrics.distance import position_gap_km, positions_disagree, record_answer

# Rows are inserted in batches so that a large result file never sits in memory as one list.
INSERT_BATCH = 500
# How many keys of disagreeing records an import names.
FIRST_KEYS = 5

# The record fields a prediction row stores as given (see workbench.importing.predictions).
_STORED_FIELDS = tuple(name for name in RECORD_FIELDS if name not in CLIP_FIELDS)


def prediction_row(
    alm_run_id: int,
    question_id: str,
    values: Mapping[str, Any],
    *,
    clip_id: int | None = None,
    line_no: int | None = None,
    clip_position: tuple[Any, Any] | None = None,
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
    clip_position : (lat, lon), optional
        The linked clip's position: the distance is measured from it (the dataset's truth),
        whatever true position the record states; the record's own only without it.

    Returns
    -------
    dict
        Column name -> value, ready for :func:`insert_predictions`; ``distance_error_km`` is
        the geodesic distance from the clip (10,000 km for a refusal, None when undefined) and ``refused``
        whether any predicted field is a refusal value.
    """
    row: dict[str, Any] = {name: values.get(name) for name in _STORED_FIELDS}
    distance, refused = record_answer(values, clip_position)
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


@dataclass
class TruthDisagreements:
    """Result records whose stated true position is not their clip's (the clip's is used)."""

    count: int = 0
    first_keys: list[str] = field(default_factory=list)
    largest_km: float | None = None
    largest_key: str | None = None

    def add(self, key: str, clip_position: tuple[Any, Any], record_position: tuple[Any, Any]) -> None:
        """Count the record when its true position disagrees with its clip's."""
        if not positions_disagree(*clip_position, *record_position):
            return
        self.count += 1
        if len(self.first_keys) < FIRST_KEYS:
            self.first_keys.append(key)
        gap = position_gap_km(*clip_position, *record_position)
        if gap is not None and (self.largest_km is None or gap > self.largest_km):
            self.largest_km, self.largest_key = gap, key

    def message(self) -> str | None:
        """The one-line warning an import prints, or None when every record agrees."""
        if not self.count:
            return None
        largest = "" if self.largest_km is None else f"; the largest is {self.largest_km:,.1f} km ({self.largest_key})"
        return (f"{self.count} record(s) state a true position other than their clip's; distances are measured "
                f"from the clip's position (the dataset's truth){largest}: {', '.join(self.first_keys)}"
                + (" ..." if self.count > len(self.first_keys) else ""))

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "first_keys": list(self.first_keys), "largest_km": self.largest_km,
                "largest_key": self.largest_key}


def clip_positions(session: Session, clip_ids: Mapping[str, int]) -> dict[int, tuple[Any, Any]]:
    """Clip id -> (latitude, longitude) of the linked clips: the truth their records are measured from."""
    from sqlalchemy import select

    from storage.models import Clip

    wanted = set(clip_ids.values())
    if not wanted:
        return {}
    rows = session.execute(select(Clip.id, Clip.latitude, Clip.longitude)).all()
    return {int(row[0]): (row[1], row[2]) for row in rows if row[0] in wanted}


def truth_disagreements(
    records: Iterable[Any], clip_ids: Mapping[str, int], positions: Mapping[int, tuple[Any, Any]]
) -> TruthDisagreements:
    """The records (``question_id`` and ``values`` with the true coordinates) whose true
    position disagrees with their linked clip's."""
    found = TruthDisagreements()
    for record in records:
        clip_id = clip_ids.get(record.question_id)
        if clip_id is None or clip_id not in positions:
            continue
        truth = getattr(record, "truth", None)
        if truth is None:
            truth = (record.values.get("true_latitude"), record.values.get("true_longitude"))
        found.add(record.question_id, positions[clip_id], truth)
    return found


def remeasure_from_clips(session: Session, dataset_id: int) -> int:
    """Store, for the predictions linked to this dataset's clips whose distance was not measured
    from the clip (the record states another true position, or none), the distance from the
    clip's position: what :func:`prediction_row` stores for a linked record. Run when records
    imported before their dataset are linked to its clips; returns how many rows changed."""
    from sqlalchemy import func, or_, select, update

    from storage.models import Clip
    from workbench.metrics.distance import SAME_POSITION_DEG, answer_distance_km

    rows = session.execute(
        select(Prediction.id, Prediction.predicted_latitude, Prediction.predicted_longitude, Clip.latitude,
               Clip.longitude)
        .join(Clip, Clip.id == Prediction.clip_id)
        .where(Clip.dataset_id == dataset_id, Clip.latitude.is_not(None), Clip.longitude.is_not(None),  # type: ignore[union-attr]
               or_(Prediction.true_latitude.is_(None), Prediction.true_longitude.is_(None),  # type: ignore[union-attr]
                   func.abs(Prediction.true_latitude - Clip.latitude) > SAME_POSITION_DEG,
                   func.abs(Prediction.true_longitude - Clip.longitude) > SAME_POSITION_DEG))
    ).all()
    for row_id, pred_lat, pred_lon, lat, lon in rows:
        session.execute(update(Prediction).where(Prediction.id == row_id).values(
            distance_error_km=answer_distance_km(pred_lat, pred_lon, lat, lon)))
    return len(rows)
