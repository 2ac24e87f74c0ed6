"""The review workbench's read side: view models, pure rules, the service and the direction view.

- :mod:`workbench.review.service` — :class:`ReviewService` (the glossary of the review view is
  at the top of that module);
- :mod:`workbench.review.views` — the frozen dataclasses it returns;
- :mod:`workbench.review.rules` — judge disagreement, consensus, queue order, labels entered;
- :mod:`workbench.review.visibility` — the one visibility policy (blind mode, guess mode, a blind
  plan, reveal): what the review window may show now;
- :mod:`workbench.review.direction` — the direction view under the spectrogram.

The names are re-exported here for callers that read the package as one.
"""

from workbench.review.direction import AB_NEEDS_SPACING, AB_SPACING_SETTING, DirectionImage, ab_spacing_from_config, direction_image
from workbench.review.rules import (
    IN_PROGRESS,
    REVIEWED,
    UNREVIEWED,
    consensus,
    default_alm_run_id,
    judge_disagreement,
    labels_entered,
    review_queue,
    review_queue_key,
)
from workbench.review.service import DEFAULT_THETA, DEFAULT_TAU, DEFAULT_TOP_N, ReviewService
from workbench.review.views import (
    AudioSource,
    CategoryRow,
    ClipDetail,
    ClipLabelState,
    ClipRow,
    ExpertLabelView,
    JudgmentView,
    PredictionView,
    TagView,
    TimelineView,
)

__all__ = [
    "AB_NEEDS_SPACING",
    "AB_SPACING_SETTING",
    "DEFAULT_TAU",
    "DEFAULT_THETA",
    "DEFAULT_TOP_N",
    "IN_PROGRESS",
    "REVIEWED",
    "UNREVIEWED",
    "AudioSource",
    "CategoryRow",
    "ClipDetail",
    "ClipLabelState",
    "ClipRow",
    "DirectionImage",
    "ExpertLabelView",
    "JudgmentView",
    "PredictionView",
    "ReviewService",
    "TagView",
    "TimelineView",
    "ab_spacing_from_config",
    "consensus",
    "default_alm_run_id",
    "direction_image",
    "judge_disagreement",
    "labels_entered",
    "review_queue",
    "review_queue_key",
]
