"""Review service: what the review workbench shows, as plain dataclasses.

The GUI's clip browser, review queue and evidence panels read everything through
:class:`ReviewService`; it returns frozen dataclasses (never live ORM rows), so the
results can cross threads and outlive their database session.

Definitions used throughout
---------------------------
judge disagreement
    Per detected category with at least two valid judge scores (0–3 rubric): the
    range ``max − min`` of those scores divided by 3. A clip's disagreement is the
    mean over such categories, in [0, 1]; ``None`` when no category has two scores.
    Each judge counts with its latest run (highest run id) that judged the clip.
consensus
    The mean of the valid judge scores divided by 3 (curation-model.md section 3).
judges of one ALM (clip detail)
    Each judge run records the ALM whose reasoning it read (``JudgeRun.alm_run_id``). A
    clip's detail shows its judges for one chosen ALM (:meth:`ClipDetail.for_alm`): each
    judge with its latest run on that ALM (runs that recorded no ALM count for every ALM),
    so evidence quotes always refer to the reasoning shown next to them.
review status (for one annotator)
    ``reviewed`` when the annotator recorded a decision for the clip, ``in progress``
    when they recorded any other label for it, else ``unreviewed``.
labels entered (blind mode)
    See :func:`labels_entered`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from storage import Store
from storage.models import (
    AlmRun,
    Annotator,
    CategoryLabel,
    CategoryPolarity,
    Clip,
    ClipLabel,
    ClipQuality,
    CurationCategoryResult,
    CurationClipResult,
    CurationRun,
    JudgeRun,
    Judgment,
    MediaRoot,
    Prediction,
    Tag,
    TaggerRun,
    TagTimeline,
)
from workbench.errors import InputError
from workbench.labels import clip_id_for_key
from workbench.project import current_tagger_run, latest_judgments
from workbench.speech import SPEECH_CLASS_ID as SPEECH_ID  # the one speech rule

DEFAULT_TAU = 0.15
DEFAULT_TOP_N = 10
DEFAULT_THETA = 0.0

REVIEWED = "reviewed"
IN_PROGRESS = "in progress"
UNREVIEWED = "unreviewed"


# --------------------------------------------------------------------------- dataclasses


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
            categories.append(replace(row, judgments=views, consensus=_consensus(views.values())))
        return replace(self, categories=tuple(categories), judge_names=tuple(sorted(latest_run)), alm_run_id=alm_run_id)


@dataclass(frozen=True)
class AudioSource:
    """A clip's recording: the resolved file (or why there is none) and its layout."""

    clip_id: int
    key: str
    audio_path: Path | None
    audio_problem: str | None
    layout: str | None


# --------------------------------------------------------------------------- pure rules


