"""What the judges read: the clips of one ALM run with their tags, chain-of-thought and truth.

A clip is judged when the ALM has a prediction with a chain-of-thought for it and the
project's current tagger run gave it at least one category above the threshold; every other
selected clip is returned as skipped, with the reason, so the caller can say why.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, col, select

from storage import Store
from storage.models import AlmRun, Clip, Prediction, Tag
from workbench.attribution.prompts import CategoryInput, ClipInput
from workbench.errors import AglwError
from workbench.metrics.distance import stored_answer, truth_position
from workbench.tagging.ontology import Ontology, load_local_ontology

TAG_THRESHOLD = 0.15
TOP_CATEGORIES = 10


@dataclass(frozen=True)
class SkippedClip:
    """A clip that was not judged, and why."""

    key: str
    reason: str


@dataclass(frozen=True)
class ClipSelection:
    """The clips to judge for one ALM run, with the tagger run their categories come from."""

    alm_run_id: int
    alm_model: str
    tagger_run_id: int | None
    inputs: list[ClipInput]
    skipped: list[SkippedClip]


def resolve_alm_run(session: Session, alm_model: str | None) -> AlmRun:
    """The ALM run named ``alm_model``, or the only one with answers (:func:`workbench.metrics.records.answered_alm_runs`).

    Raises
    ------
    AglwError
        No run of that name, none imported, or several and no name given.
    """
    from workbench.metrics.records import answered_alm_runs, unanswered_alm_run_text

    answered = answered_alm_runs(session)
    if alm_model is not None:
        for run_id, model in answered:
            if model == alm_model:
                return session.get(AlmRun, run_id)  # type: ignore[return-value]
        empty = unanswered_alm_run_text(session, alm_model)
        if empty is not None:
            raise AglwError(empty)
        known = ", ".join(m for _, m in answered) or "none"
        raise AglwError(f"no imported ALM results named {alm_model!r} (imported: {known}); check --alm")
    if not answered:
        raise AglwError("no ALM results imported yet: run `aglw import predictions --model NAME FILE` first")
    if len(answered) > 1:
        raise AglwError(f"several ALM models are imported ({', '.join(m for _, m in answered)}); choose one with --alm")
    return session.get(AlmRun, answered[0][0])  # type: ignore[return-value]


def latest_tagger_run_id(session: Session) -> int | None:
    """The tagger run whose tags the judges read: the project's current one (one definition,
    :func:`workbench.project.current_tagger_run_id`)."""
    from workbench.project import current_tagger_run_id

    return current_tagger_run_id(session)


def select_clip_inputs(
    store: Store,
    *,
    alm_model: str | None = None,
    clip_keys: list[str] | None = None,
    tagger_run_id: int | None = None,
    tau: float = TAG_THRESHOLD,
    top_n: int = TOP_CATEGORIES,
    names: Ontology | None = None,
) -> ClipSelection:
    """Gather what the judges read for every selected clip that has a prediction from the ALM run.

    Parameters
    ----------
    store
        The project.
    alm_model
        The ALM whose chain-of-thought is judged (default: the only one imported).
    clip_keys
        Clip keys to judge; None for all clips with a prediction.
    tagger_run_id
        The tagger run whose tags are the categories (default: the latest with tags).
    tau, top_n
        Tags with probability ≥ ``tau``, at most ``top_n`` per clip, highest first.
    names
        AudioSet names and roots (default: the configured or cached ontology; without one,
        ids are shown as unknown).

    Returns
    -------
    ClipSelection
        Inputs in clip-key order plus the clips skipped with their reasons (no tags, no CoT, ...).
    """
    if names is None:
        names = load_local_ontology() or Ontology.empty()
    with store.session() as session:
        alm_run = resolve_alm_run(session, alm_model)
        if tagger_run_id is None:
            tagger_run_id = latest_tagger_run_id(session)
        rows = session.exec(
            select(Prediction, Clip)
            .join(Clip, col(Prediction.clip_id) == col(Clip.id))
            .where(Prediction.alm_run_id == alm_run.id)
            .order_by(Clip.key)
        ).all()
        tags_by_clip: dict[int, list[Tag]] = {}
        tagged: set[int] = set()
        if tagger_run_id is not None:
            from storage.models import TagStatus

            tagged = set(session.exec(select(TagStatus.clip_id).where(
                TagStatus.tagger_run_id == tagger_run_id, TagStatus.status == "done")).all())
            for tag in session.exec(
                select(Tag)
                .where(Tag.tagger_run_id == tagger_run_id, Tag.probability >= tau)
                .order_by(col(Tag.probability).desc(), Tag.audioset_id)
            ):
                tags_by_clip.setdefault(tag.clip_id, []).append(tag)
    skipped: list[SkippedClip] = []
    by_key = {clip.key: (prediction, clip) for prediction, clip in rows}
    if clip_keys is not None:
        wanted = []
        # A key given twice is judged (and paid for) once.
        for key in dict.fromkeys(clip_keys):
            if key in by_key:
                wanted.append(by_key[key])
            else:
                skipped.append(SkippedClip(key, f"no prediction from {alm_run.model!r} for this clip key"))
    else:
        wanted = list(by_key.values())
    inputs: list[ClipInput] = []
    for prediction, clip in wanted:
        tags = tags_by_clip.get(clip.id or -1, [])[:top_n]
        if tagger_run_id is None:
            skipped.append(SkippedClip(clip.key, "no tagger run yet: run `aglw tag` first"))
            continue
        if not tags and clip.id not in tagged:
            # Never tagged (most often: no recording linked), which is not "nothing heard".
            skipped.append(SkippedClip(clip.key, f"no tags: the clip was not tagged in tagger run {tagger_run_id} (no "
                                                 "audio linked, or its tagging failed); `aglw media link`, then `aglw tag`"))
            continue
        if not tags:
            skipped.append(SkippedClip(clip.key, f"no tag with probability ≥ {tau} in tagger run {tagger_run_id}"))
            continue
        if not (prediction.reasoning or "").strip():
            skipped.append(SkippedClip(clip.key, "the prediction has no chain-of-thought (reasoning) to judge"))
            continue
        inputs.append(clip_input(clip, prediction, tags, names))
    return ClipSelection(alm_run.id or 0, alm_run.model, tagger_run_id, inputs, skipped)


def clip_input(clip: Clip, prediction: Prediction, tags: list[Tag], names: Ontology) -> ClipInput:
    """Assemble one clip's judge input from its stored rows."""
    true_lat, true_lon = truth_position(clip.latitude, clip.longitude, prediction.true_latitude,
                                       prediction.true_longitude)
    return ClipInput(
        clip_id=clip.id or 0,
        clip_key=clip.key,
        categories=tuple(
            CategoryInput(t.audioset_id, names.name(t.audioset_id), names.primary_root(t.audioset_id), float(t.probability))
            for t in tags
        ),
        cot=prediction.reasoning or "",
        predicted_city=prediction.predicted_city,
        predicted_country=prediction.predicted_country,
        predicted_latitude=prediction.predicted_latitude,
        predicted_longitude=prediction.predicted_longitude,
        true_city=clip.city or prediction.true_city,
        true_country=clip.country or prediction.true_country,
        true_latitude=true_lat,
        true_longitude=true_lon,
        error_km=stored_answer(prediction, clip).distance_km,
    )
