"""View models of the review workbench: the frozen dataclasses the GUI reads.

:class:`workbench.review.service.ReviewService` returns these (never live ORM rows), so they can
cross threads and outlive their database session. The terms are defined in the glossary at the
top of :mod:`workbench.review.service`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from workbench.review.rules import consensus


@dataclass(frozen=True)
class ClipRow:
    """One row of the clip browser."""

    clip_id: int
    key: str
    title: str
    country: str | None
    continent: str | None
    speech: bool | None
    review_status: str
    judge_disagreement: float | None
    localizability: float | None
    percentile: float | None
    theta: float
    quality_flags: tuple[str, ...]
    is_demo: bool
    duration_s: float | None
    city: str | None = None  # for the browser's search

    @property
    def distance_from_theta(self) -> float | None:
        """``|localizability − θ|``, or None without a curation run."""
        if self.localizability is None:
            return None
        return abs(self.localizability - self.theta)


@dataclass(frozen=True)
class PredictionView:
    """One ALM's answer for the clip, with its error."""

    alm_run_id: int
    model: str
    is_demo: bool
    predicted_city: str | None
    predicted_country: str | None
    predicted_continent: str | None
    predicted_latitude: str | None
    predicted_longitude: str | None
    error_km: float | None
    reasoning: str


@dataclass(frozen=True)
class TagView:
    audioset_id: str
    name: str
    root: str
    probability: float


@dataclass(frozen=True)
class TimelineView:
    audioset_id: str
    name: str
    hop_s: float
    values: tuple[float, ...]


@dataclass(frozen=True)
class JudgmentView:
    """One judge's verdict on one category; ``alm_run_id`` is the ALM whose reasoning the
    judge's run read (None when the run did not record it)."""

    judge_name: str
    judge_run_id: int
    contribution: int | None
    effect: str | None
    evidence: str | None
    status: str
    alm_run_id: int | None = None


@dataclass(frozen=True)
class ExpertLabelView:
    annotator_id: int
    annotator_name: str
    contribution: int | None
    effect: str | None
    polarity: str | None


@dataclass(frozen=True)
class CategoryRow:
    """One detected category of a clip: judges, consensus, fitted polarity, the expert's label.

    ``polarity`` is the category's polarity in the latest curation run (expert overrides of
    that run applied), ``fitted_polarity`` the one fitted from the data; ``expert_polarity``
    is the expert's per-clip polarity for this category and ``expert_category_polarity`` the
    expert's pool-wide override (curation-model.md section 4; None = none set).

    ``alm_judgments`` holds every judge's latest run per ALM on this clip; ``judgments``
    (judge name → view) and ``consensus`` are those of the detail's ALM only
    (:meth:`ClipDetail.for_alm`).
    """

    category_id: str
    name: str
    root: str
    tag_probability: float | None
    judgments: dict[str, JudgmentView]
    consensus: float | None
    fitted_polarity: str | None
    polarity: str | None
    expert_contribution: int | None
    expert_effect: str | None
    expert_polarity: str | None
    other_experts: tuple[ExpertLabelView, ...]
    expert_category_polarity: str | None = None
    alm_judgments: tuple[JudgmentView, ...] = ()
    expert_version: int = 0  # version of the expert's stored label row (0: none yet)
    # False for a category shown because it was judged or labelled on the clip although it is
    # not among the clip's top tags (the grid marks it "not among the top tags").
    among_top_tags: bool = True

    @property
    def only_other_experts(self) -> bool:
        """Shown only because another expert labelled it (blind mode hides such a row)."""
        return (not self.among_top_tags and not self.alm_judgments and self.expert_version == 0
                and bool(self.other_experts))


@dataclass(frozen=True)
class ClipLabelState:
    rating: int | None = None
    decision: str | None = None
    note: str | None = None
    version: int = 0  # the stored row's version (0: none yet); edits are checked against it


@dataclass(frozen=True)
class ClipDetail:
    """Everything the evidence panels show for one clip.

    ``alm_run_id`` is the ALM whose judges ``judge_names`` and the categories' ``judgments``
    and ``consensus`` refer to (see :meth:`for_alm`); None only for a clip without predictions.
    """

    clip_id: int
    key: str
    title: str
    description: str
    city: str | None
    country: str | None
    continent: str | None
    latitude: float | None
    longitude: float | None
    is_demo: bool
    audio_path: Path | None
    audio_problem: str | None
    n_channels: int | None
    sample_rate: int | None
    duration_s: float | None
    layout: str | None
    predictions: tuple[PredictionView, ...]
    tags: tuple[TagView, ...]
    timelines: tuple[TimelineView, ...]
    categories: tuple[CategoryRow, ...]
    judge_names: tuple[str, ...]
    own_label: ClipLabelState
    other_clip_labels: tuple[tuple[str, ClipLabelState], ...]
    localizability: float | None
    percentile: float | None
    candidate: bool | None
    theta: float
    quality_flags: tuple[str, ...]
    quality: dict[str, float | None] = field(default_factory=dict)
    alm_run_id: int | None = None
    # each flag with its value and cut-off, then why the pool-relative flag was not raised, if it was not
    quality_flag_details: tuple[str, ...] = ()

    def category(self, category_id: str) -> CategoryRow:
        for row in self.categories:
            if row.category_id == category_id:
                return row
        raise KeyError(category_id)

    @property
    def prediction(self) -> PredictionView | None:
        """The prediction of the detail's ALM (None without one)."""
        for prediction in self.predictions:
            if prediction.alm_run_id == self.alm_run_id:
                return prediction
        return None

    def for_alm(self, alm_run_id: int | None) -> ClipDetail:
        """This detail with the judges, their verdicts and the consensus of one ALM.

        Each judge counts with its latest run on ``alm_run_id`` (a run that recorded no ALM
        counts for every ALM); judges that only read another ALM's reasoning are left out.

        Parameters
        ----------
        alm_run_id
            One of the clip's predictions' ALM runs; None (a clip without predictions) takes
            each judge's latest run whatever its ALM.

        Raises
        ------
        KeyError
            If the clip has no prediction of ``alm_run_id``.
        """
        if alm_run_id is not None and all(p.alm_run_id != alm_run_id for p in self.predictions):
            raise KeyError(alm_run_id)
        latest_run: dict[str, int] = {}
        for row in self.categories:
            for view in row.alm_judgments:
                if alm_run_id is None or view.alm_run_id in (alm_run_id, None):
                    latest_run[view.judge_name] = max(latest_run.get(view.judge_name, -1), view.judge_run_id)
        categories = []
        for row in self.categories:
            views = {v.judge_name: v for v in row.alm_judgments if latest_run.get(v.judge_name) == v.judge_run_id}
            categories.append(replace(row, judgments=views, consensus=consensus(views.values())))
        return replace(self, categories=tuple(categories), judge_names=tuple(sorted(latest_run)), alm_run_id=alm_run_id)


@dataclass(frozen=True)
class AudioSource:
    """A clip's recording: the resolved file (or why there is none) and its layout."""

    clip_id: int
    key: str
    audio_path: Path | None
    audio_problem: str | None
    layout: str | None