def judge_disagreement(scores_by_category: dict[str, Sequence[int | None]]) -> float | None:
    """Mean over categories of (max − min) / 3 of the valid judge scores (see module docstring).

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


def review_queue_key(row: ClipRow) -> tuple:
    """Sort key of the review queue: the most informative clips first.

    The rule, applied lexicographically:

    1. clips the annotator has not finished (status other than ``reviewed``) first;
    2. higher judge disagreement first (clips without a disagreement value after
       every clip that has one);
    3. localizability nearer the threshold θ first (``|l − θ|`` ascending; clips
       without a curation result after those with one);
    4. clip key, then clip id, ascending — a stable tie-break.

    Disagreement is rounded to 9 decimals so that float noise does not override rule 3.
    """
    finished = row.review_status == REVIEWED
    disagreement = row.judge_disagreement
    distance = row.distance_from_theta
    return (
        finished,
        disagreement is None,
        -round(disagreement, 9) if disagreement is not None else 0.0,
        distance is None,
        distance if distance is not None else 0.0,
        row.key,
        row.clip_id,
    )


def review_queue(rows: Iterable[ClipRow]) -> list[ClipRow]:
    """The rows ordered by :func:`review_queue_key`."""
    return sorted(rows, key=review_queue_key)


def labels_entered(detail: ClipDetail, *, revealed: bool = False) -> bool:
    """Whether the expert has "entered their own labels" for a clip (blind mode).

    True when the expert gave a contribution for every detected category of the
    clip, or when they rated the clip (1–5) and then asked explicitly to reveal the
    judges (``revealed``). A clip without detected categories counts as entered once
    it is rated. Until then blind mode hides the judges' columns and other experts'
    labels.
    """
    rated = detail.own_label.rating is not None
    if revealed and rated:
        return True
    if not detail.categories:
        return rated
    return all(row.expert_contribution is not None for row in detail.categories)


# --------------------------------------------------------------------------- the service


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _consensus(views: Iterable[JudgmentView]) -> float | None:
    """The mean valid judge score divided by 3 (module docstring); None without one."""
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


class ReviewService:
    """Read-side queries of the review workbench.

    Parameters
    ----------
    store
        The project store; each method is one read unit of work.
    category_names
        AudioSet id → name; by default the ontology found by
        :func:`workbench.tagging.ontology.load_local_ontology`, completed by
        the ``class_names`` a tagger run stored in its parameters.
    category_roots
        AudioSet id → root-category name (used to colour tags).
    """

    def __init__(
        self,
        store: Store,
        category_names: dict[str, str] | None = None,
        category_roots: dict[str, str] | None = None,
    ) -> None:
        self.store = store
        if category_names is None:
            from workbench.tagging.ontology import Ontology, load_local_ontology

            try:
                ontology = load_local_ontology() or Ontology.empty()
                category_names, category_roots = ontology.names, ontology.primary_roots
            except InputError:
                category_names, category_roots = {}, {}
        self._names = dict(category_names)
        self._roots = dict(category_roots or {})

    # ------------------------------------------------------------------ helpers

    def _name(self, audioset_id: str, run_names: dict[str, str]) -> str:
        return self._names.get(audioset_id) or run_names.get(audioset_id) or audioset_id

    def _root(self, audioset_id: str, run_roots: dict[str, str]) -> str:
        return self._roots.get(audioset_id) or run_roots.get(audioset_id) or "unknown"

    @staticmethod
    def _latest_curation_run(s: Any) -> CurationRun | None:
        return s.exec(select(CurationRun).order_by(col(CurationRun.id).desc())).first()

    # ------------------------------------------------------------------ browser rows

    def clip_rows(self, annotator_id: int | None = None, clip_ids: Sequence[int] | None = None) -> list[ClipRow]:
        """One :class:`ClipRow` per clip of the project (or of ``clip_ids``), ordered by key.

        ``clip_ids`` is what an edit changed: the window refreshes those rows alone instead of
        re-reading every judgment of the project (1.9 s per edit at 60,000 judgments).
        """
        only = list(clip_ids) if clip_ids is not None else None

        def restricted(query: Any, column: Any) -> Any:
            return query if only is None else query.where(col(column).in_(only))

        with self.store.session() as s:
            clips = s.exec(restricted(select(Clip), Clip.id).order_by(Clip.key, Clip.id)).all()
            curation = self._latest_curation_run(s)
            theta = float((curation.parameters or {}).get("theta", DEFAULT_THETA)) if curation else DEFAULT_THETA
            results: dict[int, CurationClipResult] = {}
            if curation is not None:
                results = {
                    r.clip_id: r
                    for r in s.exec(restricted(
                        select(CurationClipResult).where(CurationClipResult.run_id == curation.id),
                        CurationClipResult.clip_id,
                    ))
                }
            tagger = current_tagger_run(s)
            speech_tag: dict[int, float] = {}
            if tagger is not None:
                for clip_id, probability in s.exec(restricted(
                    select(Tag.clip_id, Tag.probability).where(
                        Tag.tagger_run_id == tagger.id, Tag.audioset_id == SPEECH_ID
                    ),
                    Tag.clip_id,
                )):
                    speech_tag[clip_id] = probability
            scores: dict[int, dict[str, list[int | None]]] = defaultdict(lambda: defaultdict(list))
            for judgment, _name, _alm in latest_judgments(s, only):
                if judgment.status == "ok":
                    scores[judgment.clip_id][judgment.category_id].append(judgment.contribution)
            decided: set[int] = set()
            touched: set[int] = set()
            if annotator_id is not None:
                for label in s.exec(restricted(
                    select(ClipLabel).where(ClipLabel.annotator_id == annotator_id), ClipLabel.clip_id
                )):
                    if label.decision is not None:
                        decided.add(label.clip_id)
                    if any(v is not None for v in (label.rating, label.decision, label.note)):
                        touched.add(label.clip_id)
                for clip_id in s.exec(restricted(
                    select(CategoryLabel.clip_id).where(CategoryLabel.annotator_id == annotator_id),
                    CategoryLabel.clip_id,
                )):
                    touched.add(clip_id)
        rows = []
        for clip in clips:
            result = results.get(clip.id)
            status = REVIEWED if clip.id in decided else IN_PROGRESS if clip.id in touched else UNREVIEWED
            rows.append(
                ClipRow(
                    clip_id=clip.id,
                    key=clip.key,
                    title=clip.title or "",
                    country=clip.country,
                    continent=clip.continent,
                    speech=_speech(clip.human_sounds, speech_tag.get(clip.id)),
                    review_status=status,
                    judge_disagreement=judge_disagreement(scores.get(clip.id, {})),
                    localizability=result.localizability if result else None,
                    percentile=result.percentile if result else None,
                    theta=theta,
                    quality_flags=_flag_names(result.quality_flags if result else None),
                    is_demo=clip.is_demo,
                    duration_s=clip.duration_s,
                    city=clip.city,
                )
            )
        return rows

    # ------------------------------------------------------------------ one clip

    def clip_detail(self, clip_id: int, annotator_id: int | None = None) -> ClipDetail:
        """Everything about one clip for the evidence panels and the attribution grid.

        Raises
        ------
        InputError
            If the clip does not exist.
        """
        with self.store.session() as s:
            clip, roots = _clip_and_roots(s, clip_id)
            predictions = s.exec(
                select(Prediction, AlmRun)
                .join(AlmRun, Prediction.alm_run_id == AlmRun.id)
                .where(Prediction.clip_id == clip_id)
                .order_by(AlmRun.model)
            ).all()
            tagger = current_tagger_run(s)
            tags: list[Tag] = []
            timelines: list[TagTimeline] = []
            run_names: dict[str, str] = {}
            run_roots: dict[str, str] = {}
            if tagger is not None:
                tags = list(
                    s.exec(
                        select(Tag)
                        .where(Tag.tagger_run_id == tagger.id, Tag.clip_id == clip_id)
                        .order_by(col(Tag.probability).desc())
                    )
                )
                timelines = list(
                    s.exec(select(TagTimeline).where(TagTimeline.tagger_run_id == tagger.id, TagTimeline.clip_id == clip_id))
                )
                run_names = dict((tagger.parameters or {}).get("class_names", {}))
                run_roots = dict((tagger.parameters or {}).get("class_roots", {}))
            params = (tagger.parameters or {}) if tagger else {}
            tau = float(params.get("tau", DEFAULT_TAU))
            judgments = latest_judgments(s, [clip_id], per_alm=True)
            curation = self._latest_curation_run(s)
            theta = float((curation.parameters or {}).get("theta", DEFAULT_THETA)) if curation else DEFAULT_THETA
            clip_result = None
            category_results: dict[str, CurationCategoryResult] = {}
            if curation is not None:
                clip_result = s.exec(
                    select(CurationClipResult).where(
                        CurationClipResult.run_id == curation.id, CurationClipResult.clip_id == clip_id
                    )
                ).first()
                category_results = {
                    r.category_id: r
                    for r in s.exec(select(CurationCategoryResult).where(CurationCategoryResult.run_id == curation.id))
                }
            annotators = {a.id: a.name for a in s.exec(select(Annotator))}
            category_labels = list(s.exec(select(CategoryLabel).where(CategoryLabel.clip_id == clip_id)))
            own_polarities: dict[str, str | None] = {}
            if annotator_id is not None:
                own_polarities = {
                    row.category_id: row.polarity
                    for row in s.exec(select(CategoryPolarity).where(CategoryPolarity.annotator_id == annotator_id))
                }
            clip_labels = list(s.exec(select(ClipLabel).where(ClipLabel.clip_id == clip_id)))
            quality_row = s.exec(select(ClipQuality).where(ClipQuality.clip_id == clip_id)).first()

        audio_path, audio_problem = _resolve_audio(clip, roots)
        prediction_views = tuple(_prediction_view(p, run, clip) for p, run in predictions)
        tag_views = tuple(
            TagView(t.audioset_id, self._name(t.audioset_id, run_names), self._root(t.audioset_id, run_roots), t.probability)
            for t in tags
        )
        timeline_views = tuple(
            TimelineView(t.audioset_id, self._name(t.audioset_id, run_names), t.hop_s, tuple(float(v) for v in t.values or ()))
            for t in sorted(timelines, key=lambda t: t.class_index)
        )
        tag_probability = {t.audioset_id: t.probability for t in tags}
        detected = [t.audioset_id for t in tags if t.probability >= tau][: int(params.get("top_n", DEFAULT_TOP_N))]
        by_category: dict[str, list[JudgmentView]] = defaultdict(list)
        for judgment, judge_name, alm_run_id in sorted(judgments, key=lambda t: (t[1], t[0].judge_run_id)):
            by_category[judgment.category_id].append(
                JudgmentView(
                    judge_name, judgment.judge_run_id, judgment.contribution, judgment.effect, judgment.evidence,
                    judgment.status, alm_run_id,
                )
            )
        for category_id in by_category:
            if category_id not in detected:
                detected.append(category_id)
        own = {l.category_id: l for l in category_labels if l.annotator_id == annotator_id}
        others: dict[str, list[ExpertLabelView]] = defaultdict(list)
        for label in category_labels:
            if label.annotator_id != annotator_id:
                others[label.category_id].append(
                    ExpertLabelView(
                        label.annotator_id,
                        annotators.get(label.annotator_id, "?"),
                        label.contribution,
                        label.effect,
                        label.polarity,
                    )
                )
        categories = []
        for category_id in sorted(detected, key=lambda c: (-(tag_probability.get(c) or 0.0), c)):
            result = category_results.get(category_id)
            mine = own.get(category_id)
            categories.append(
                CategoryRow(
                    category_id=category_id,
                    name=self._name(category_id, run_names),
                    root=self._root(category_id, run_roots),
                    tag_probability=tag_probability.get(category_id),
                    judgments={},  # filled for the shown ALM by ClipDetail.for_alm below
                    consensus=None,
                    fitted_polarity=result.fitted_polarity if result else None,
                    polarity=result.polarity if result else None,
                    expert_contribution=mine.contribution if mine else None,
                    expert_effect=mine.effect if mine else None,
                    expert_polarity=mine.polarity if mine else None,
                    other_experts=tuple(others.get(category_id, ())),
                    expert_category_polarity=own_polarities.get(category_id),
                    alm_judgments=tuple(by_category.get(category_id, ())),
                    expert_version=mine.version if mine else 0,
                )
            )
        own_label = ClipLabelState()
        other_clip_labels = []
        for label in clip_labels:
            state = ClipLabelState(label.rating, label.decision, label.note, label.version)
            if label.annotator_id == annotator_id:
                own_label = state
            else:
                other_clip_labels.append((annotators.get(label.annotator_id, "?"), state))
        quality = {}
        if quality_row is not None:
            quality = {
                "rms_dbfs": quality_row.rms_dbfs,
                "spectral_flatness": quality_row.spectral_flatness,
                "clipping_ratio": quality_row.clipping_ratio,
                "aci": quality_row.aci,
            }
        detail = ClipDetail(
            clip_id=clip.id,
            key=clip.key,
            title=clip.title or "",
            description=clip.description or "",
            city=clip.city,
            country=clip.country,
            continent=clip.continent,
            latitude=clip.latitude,
            longitude=clip.longitude,
            is_demo=clip.is_demo,
            audio_path=audio_path,
            audio_problem=audio_problem,
            n_channels=clip.n_channels,
            sample_rate=clip.sample_rate,
            duration_s=clip.duration_s,
            layout=clip.layout_override or clip.layout,
            predictions=prediction_views,
            tags=tag_views,
            timelines=timeline_views,
            categories=tuple(categories),
            judge_names=(),
            own_label=own_label,
            other_clip_labels=tuple(other_clip_labels),
            localizability=clip_result.localizability if clip_result else None,
            percentile=clip_result.percentile if clip_result else None,
            candidate=clip_result.candidate if clip_result else None,
            theta=theta,
            quality_flags=_flag_names(clip_result.quality_flags if clip_result else None),
            quality=quality,
        )
        return detail.for_alm(default_alm_run_id(prediction_views, (a for _j, _n, a in judgments)))

    def audio_source(self, clip_id: int) -> AudioSource:
        """Where a clip's recording is and how it is laid out: two small queries, for opening
        the audio before :meth:`clip_detail` has gathered everything else.

        Raises
        ------
        InputError
            If the clip does not exist.
        """
        with self.store.session() as s:
            clip, roots = _clip_and_roots(s, clip_id)
        path, problem = _resolve_audio(clip, roots)
        return AudioSource(clip.id, clip.key, path, problem, clip.layout_override or clip.layout)

    def clip_id_for_key(self, key: str) -> int:
        """The id of the clip with dataset key ``key``; InputError when unknown or ambiguous."""
        return clip_id_for_key(self.store, key)


def _speech(human_sounds: float | None, speech_probability: float | None) -> bool | None:
    """Speech as :mod:`workbench.speech` defines it; None when neither source is known."""
    from workbench.speech import is_speech_clip

    return is_speech_clip(human_sounds, speech_probability)


def _flag_names(flags: Any) -> tuple[str, ...]:
    """Flag names from a stored ``quality_flags`` list (strings or ``{"flag": ...}`` dicts)."""
    names = []
    for flag in flags or ():
        if isinstance(flag, dict):
            names.append(str(flag.get("flag") or flag.get("name") or flag))
        else:
            names.append(str(flag))
    return tuple(names)


def _clip_and_roots(session: Session, clip_id: int) -> tuple[Clip, list[Path]]:
    """A clip and its dataset's media roots; a clear error when the clip does not exist."""
    clip = session.get(Clip, clip_id)
    if clip is None:
        raise InputError(f"no clip with id {clip_id} in this project")
    roots = [Path(r.path) for r in session.exec(select(MediaRoot).where(MediaRoot.dataset_id == clip.dataset_id))]
    return clip, roots


