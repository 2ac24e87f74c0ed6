"""Review service: what the review workbench shows, as plain dataclasses.

The GUI's clip browser, review queue and evidence panels read everything through
:class:`ReviewService`; it returns the frozen dataclasses of :mod:`workbench.review.views`
(never live ORM rows), so the results can cross threads and outlive their database session.
The pure rules are in :mod:`workbench.review.rules`, the direction view in
:mod:`workbench.review.direction`.

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
    See :func:`workbench.review.rules.labels_entered`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
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
    MediaRoot,
    Prediction,
    Tag,
    TagTimeline,
)
from workbench.audio.flags import quality_flags_now
from workbench.audio.quality import describe_flag
from workbench.clip_ids import clip_id_for_key
from workbench.errors import InputError
from workbench.project import current_tagger_row, latest_curation_run_id, latest_judgments, speech_probabilities
from workbench.review.rules import (
    IN_PROGRESS,
    REVIEWED,
    UNREVIEWED,
    default_alm_run_id,
    judge_disagreement,
)
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

DEFAULT_TAU = 0.15
DEFAULT_TOP_N = 10
DEFAULT_THETA = 0.0


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None



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
        run_id = latest_curation_run_id(s)
        return s.get(CurationRun, run_id) if run_id is not None else None

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
            flags_now = quality_flags_now(s, clip_ids=only)  # the one answer (workbench/audio/flags.py)
            results: dict[int, CurationClipResult] = {}
            if curation is not None:
                results = {
                    r.clip_id: r
                    for r in s.exec(restricted(
                        select(CurationClipResult).where(CurationClipResult.run_id == curation.id),
                        CurationClipResult.clip_id,
                    ))
                }
            speech_tag = speech_probabilities(s, only)
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
                    quality_flags=flags_now.names(clip.id),
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
            tagger = current_tagger_row(s)
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
            flags_now = quality_flags_now(s, clip_ids=[clip_id])  # the one answer (workbench/audio/flags.py)
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
        top_tags = set(detected)
        own = {l.category_id: l for l in category_labels if l.annotator_id == annotator_id}
        # Judged or labelled categories outside the top tags get a row too: an expert's label on
        # one drives the fit, so the expert must see and be able to correct it.
        for category_id in [*by_category, *sorted({l.category_id for l in category_labels})]:
            if category_id not in detected:
                detected.append(category_id)
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
                    among_top_tags=category_id in top_tags,
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
            quality_flags=flags_now.names(clip_id),
            quality=quality,
            quality_flag_details=tuple(describe_flag(f) for f in flags_now.of(clip_id)) + (
                (flags_now.why_not,) if flags_now.why_not and clip_id in flags_now.measured else ()),
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
        # One narrow statement (the clip's few audio columns beside each media root of its
        # dataset): it runs on the GUI thread before the decode can start, and on the first
        # clip after start-up its compilation is part of what the reviewer waits for.
        statement = (
            select(Clip.key, Clip.audio_path, Clip.layout, Clip.layout_override, MediaRoot.path)
            .outerjoin(MediaRoot, col(MediaRoot.dataset_id) == col(Clip.dataset_id))
            .where(Clip.id == clip_id)
            .order_by(col(MediaRoot.id))
        )
        with self.store.session() as s:
            rows = s.exec(statement).all()
        if not rows:
            raise InputError(f"no clip with id {clip_id} in this project")
        key, audio_path, layout, layout_override, _root = rows[0]
        roots = [Path(root) for *_columns, root in rows if root is not None]
        path, problem = _resolve_clip_audio(key, audio_path, roots)
        return AudioSource(clip_id, key, path, problem, layout_override or layout)

    def clip_id_for_key(self, key: str) -> int:
        """The id of the clip with dataset key ``key``; InputError when unknown or ambiguous."""
        return clip_id_for_key(self.store, key)


def _speech(human_sounds: float | None, speech_probability: float | None) -> bool | None:
    """Speech as :mod:`workbench.speech` defines it; None when neither source is known."""
    from workbench.speech import is_speech_clip

    return is_speech_clip(human_sounds, speech_probability)


def _clip_and_roots(session: Session, clip_id: int) -> tuple[Clip, list[Path]]:
    """A clip and its dataset's media roots; a clear error when the clip does not exist."""
    clip = session.get(Clip, clip_id)
    if clip is None:
        raise InputError(f"no clip with id {clip_id} in this project")
    statement = select(MediaRoot).where(MediaRoot.dataset_id == clip.dataset_id).order_by(col(MediaRoot.id))
    roots = [Path(r.path) for r in session.exec(statement)]  # in the order audio_source tries them
    return clip, roots


def _resolve_audio(clip: Clip, roots: list[Path]) -> tuple[Path | None, str | None]:
    return _resolve_clip_audio(clip.key, clip.audio_path, roots)


def _resolve_clip_audio(key: str, audio_path: str | None, roots: list[Path]) -> tuple[Path | None, str | None]:
    from workbench.media import clip_audio

    status = clip_audio(key, audio_path, roots)
    return (status.path, None) if status.ok else (None, status.message)


def _prediction_view(prediction: Prediction, run: AlmRun, clip: Clip) -> PredictionView:
    from workbench.metrics.distance import stored_answer

    error = stored_answer(prediction, clip).distance_km  # the one rule: measured from the clip's position
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
