"""Pure rules of the review workbench (no store): judge disagreement, consensus, the review queue's
order, review status, blind mode and the ALM a clip's detail shows first.

The terms are defined in the glossary at the top of :mod:`workbench.review.service`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.review.views import ClipDetail, ClipRow, JudgmentView, PredictionView

REVIEWED = "reviewed"
IN_PROGRESS = "in progress"
UNREVIEWED = "unreviewed"


def judge_disagreement(scores_by_category: dict[str, Sequence[int | None]]) -> float | None:
    """Mean over categories of (max − min) / 3 of the valid judge scores (see the glossary in :mod:`workbench.review.service`).

    Parameters
    ----------
    scores_by_category
        Category id → the judges' scores on the 0–3 rubric (``None`` = failed judgment).

    Returns
    -------
    float or None
        In [0, 1]; None when no category has at least two valid scores.
    """
    ranges = []
    for scores in scores_by_category.values():
        valid = [s for s in scores if s is not None]
        if len(valid) >= 2:
            ranges.append((max(valid) - min(valid)) / 3.0)
    return sum(ranges) / len(ranges) if ranges else None


def review_queue_key(row: ClipRow, hidden: frozenset[str] = frozenset()) -> tuple:
    """Sort key of the review queue: the most informative clips first.

    The rule, applied lexicographically:

    1. clips the annotator has not finished (status other than ``reviewed``) first;
    2. higher judge disagreement first (clips without a disagreement value after
       every clip that has one);
    3. localizability nearer the threshold θ first (``|l − θ|`` ascending; clips
       without a curation result after those with one);
    4. clip key, then clip id, ascending — a stable tie-break.

    Disagreement is rounded to 9 decimals so that float noise does not override rule 3. A field
    in ``hidden`` (the visibility policy's: blind mode hides the judges' values) takes no part:
    an order by a hidden value would tell it.
    """
    finished = row.review_status == REVIEWED
    disagreement = None if "judge_disagreement" in hidden else row.judge_disagreement
    distance = None if "distance_from_theta" in hidden or "localizability" in hidden else row.distance_from_theta
    return (
        finished,
        disagreement is None,
        -round(disagreement, 9) if disagreement is not None else 0.0,
        distance is None,
        distance if distance is not None else 0.0,
        row.key,
        row.clip_id,
    )


def review_queue(rows: Iterable[ClipRow], hidden: frozenset[str] = frozenset()) -> list[ClipRow]:
    """The rows ordered by :func:`review_queue_key` (without the ``hidden`` fields)."""
    return sorted(rows, key=lambda row: review_queue_key(row, hidden))


def labels_entered(detail: ClipDetail, *, revealed: bool = False) -> bool:
    """Whether the expert has "entered their own labels" for a clip (blind mode).

    True when the expert gave a contribution for every detected category of the
    clip, or when they rated the clip (1–5) and then asked explicitly to reveal the
    judges (``revealed``). A clip without detected categories counts as entered once
    it is rated. Until then blind mode hides the judges' columns and other experts'
    labels (:class:`workbench.review.visibility.VisibilityPolicy` asks this rule).
    """
    rated = detail.own_label.rating is not None
    if revealed and rated:
        return True
    # A category only another expert labelled is not hers to label (and is hidden until then).
    own = [row for row in detail.categories if not row.only_other_experts]
    if not own:
        return rated
    return all(row.expert_contribution is not None for row in own)


def consensus(views: Iterable[JudgmentView]) -> float | None:
    """The mean valid judge score divided by 3 (the glossary in :mod:`workbench.review.service`); None without one."""
    valid = [v.contribution for v in views if v.status == "ok" and v.contribution is not None]
    return sum(valid) / len(valid) / 3.0 if valid else None


def default_alm_run_id(predictions: Sequence[PredictionView], judged: Iterable[int | None]) -> int | None:
    """The ALM a clip's detail shows first: the first prediction (by model name) whose ALM
    has judge runs on the clip (``judged``: the ALM run ids of those runs), else the first
    prediction; None without predictions."""
    judged_ids = set(judged)
    for prediction in predictions:
        if prediction.alm_run_id in judged_ids:
            return prediction.alm_run_id
    return predictions[0].alm_run_id if predictions else None