def _resolve_audio(clip: Clip, roots: list[Path]) -> tuple[Path | None, str | None]:
    from workbench.media import clip_audio

    status = clip_audio(clip.key, clip.audio_path, roots)
    return (status.path, None) if status.ok else (None, status.message)


def _prediction_view(prediction: Prediction, run: AlmRun, clip: Clip) -> PredictionView:
    from workbench.metrics.core import prediction_error_km

    true_lat = prediction.true_latitude if prediction.true_latitude is not None else clip.latitude
    true_lon = prediction.true_longitude if prediction.true_longitude is not None else clip.longitude
    error = prediction_error_km(true_lat, true_lon, prediction.predicted_latitude, prediction.predicted_longitude)
    return PredictionView(
        alm_run_id=run.id,
        model=run.model,
        is_demo=run.is_demo,
        predicted_city=prediction.predicted_city,
        predicted_country=prediction.predicted_country,
        predicted_continent=prediction.predicted_continent,
        predicted_latitude=prediction.predicted_latitude,
        predicted_longitude=prediction.predicted_longitude,
        error_km=_finite(error),
        reasoning=prediction.reasoning or prediction.model_output or "",
    )


# --------------------------------------------------------------------------- direction view


@dataclass(frozen=True)
class DirectionImage:
    """What the direction view shows, time-aligned with the spectrogram.

    Attributes
    ----------
    kind
        ``azimuth`` (FOA: energy per azimuth bin × frame), ``lateral`` (binaural / AB:
        frames per lateral-angle bin, front/back mirror ambiguous), ``panorama``
        (coincident or plain stereo: level panorama index), or ``none`` (mono or no
        usable direction; ``image`` is None and ``note`` says why).
    image
        float32 shaped (n_direction_bins, n_frames), rows from ``y_range[0]`` upwards.
    t0, t1
        Time span covered by the columns.
    y_range
        Direction value at the bottom and top edge of the image.
    y_label
        Axis label.
    note
        A sentence for the user (the mirror caveat, or why nothing is shown).
    """

    kind: str
    image: Any
    t0: float
    t1: float
    y_range: tuple[float, float]
    y_label: str
    note: str


