"""Team progress: how far each annotator has come, read from the stored labels.

Every annotator writes only their own label rows (see :mod:`workbench.labels`), so the
counts here are what each person has finished; a refresh re-reads them, which is how two
annotators working at once see each other's work without ever overwriting it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, or_, select

from storage import Store
from storage.models import Annotator, CategoryLabel, CategoryPolarity, Clip, ClipLabel, LabelHistory


@dataclass(frozen=True)
class AnnotatorProgress:
    """One annotator's finished work.

    Attributes
    ----------
    clips_labelled
        Clips the annotator has labelled: a stored, not undone, category label, clip judgment,
        error-mode tag or location guess (:func:`workbench.labels.labelled_pairs`, the one
        definition study progress uses too).
    clips_rated, clips_decided
        Clips with a 1–5 rating / an accept-reject-unsure decision.
    category_labels
        Category labels with a contribution, effect or per-clip polarity.
    polarity_overrides
        Categories whose pool-wide polarity the annotator forced.
    last_activity
        Time of the annotator's latest recorded change (None when they have none).
    """

    annotator_id: int
    name: str
    role: str
    clips_labelled: int
    clips_rated: int
    clips_decided: int
    category_labels: int
    polarity_overrides: int
    last_activity: datetime | None
    n_clips: int


def annotator_progress(store: Store) -> list[AnnotatorProgress]:
    """Progress of every annotator of the project, by name.

    Parameters
    ----------
    store
        The project store (SQLite file or PostgreSQL).

    Returns
    -------
    list of AnnotatorProgress
        One entry per annotator, including those with no labels yet.
    """
    with store.session() as s:
        conn = s.connection()
        n_clips = int(conn.execute(select(func.count()).select_from(Clip)).scalar_one())
        annotators = conn.execute(select(Annotator.id, Annotator.name, Annotator.role).order_by(Annotator.name)).all()
        clip_label_pairs = conn.execute(
            select(ClipLabel.annotator_id, ClipLabel.clip_id, ClipLabel.rating, ClipLabel.decision)
        ).all()
        category_pairs = conn.execute(
            select(CategoryLabel.annotator_id, CategoryLabel.clip_id).where(
                or_(
                    CategoryLabel.contribution.is_not(None),
                    CategoryLabel.effect.is_not(None),
                    CategoryLabel.polarity.is_not(None),
                )
            )
        ).all()
        overrides = dict(
            conn.execute(
                select(CategoryPolarity.annotator_id, func.count())
                .where(CategoryPolarity.polarity.is_not(None))
                .group_by(CategoryPolarity.annotator_id)
            ).all()
        )
        last = dict(
            conn.execute(select(LabelHistory.annotator_id, func.max(LabelHistory.at)).group_by(LabelHistory.annotator_id)).all()
        )
        from workbench.labels import labelled_pairs

        pairs = labelled_pairs(s)
    labelled: dict[int, set[int]] = {}
    for annotator_id, clip_id in pairs:
        labelled.setdefault(annotator_id, set()).add(clip_id)
    rated: dict[int, int] = {}
    decided: dict[int, int] = {}
    category_counts: dict[int, int] = {}
    for annotator_id, clip_id, rating, decision in clip_label_pairs:
        if rating is None and decision is None:
            continue
        rated[annotator_id] = rated.get(annotator_id, 0) + (rating is not None)
        decided[annotator_id] = decided.get(annotator_id, 0) + (decision is not None)
    for annotator_id, _clip_id in category_pairs:
        category_counts[annotator_id] = category_counts.get(annotator_id, 0) + 1
    return [
        AnnotatorProgress(
            annotator_id=int(annotator_id), name=str(name), role=str(role),
            clips_labelled=len(labelled.get(annotator_id, ())), clips_rated=int(rated.get(annotator_id, 0)),
            clips_decided=int(decided.get(annotator_id, 0)), category_labels=int(category_counts.get(annotator_id, 0)),
            polarity_overrides=int(overrides.get(annotator_id, 0)), last_activity=last.get(annotator_id),
            n_clips=n_clips,
        )
        for annotator_id, name, role in annotators
    ]


__all__ = ["AnnotatorProgress", "annotator_progress"]
