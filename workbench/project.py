"""The read side of a project: what the store holds, named the way a person reads it.

Read commands (``label history``, ``judgments show``, ``clips show``, ``fit``) and views ask here
instead of each resolving names on their own, so a category is called the same everywhere.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from storage import Store
# The reads select from the Core read model (storage/tables.py), on a Session or a Connection alike:
# the read commands start without SQLModel and the ORM (issue 32, bench P11).
from storage import tables as T
from workbench.clip_ids import clip_id_for_key
from workbench.errors import InputError
from workbench.media import AudioStatus, clip_audio, dataset_roots
from workbench.metrics.distance import stored_answer

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Row
    from sqlmodel import Session

log = logging.getLogger(__name__)


def category_names(store: Store) -> dict[str, str]:
    """AudioSet id → display name, from the local ontology (never downloaded here) and the stored fits.

    Ids the project uses that neither source names are simply absent: callers show the id.
    """
    from workbench.tagging.ontology import load_local_ontology

    names: dict[str, str] = {}
    result = T.curation_category_result.c
    with store.read() as connection:
        for category_id, name in connection.execute(
            select(result.category_id, result.name).order_by(result.run_id)
        ):
            if name:
                names[category_id] = name
    try:
        ontology = load_local_ontology()
    except InputError as exc:  # a damaged configured file: names from the store still serve
        log.warning("category names without the ontology: %s", exc)
        ontology = None
    if ontology is not None:
        names.update(ontology.names)
    return names


def clip_keys(store: Store, clip_ids: set[int]) -> dict[int, str]:
    """Clip id → dataset key for the given ids (one query)."""
    if not clip_ids:
        return {}
    with store.read() as connection:
        return clip_keys_on(connection, clip_ids)


def clip_keys_on(connection: Any, clip_ids: set[int]) -> dict[int, str]:
    """:func:`clip_keys` inside a read already open (a Session or a Connection)."""
    if not clip_ids:
        return {}
    rows = connection.execute(select(T.clip.c.id, T.clip.c.key).where(T.clip.c.id.in_(sorted(clip_ids))))
    return {int(clip_id): key for clip_id, key in rows}


# --------------------------------------------------------------------------- the latest of each


def current_tagger_run_id(connection: Any) -> int | None:
    """THE tagger run whose tags the project uses (review, judges, curation, read-back):
    the newest *finished* run that stored tags; with none finished, the newest run that
    stored any (an interrupted first run still shows what it did); else None.

    ``connection`` is a Session or a Connection (both ``execute`` a core select).
    """
    tag, run = T.tag.c, T.tagger_run.c
    # EXISTS per run (index on tag.tagger_run_id), not IN over every tag row: 12 ms -> well
    # under 1 ms at 200,000 tags, and it is asked on every edit (bench P10).
    has_tags = select(tag.id).where(tag.tagger_run_id == run.id).exists()
    done = connection.execute(select(func.max(run.id)).where(run.status == "done", has_tags)).scalar_one_or_none()
    if done is not None:
        return int(done)
    newest = connection.execute(select(func.max(run.id)).where(has_tags)).scalar_one_or_none()
    return int(newest) if newest is not None else None


def current_tagger_row(connection: Session | Connection) -> Row | None:
    """The ``tagger_run`` row of :func:`current_tagger_run_id` (its fields by name), on a Session
    or a Core connection."""
    run_id = current_tagger_run_id(connection)
    if run_id is None:
        return None
    return connection.execute(select(T.tagger_run).where(T.tagger_run.c.id == run_id)).first()


def speech_probabilities(
    session: Session | Connection, clip_ids: Sequence[int] | None = None, *, tagger_run_id: int | None = None
) -> dict[int, float]:
    """Clip id → probability of the Speech tag (the input of :func:`workbench.speech.is_speech_clip`)
    in ``tagger_run_id`` (default: the current tagger run); clips without the tag are absent."""
    from workbench.speech import SPEECH_CLASS_ID

    run_id = tagger_run_id if tagger_run_id is not None else current_tagger_run_id(session)
    if run_id is None:
        return {}
    tag = T.tag.c
    query = select(tag.clip_id, tag.probability).where(tag.tagger_run_id == run_id, tag.audioset_id == SPEECH_CLASS_ID)
    if clip_ids is not None:
        query = query.where(tag.clip_id.in_(list(clip_ids)))
    return {int(clip_id): float(probability) for clip_id, probability in session.execute(query)}


def latest_curation_run_id(session: Session | Connection, *, before: int | None = None) -> int | None:
    """The stored fit everyone reads: the curation run stored last (highest id; ``before``: the
    last one stored before that run). Not ``created_at``: clocks of team members differ, the
    order of the store does not."""
    run = T.curation_run.c
    query = select(func.max(run.id))
    if before is not None:
        query = query.where(run.id < before)
    found = session.execute(query).scalar()
    return int(found) if found is not None else None


STANDING, SUPERSEDED, EARLIER_RUN = "standing", "superseded", "earlier run"


def judgment_standing(
    rows: Iterable[tuple[int, int, str, int | None, int, str | None]], *, per_alm: bool = True
) -> dict[int, str]:
    """The one rule for "the latest judgment of judge J on clip k": judgment id → :data:`STANDING`,
    :data:`SUPERSEDED` (an earlier attempt inside the latest run) or :data:`EARLIER_RUN`.

    ``rows`` are ``(judgment_id, judge_run_id, judge_name, alm_run_id, clip_id, category_id)``.
    For each judge, clip (and ALM, with ``per_alm``) the judge's latest run that judged the clip
    (highest run id: the order of the store, not of anyone's clock) is what the judge says now; in
    it, the last judgment of each category stands (a retry inside the run replaces its first
    attempt). A standing judgment may be a failed one: then the judge has no rating for that
    category now, and an earlier run's answer does not stand in for it (earlier runs are the
    test-retest material of the agreement study).
    """
    rows = list(rows)

    def slot(run_name_alm_clip: tuple[str, int | None, int]) -> tuple[Any, ...]:
        name, alm_run_id, clip_id = run_name_alm_clip
        return (name, alm_run_id, clip_id) if per_alm else (name, clip_id)

    latest_run: dict[tuple[Any, ...], int] = {}
    for _id, run_id, name, alm_run_id, clip_id, _category in rows:
        key = slot((name, alm_run_id, clip_id))
        latest_run[key] = max(latest_run.get(key, -1), run_id)
    last: dict[tuple[Any, ...], int] = {}
    for judgment_id, run_id, name, alm_run_id, clip_id, category in rows:
        key = slot((name, alm_run_id, clip_id))
        if run_id == latest_run[key]:
            last[(*key, category)] = max(last.get((*key, category), -1), judgment_id)
    standing = set(last.values())
    return {
        judgment_id: STANDING if judgment_id in standing
        else SUPERSEDED if run_id == latest_run[slot((name, alm_run_id, clip_id))] else EARLIER_RUN
        for judgment_id, run_id, name, alm_run_id, clip_id, _category in rows
    }


def latest_judgments(
    session: Session | Connection, clip_ids: Sequence[int] | None, *, per_alm: bool = False
) -> list[tuple[Row, str, int | None]]:
    """The standing judgments (:func:`judgment_standing`) with their judge name and ALM run
    (``per_alm``: per clip and ALM, as the review's ALM choice and ``judgments show`` need).

    Each judgment is a row of the ``judgment`` table (its fields by name), read on a Session or
    a Core connection alike."""
    judgment, run = T.judgment, T.judge_run.c
    query = select(judgment, run.judge_name, run.alm_run_id).join(T.judge_run, judgment.c.judge_run_id == run.id)
    if clip_ids is not None:
        query = query.where(judgment.c.clip_id.in_(list(clip_ids)))
    rows = session.execute(query).all()
    standing = judgment_standing(
        ((j.id, j.judge_run_id, j.judge_name, j.alm_run_id, j.clip_id, j.category_id) for j in rows), per_alm=per_alm
    )
    return [(j, j.judge_name, j.alm_run_id) for j in rows if standing[j.id] == STANDING]


# --------------------------------------------------------------------------- read-back commands


def _clip_summary(clip: Row, audio: AudioStatus) -> dict[str, Any]:
    return {
        "key": clip.key, "title": clip.title, "city": clip.city, "country": clip.country,
        "audio_path": str(audio.path) if audio.ok else None,
        "audio": audio.state,
        "last_known_audio_path": str(audio.path) if audio.state == "missing" and audio.path else None,
    }


def list_clips(
    store: Store,
    *,
    search: str | None = None,
    has_audio: bool | None = None,
    has_prediction: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Clips by key with title, city, country and audio (``aglw clips list``).

    ``search`` matches key, title or city (case-insensitive substring); ``has_audio`` keeps
    clips whose recording is (True) or is not (False) usable by the one rule of
    :mod:`workbench.media`; ``has_prediction`` keeps clips the named ALM answered.
    """
    roots = dataset_roots(store)
    clip, alm_run = T.clip.c, T.alm_run.c
    with store.read() as connection:
        query = select(T.clip).order_by(clip.key, clip.id)
        if search:
            pattern = f"%{search.lower()}%"
            query = query.where(
                or_(
                    func.lower(clip.key).like(pattern),
                    func.lower(func.coalesce(clip.title, "")).like(pattern),
                    func.lower(func.coalesce(clip.city, "")).like(pattern),
                )
            )
        if has_prediction is not None:
            run_id = connection.execute(select(alm_run.id).where(alm_run.model == has_prediction)).scalar()
            if run_id is None:
                known = ", ".join(connection.execute(select(alm_run.model).order_by(alm_run.model)).scalars()) \
                    or "none imported"
                raise InputError(f"no ALM named {has_prediction!r} in this project (ALMs: {known})")
            answered = select(T.prediction.c.clip_id).where(T.prediction.c.alm_run_id == run_id)
            query = query.where(clip.id.in_(answered))
        if limit is not None and has_audio is None:
            query = query.limit(limit)
        clips = connection.execute(query).all()
    out: list[dict[str, Any]] = []
    for row in clips:
        audio = clip_audio(row.key, row.audio_path, roots.get(row.dataset_id, []))
        if has_audio is not None and audio.ok != has_audio:
            continue
        out.append(_clip_summary(row, audio))
        if limit is not None and len(out) >= limit:
            break
    return out


def clip_record(store: Store, key: str) -> dict[str, Any]:
    """Everything stored about one clip, with names beside ids (``aglw clips show``)."""
    clip_id = clip_id_for_key(store, key)
    names = category_names(store)
    prediction, alm_run = T.prediction, T.alm_run
    with store.read() as connection:
        clip = connection.execute(select(T.clip).where(T.clip.c.id == clip_id)).one()
        dataset = connection.execute(select(T.dataset.c.name).where(T.dataset.c.id == clip.dataset_id)).scalar()
        quality = connection.execute(select(T.clip_quality).where(T.clip_quality.c.clip_id == clip_id)).first()
        from workbench.audio.flags import quality_flags_now

        flags_now = quality_flags_now(connection, clip_ids=[clip_id])  # the one answer (issue 40), with its pool
        tagger = current_tagger_row(connection)
        tags = []
        if tagger is not None:
            tag = T.tag.c
            tags = [
                {"id": audioset_id, "name": names.get(audioset_id), "probability": probability}
                for audioset_id, probability in connection.execute(
                    select(tag.audioset_id, tag.probability).where(tag.tagger_run_id == tagger.id, tag.clip_id == clip_id)
                    .order_by(tag.probability.desc())
                )
            ]
        predictions = [
            {
                "model": p.model, "predicted_city": p.predicted_city, "predicted_country": p.predicted_country,
                "predicted_continent": p.predicted_continent, "predicted_latitude": p.predicted_latitude,
                "predicted_longitude": p.predicted_longitude, "reasoning": p.reasoning,
                # measured from this clip's position by the one rule (workbench.metrics.distance)
                **_answer_fields(stored_answer(p, clip)),
            }
            for p in connection.execute(
                select(prediction, alm_run.c.model).join(alm_run, prediction.c.alm_run_id == alm_run.c.id)
                .where(prediction.c.clip_id == clip_id).order_by(alm_run.c.model)
            )
        ]
        annotators = dict(connection.execute(select(T.annotator.c.id, T.annotator.c.name)).all())
        clip_labels = [
            {"annotator": annotators.get(l.annotator_id), "rating": l.rating, "decision": l.decision,
             "note": l.note, "version": l.version}
            for l in connection.execute(select(T.clip_label).where(T.clip_label.c.clip_id == clip_id))
        ]
        category_labels = [
            {"annotator": annotators.get(l.annotator_id), "category_id": l.category_id,
             "category": names.get(l.category_id), "contribution": l.contribution, "effect": l.effect,
             "polarity": l.polarity, "version": l.version}
            for l in connection.execute(select(T.category_label).where(T.category_label.c.clip_id == clip_id))
        ]
    audio = clip_audio(clip.key, clip.audio_path, dataset_roots(store).get(clip.dataset_id, []))
    metadata = {
        name: getattr(clip, name)
        for name in ("key", "title", "description", "city", "country", "continent", "latitude", "longitude",
                     "altitude", "mp3name", "mp3seconds", "licence", "recordist", "url", "recorded_at", "extra")
    }
    metadata["derived"] = list(clip.derived or [])  # fields the importer derived (datasets.md)
    return {
        **metadata,
        "dataset": dataset,
        "audio": {
            "state": audio.state, "path": str(audio.path) if audio.path else None, "stored": audio.stored,
            "message": audio.message, "sample_rate": clip.sample_rate, "n_channels": clip.n_channels,
            "duration_s": clip.duration_s, "layout": clip.layout_override or clip.layout,
        },
        "quality": None if quality is None else {
            "rms_dbfs": quality.rms_dbfs, "spectral_flatness": quality.spectral_flatness,
            "clipping_ratio": quality.clipping_ratio, "aci": quality.aci,
        },
        # each {flag, metric, value, threshold} and, for the pool-relative one, pool
        "quality_flags": flags_now.of(clip_id),
        # the pool low_complexity is relative to; why_not says why it was not raised
        "quality_pool": None if quality is None else flags_now.pool,
        "tagger": None if tagger is None else {"run_id": tagger.id, "model": tagger.model_name},
        "tags": tags,
        "predictions": predictions,
        "judgments": judgment_records(store, clip_key=key, names=names),
        "clip_labels": clip_labels,
        "category_labels": category_labels,
    }


def judgment_records(
    store: Store, *, clip_key: str | None = None, judge: str | None = None, alm: str | None = None,
    names: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The latest judgment of each judge per clip and ALM, with clip keys and category names
    (``names``: already read by the caller; reading them parses the ontology)."""
    clip_ids = [clip_id_for_key(store, clip_key)] if clip_key else None
    names = category_names(store) if names is None else names
    with store.read() as connection:
        judges = set(connection.execute(select(T.judge_run.c.judge_name)).scalars())
        if judge is not None and judge not in judges:
            raise InputError(f"no judge named {judge!r} in this project (judges: {', '.join(sorted(judges)) or 'none yet'})")
        models = dict(connection.execute(select(T.alm_run.c.id, T.alm_run.c.model)).all())
        if alm is not None and alm not in models.values():
            raise InputError(f"no ALM named {alm!r} in this project (ALMs: {', '.join(sorted(models.values())) or 'none'})")
        rows = latest_judgments(connection, clip_ids, per_alm=True)
        keys = clip_keys_on(connection, {j.clip_id for j, _, _ in rows})
    out = []
    for j, name, alm_run_id in rows:
        model = models.get(alm_run_id) if alm_run_id is not None else None
        if (judge is not None and name != judge) or (alm is not None and model != alm):
            continue
        out.append({
            "clip": keys.get(j.clip_id), "judge": name, "alm": model, "category_id": j.category_id,
            "category": names.get(j.category_id), "contribution": j.contribution, "effect": j.effect,
            "mentioned": j.mentioned, "evidence": j.evidence, "status": j.status,
            "failure_reason": j.failure_reason, "judge_run_id": j.judge_run_id,
        })
    out.sort(key=lambda r: (r["clip"] or "", r["alm"] or "", r["judge"], r["category_id"]))
    return out


# --------------------------------------------------------------------------- category ids

_CATEGORY_ID = re.compile(r"/[a-z]/[0-9a-z_]+")


def known_categories(store: Store) -> dict[str, str | None]:
    """Every category id this project can mean: the AudioSet ontology's (when configured or
    cached) and those its tags, judgments and labels use; id → name (None when unnamed)."""
    names = category_names(store)
    known: dict[str, str | None] = dict(names)
    with store.read() as connection:
        for column in (T.tag.c.audioset_id, T.judgment.c.category_id, T.category_label.c.category_id):
            for category_id in connection.execute(select(column).distinct()).scalars():
                known.setdefault(category_id, None)
    return known


def check_category_id(store: Store, category_id: str, option: str = "--category") -> str:
    """``category_id`` stripped, or an InputError naming close valid ids (or names) to use.

    An id the ontology or the project knows is accepted. In a new project without tags and
    without an ontology nothing is known yet: a well-formed AudioSet id (``/m/09x0r``) is
    accepted there, so labelling can start before tagging.
    """
    value = (category_id or "").strip()
    known = known_categories(store)
    if value in known:
        return value
    by_name = {name.lower(): cid for cid, name in known.items() if name}
    if value.lower() in by_name:
        cid = by_name[value.lower()]
        raise InputError(f"{option} {value!r} is a category name; pass its id: {option} {cid}")
    if not known and _CATEGORY_ID.fullmatch(value):
        return value
    if not _CATEGORY_ID.fullmatch(value):
        problem = "is not an AudioSet id (ids look like /m/09x0r)"
    else:
        problem = "is neither in the AudioSet ontology nor used by this project"
    close = difflib.get_close_matches(value, list(known), n=3, cutoff=0.6)
    close += [by_name[n] for n in difflib.get_close_matches(value.lower(), list(by_name), n=3, cutoff=0.6)]
    hint = ", ".join(f"{cid} ({known[cid]})" if known[cid] else cid for cid in dict.fromkeys(close))
    if hint:
        hint = f"; did you mean {hint}?"
    elif known:
        hint = "; `aglw clips show KEY` or `aglw judgments show` list the ids in use"
    else:
        hint = ""
    if not any(known.values()):
        hint += " (set AGLW_ONTOLOGY to the AudioSet ontology.json to accept any AudioSet id)"
    raise InputError(f"{option} {value!r} {problem}{hint}")


def last_judge_failure(store: Store, judge: str, clip_key: str) -> str | None:
    """The reason of the latest failed call of ``judge`` on the clip ``clip_key`` (None if none)."""
    call, run, clip = T.judge_call.c, T.judge_run.c, T.clip.c
    with store.read() as connection:
        return connection.execute(
            select(call.failure_reason)
            .join(T.judge_run, run.id == call.judge_run_id)
            .join(T.clip, clip.id == call.clip_id)
            .where(run.judge_name == judge, clip.key == clip_key, call.status == "failed")
            .order_by(call.id.desc())
            .limit(1)
        ).scalar()


def _answer_fields(score: Any) -> dict[str, Any]:
    return {"error_km": score.distance_km, "refused": score.refused}