AB_SPACING_SETTING = "ab_spacing_m"
AB_NEEDS_SPACING = (
    "AB (spaced pair) recording: its direction view needs the microphone spacing. Set it in "
    "config.toml, e.g. `ab_spacing_m = 0.5` (metres), or choose another layout for the clip."
)


def ab_spacing_from_config() -> tuple[float | None, str | None]:
    """The AB microphone spacing configured for the direction view.

    Read from the ``ab_spacing_m`` key (metres) of the user's ``config.toml``. There is no
    built-in default: a guessed spacing would silently give wrong angles.

    Returns
    -------
    tuple[float or None, str or None]
        The spacing (None when unset or unusable) and, when the configured value is unusable
        or the file cannot be read, a sentence saying why.
    """
    from workbench.config import Settings

    try:
        value = Settings.load().extra.get(AB_SPACING_SETTING)
    except InputError as exc:
        return None, str(exc)
    if value is None:
        return None, None
    try:
        spacing = float(value)
    except (TypeError, ValueError):
        spacing = float("nan")
    if not (math.isfinite(spacing) and 0.0 < spacing <= 100.0):
        return None, f"config.toml: {AB_SPACING_SETTING} = {value!r} is not a spacing in metres (0 < d <= 100)"
    return spacing, None


def _none(note: str) -> DirectionImage:
    return DirectionImage("none", None, 0.0, 0.0, (0.0, 1.0), "", note)


def _time_span(times: Any) -> tuple[float, float]:
    if not len(times):
        return 0.0, 0.0
    step = float(times[1] - times[0]) if len(times) > 1 else 0.1
    return float(times[0] - step / 2), float(times[-1] + step / 2)


def direction_image(
    path: Path,
    layout: str | None,
    n_channels: int,
    *,
    spacing_m: float | None = None,
    audio: Any = None,
) -> DirectionImage:
    """Compute the direction view of an audio file for its layout (spatial.md).

    Parameters
    ----------
    path
        The audio file.
    layout
        The clip's layout (override already applied); None detects it from the channel count.
    n_channels
        Channels in the file.
    spacing_m
        Microphone spacing of an AB pair in metres (see :func:`ab_spacing_from_config`).
        Without it an AB clip gets no view, only a note saying what to set.
    audio
        The file already decoded (:class:`workbench.audio.loader.AudioData`): the analysis
        then runs on its samples instead of decoding the file again.

    Returns
    -------
    DirectionImage
        ``kind`` ``none`` with a note for mono recordings and for AB without a spacing.
    """
    import numpy as np

    from workbench.audio import direction

    chosen = layout or ("ambix" if n_channels == 4 else "stereo" if n_channels >= 2 else "mono")
    if n_channels < 2 or chosen == "mono":
        return _none("Mono recording: it carries no direction information.")
    if chosen == "ab" and not (spacing_m is not None and spacing_m > 0):
        return _none(AB_NEEDS_SPACING)
    if chosen in direction.FOA_LAYOUTS:
        if audio is not None and n_channels >= 4:
            samples = audio.samples[:, :4]
            if chosen == "fuma":
                samples = direction.fuma_to_ambix(samples)
            heatmap = direction.foa_heatmap(samples, audio.sample_rate)
        else:
            heatmap = direction.foa_heatmap_file(path, layout=chosen)
        values = np.asarray(heatmap.values, dtype=np.float32)
        peak = float(values.max()) if values.size else 0.0
        image = values / peak if peak > 0 else values
        t0, t1 = _time_span(np.asarray(heatmap.times, dtype=float))
        edges = heatmap.azimuth_edges_deg
        return DirectionImage(
            "azimuth", image, t0, t1, (float(edges[0]), float(edges[-1])),
            "azimuth (°, +90 = left)", "FOA azimuth × time (direct energy; counter-clockwise from the front).",
        )
    times, values = _pair_values(path, chosen, spacing_m, audio)
    if chosen in direction.PANORAMA_LAYOUTS:
        edges = np.linspace(-1.0, 1.0, 41)
        kind, label = "panorama", "panorama index (+1 = left)"
        note = f"{chosen}: a level panorama index, not an angle."
    else:
        edges = np.linspace(-90.0, 90.0, 37)
        kind, label = "lateral", "lateral angle (°, +90 = left)"
        note = "Lateral angle from the time difference: front and back cannot be told apart (each angle has a mirror)."
        if chosen == "ab":
            note = f"AB pair, spacing {spacing_m:g} m (config.toml {AB_SPACING_SETTING}). " + note
    image = np.zeros((len(edges) - 1, len(times)), dtype=np.float32)
    valid = np.isfinite(values)
    rows = np.clip(np.searchsorted(edges, values[valid], side="right") - 1, 0, len(edges) - 2)
    image[rows, np.flatnonzero(valid)] = 1.0
    t0, t1 = _time_span(times)
    return DirectionImage(kind, image, t0, t1, (float(edges[0]), float(edges[-1])), label, note)


def _pair_values(path: Path, layout: str, spacing_m: float | None, audio: Any) -> tuple[Any, Any]:
    """Frame times and per-frame panorama index (panorama layouts) or lateral angle in degrees.

    From the decoded samples when given (:func:`~workbench.audio.direction.analyze_direction_samples`,
    the same result as the file analysis), else from the file (``analyze_direction``).
    """
    import numpy as np

    from workbench.audio import direction

    if audio is None:
        result = direction.analyze_direction(path, layout=layout, spacing_m=spacing_m)
    else:
        result = direction.analyze_direction_samples(
            audio.samples, audio.sample_rate, layout=layout, spacing_m=spacing_m, name=str(path)
        )
    frames = result["frames"]
    times = np.array([f["t"] for f in frames], dtype=float)
    key = "panorama_index" if layout in direction.PANORAMA_LAYOUTS else "lateral_deg"
    values = np.array([np.nan if f.get(key) is None else f[key] for f in frames], dtype=float)
    return times, values
