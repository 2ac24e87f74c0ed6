"""Web studies, the participant's side: enter, consent, headphone check, guess, finish (design/web-study.md).

The server (``web/``) calls these and nothing else about the study; every function takes the
participant's id from her signed cookie and returns plain values. What a participant may see is
decided here, not in the templates: :class:`Item` carries an opaque ``item_id`` and nothing that
tells the place; :func:`reveal` answers only in game mode and only once her guess is stored;
:func:`summary` only her own errors, once she has finished. A guess belongs to one assignment
(unique in the store), so a double submit stores one guess and answers "already stored".
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from storage import Store
from storage import tables as T
from workbench.errors import InputError
from workbench.studies.web_study import HEADPHONE_PASS, HEADPHONE_TRIALS, StudyConfig, new_pseudonym

MAX_CLUE_CHARS = 500


class NotAllowed(InputError):
    """A request the participant's state does not allow (the page answers 409 with this sentence)."""


def panel_hash(study: StudyConfig, panel_id: str) -> str:
    """The panel's participant id as stored: salted with the study's secret, never in clear."""
    return hmac.new(study.secret.encode(), b"panel:" + panel_id.encode(), hashlib.sha256).hexdigest()


def _now() -> datetime:
    from storage.models._base import utcnow

    return utcnow()


def enter_by_invite(store: Store, study: StudyConfig, nonce: str) -> int:
    """The participant of an invitation (its nonce, from a verified link); marks her started.

    Entering again (a reload, a second tab) returns the same participant.
    """
    p = T.web_participant.c
    with store.write() as s:
        row = s.execute(select(p.id, p.started_at).where(p.study_id == study.id, p.invite_nonce == nonce)).first()
        if row is None:
            raise NotAllowed("this invitation is not known to the study")
        if row.started_at is None:
            s.execute(update(T.web_participant).where(p.id == row.id).values(started_at=_now()))
    return int(row.id)


def enter_by_panel(store: Store, study: StudyConfig, panel_id: str) -> int:
    """The participant behind a panel id (Prolific's ``PROLIFIC_PID``), created on first entry."""
    from storage.models import WebParticipant

    panel_id = (panel_id or "").strip()
    if not panel_id or len(panel_id) > 128 or not panel_id.isprintable():
        raise InputError("the link carries no valid participant id (PROLIFIC_PID)")
    hashed = panel_hash(study, panel_id)
    p = T.web_participant.c
    for _ in range(3):
        try:
            with store.write() as s:
                row = s.execute(select(p.id).where(p.study_id == study.id, p.panel_hash == hashed)).first()
                if row is not None:
                    return int(row.id)
                taken = {x for (x,) in s.execute(select(p.pseudonym).where(p.study_id == study.id))}
                participant = WebParticipant(study_id=study.id, pseudonym=new_pseudonym(taken), panel_hash=hashed,
                                             started_at=_now(), order_seed=secrets.randbelow(2**31))
                s.add(participant)
                s.flush()
                return int(participant.id)  # type: ignore[arg-type]
        except IntegrityError:
            continue  # two first entries at once: the other one's row is read on the next try
    raise InputError("could not register this participant; reload the page")


@dataclass(frozen=True)
class Item:
    """One assigned clip as the page may know it: an opaque id, its place in her order, nothing else."""

    item_id: str
    position: int  # 1-based among the scored items (0 for the practice clip)
    total: int  # scored items (attention clips count: they look like any other)
    kind: str  # practice | item (attention clips are shown as items)
    answered: bool


@dataclass(frozen=True)
class State:
    """Where a participant is: ``consent``, ``questionnaire``, ``headphones``, ``screened_out``, ``items``
    or ``done``."""

    stage: str
    pseudonym: str
    item: Item | None = None
    done: int = 0
    total: int = 0


def _participant(connection: Any, study: StudyConfig, participant_id: int) -> Any:
    p = T.web_participant.c
    row = connection.execute(select(T.web_participant).where(p.id == participant_id, p.study_id == study.id)).first()
    if row is None:
        raise NotAllowed("this session does not belong to the study")
    return row


def _assignments(connection: Any, participant_id: int) -> list[Any]:
    a, g = T.web_assignment.c, T.web_guess.c
    return connection.execute(
        select(a.id, a.item_id, a.position, a.kind, a.clip_id, g.id.label("guess_id"))
        .outerjoin(T.web_guess, g.assignment_id == a.id)
        .where(a.participant_id == participant_id).order_by(a.position)).all()


def _item(rows: list[Any], row: Any) -> Item:
    scored = [r for r in rows if r.kind != "practice"]
    position = 0 if row.kind == "practice" else 1 + [r.id for r in scored].index(row.id)
    return Item(item_id=row.item_id, position=position, total=len(scored),
                kind="practice" if row.kind == "practice" else "item", answered=row.guess_id is not None)


def state(store: Store, study: StudyConfig, participant_id: int) -> State:
    """The participant's stage and, in the items stage, the next item to answer."""
    with store.read() as connection:
        row = _participant(connection, study, participant_id)
        rows = _assignments(connection, participant_id)
    scored = [r for r in rows if r.kind != "practice"]
    done = sum(1 for r in scored if r.guess_id is not None)
    if row.consented_at is None:
        return State("consent", row.pseudonym)
    if row.screened_out_at is not None:
        return State("screened_out", row.pseudonym)
    if study.questionnaire and row.answers is None:
        return State("questionnaire", row.pseudonym)
    if study.headphone_check != "off" and row.headphone_correct is None:
        return State("headphones", row.pseudonym)
    pending = next((r for r in rows if r.guess_id is None), None)
    if pending is None:
        return State("done", row.pseudonym, done=done, total=len(scored))
    return State("items", row.pseudonym, item=_item(rows, pending), done=done, total=len(scored))


def _deal(connection: Any, study: StudyConfig, rng: np.random.Generator) -> list[int]:
    """The clips for one participant: least-assigned first, balanced over the continent × speech strata."""
    c, a, p = T.web_study_clip.c, T.web_assignment.c, T.web_participant.c
    clips = connection.execute(select(c.clip_id, c.stratum).where(c.study_id == study.id, c.role == "item")).all()
    counts = dict(connection.execute(
        select(a.clip_id, func.count()).join(T.web_participant, p.id == a.participant_id)
        # a participant ended by the headphone screen will guess nothing: her deal does not count
        .where(p.study_id == study.id, a.kind == "item", p.screened_out_at.is_(None)).group_by(a.clip_id)).all())
    pool = [(int(counts.get(cid, 0)), float(rng.random()), int(cid), str(stratum)) for cid, stratum in clips]
    pool.sort()
    chosen: list[int] = []
    per_stratum: dict[str, int] = {}
    while pool and len(chosen) < study.per_participant:
        least = pool[0][0]
        tied = [entry for entry in pool if entry[0] == least]
        # among the least-assigned clips, one of the stratum this participant has seen least
        pick = min(tied, key=lambda e: (per_stratum.get(e[3], 0), e[1]))
        pool.remove(pick)
        chosen.append(pick[2])
        per_stratum[pick[3]] = per_stratum.get(pick[3], 0) + 1
    return chosen


def consent(store: Store, study: StudyConfig, participant_id: int, device: dict[str, str] | None = None) -> State:
    """Record consent (and her device class) and deal her clips (practice first, attention clips among the
    items, her own order).

    Idempotent: consenting again keeps the first consent, device and assignment.
    """
    from storage.models import WebAssignment

    c = T.web_study_clip.c
    with store.write() as s:
        row = _participant(s, study, participant_id)
        if row.consented_at is None:
            rng = np.random.default_rng([study.seed, int(row.order_seed)])
            items = _deal(s, study, rng)
            attention = [int(x) for (x,) in s.execute(select(c.clip_id).where(c.study_id == study.id,
                                                                              c.role == "attention"))]
            order: list[tuple[int, str]] = [(cid, "item") for cid in items]
            order = [order[i] for i in rng.permutation(len(order))]
            for cid in attention:
                order.insert(int(rng.integers(0, len(order) + 1)), (cid, "attention"))
            if study.practice_clip_id is not None:
                order.insert(0, (int(study.practice_clip_id), "practice"))
            for position, (cid, kind) in enumerate(order):
                s.add(WebAssignment(participant_id=participant_id, clip_id=cid, position=position, kind=kind,
                                    item_id=secrets.token_urlsafe(12)))
            s.execute(update(T.web_participant).where(T.web_participant.c.id == participant_id)
                      .values(consented_at=_now(), device=device))
    return state(store, study, participant_id)


def record_answers(store: Store, study: StudyConfig, participant_id: int, form: dict[str, list[str]]) -> State:
    """Check her questionnaire answers against the study's questions and store them, once."""
    from workbench.studies.questionnaire import check_answers

    if not study.questionnaire:
        raise NotAllowed("this study has no questionnaire")
    answers = check_answers(study.questionnaire, form)
    p = T.web_participant.c
    with store.write() as s:
        row = _participant(s, study, participant_id)
        if row.consented_at is None:
            raise NotAllowed("consent comes first")
        if row.answers is None:
            s.execute(update(T.web_participant).where(p.id == participant_id).values(answers=answers))
    return state(store, study, participant_id)


def headphone_trials(study: StudyConfig, participant_id: int) -> list[int]:
    """The answer of each of her six trials: which of the three tones (1-3) is the quietest.

    Derived from the study's secret, so the server needs no state and the page cannot know it.
    The antiphase tone is the one after the quiet one (cyclically); see
    :func:`workbench.audio.headphone_check.trial_wav`.
    """
    out = []
    for trial in range(HEADPHONE_TRIALS):
        digest = hmac.new(study.secret.encode(), f"hp:{participant_id}:{trial}".encode(), hashlib.sha256).digest()
        out.append(1 + digest[0] % 3)
    return out


def record_headphones(store: Store, study: StudyConfig, participant_id: int, answers: list[int]) -> State:
    """Score her six answers (each 1-3); ``screen`` ends the session politely below the pass mark.

    Only the first complete set of answers counts (a reload cannot retake the check).
    """
    if study.headphone_check == "off":
        raise NotAllowed("this study has no headphone check")
    if len(answers) != HEADPHONE_TRIALS or any(a not in (1, 2, 3) for a in answers):
        raise InputError(f"give {HEADPHONE_TRIALS} answers, each 1, 2 or 3")
    truth = headphone_trials(study, participant_id)
    correct = sum(int(a == t) for a, t in zip(answers, truth))
    passed = correct >= HEADPHONE_PASS
    p = T.web_participant.c
    with store.write() as s:
        row = _participant(s, study, participant_id)
        if row.consented_at is None:
            raise NotAllowed("consent comes first")
        if study.questionnaire and row.answers is None:
            raise NotAllowed("the questionnaire comes first")
        if row.headphone_correct is None:
            values: dict[str, Any] = {"headphone_correct": correct, "headphone_passed": passed}
            if not passed and study.headphone_check == "screen":
                values["screened_out_at"] = _now()
            s.execute(update(T.web_participant).where(p.id == participant_id).values(**values))
    return state(store, study, participant_id)


def item_clip(store: Store, study: StudyConfig, participant_id: int, item_id: str) -> int:
    """The clip behind one of her item ids (for the audio route: never sent to the page)."""
    a = T.web_assignment.c
    with store.read() as connection:
        _participant(connection, study, participant_id)
        row = connection.execute(select(a.clip_id).where(a.participant_id == participant_id,
                                                         a.item_id == item_id)).first()
    if row is None:
        raise NotAllowed("no such item in this session")
    return int(row.clip_id)


@dataclass(frozen=True)
class Answer:
    """A submitted answer, checked: a position, or a refusal (*I can't tell*)."""

    latitude: float | None
    longitude: float | None
    refused: bool
    confidence: float | None
    clue: str | None
    listen_s: float | None
    answer_s: float | None
    n_plays: int | None
    listening: dict[str, Any] | None = None  # the page's last listening record (merged like a post)
    recognised: dict[str, Any] | None = None  # "I recognise this place / language" (studies with --recognise)


def check_answer(values: dict[str, Any]) -> Answer:
    """The submitted fields as they would be stored, or a one-sentence :class:`InputError`."""
    from workbench.strict_numbers import check_float

    def number(name: str, low: float, high: float, *, required: bool = False) -> float | None:
        value = values.get(name)
        if value is None or value == "":
            if required:
                raise InputError(f"{name} is missing")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise InputError(f"{name} must be a number")
        if isinstance(value, str):
            try:
                value = float(value) if value.strip().isascii() else math.nan
            except ValueError:
                raise InputError(f"{name} must be a number") from None
        return check_float(float(value), "answer", name, minimum=low, maximum=high)

    refused = values.get("refused") in (True, "true", "1", 1)
    latitude = None if refused else number("latitude", -90.0, 90.0, required=True)
    longitude = None if refused else number("longitude", -180.0, 180.0, required=True)
    confidence = number("confidence", 0.0, 1.0)
    clue = values.get("clue")
    if clue is not None:
        if not isinstance(clue, str):
            raise InputError("clue must be text")
        clue = clue.strip() or None
        if clue is not None and len(clue) > MAX_CLUE_CHARS:
            raise InputError(f"the clue has {len(clue)} characters; keep it under {MAX_CLUE_CHARS}")
        if clue is not None and any(ord(ch) < 32 and ch not in "\n\t" for ch in clue):
            raise InputError("the clue contains control characters")
    listen_s = number("listen_s", 0.0, 86_400.0)
    answer_s = number("answer_s", 0.0, 86_400.0)
    plays = number("n_plays", 0, 10_000)
    from workbench.studies.listening import check_record
    from workbench.studies.questionnaire import check_recognised

    listening = None if values.get("listening") is None else check_record(values["listening"])
    recognised = None if values.get("recognised") is None else check_recognised(values["recognised"])
    return Answer(latitude, longitude, refused, confidence, clue, listen_s, answer_s,
                  None if plays is None else int(plays), listening, recognised)


@dataclass(frozen=True)
class Stored:
    """What a submit did: ``created`` False when the item already had a stored answer (a double submit)."""

    created: bool
    state: State


def submit(store: Store, study: StudyConfig, participant_id: int, item_id: str, answer: Answer, *,
           duration_s: float | None = None) -> Stored:
    """Store her answer to one item, once; the answer is on disk when this returns.

    Listening (``heard_s``, ``n_seeks``, ``n_plays``, ``listen_s``) and the time to answer come from
    the server's record (:mod:`workbench.studies.listening`, ``shown_at``); the page's own submit
    fields only when the server has no record, bounded by the server time. With a must-hear
    minimum (``duration_s`` the served recording's length) an earlier answer is refused.
    """
    from storage.models import WebGuess
    from workbench.studies import listening

    a, p = T.web_assignment.c, T.web_participant.c
    if answer.listening is not None:
        # the page's last record is kept like any post, even when the answer below is refused
        listening.record(store, study, participant_id, item_id, answer.listening, duration_s=duration_s)
    created = False
    try:
        with store.write() as s:
            row = _participant(s, study, participant_id)
            if row.consented_at is None:
                raise NotAllowed("consent comes first")
            if row.screened_out_at is not None:
                raise NotAllowed("this session has ended")
            if study.questionnaire and row.answers is None:
                raise NotAllowed("the questionnaire comes first")
            if study.headphone_check != "off" and row.headphone_correct is None:
                raise NotAllowed("the headphone check comes first")
            item = s.execute(select(a.id, a.clip_id, a.shown_at, a.listening)
                             .where(a.participant_id == participant_id, a.item_id == item_id)).first()
            if item is None:
                raise NotAllowed("no such item in this session")
            exists = s.execute(select(T.web_guess.c.id).where(T.web_guess.c.assignment_id == item.id)).first()
            if exists is None:
                kept = listening.for_guess(item.listening, item.shown_at, _now(), duration_s=duration_s,
                                           options=study.options, page_listen_s=answer.listen_s,
                                           page_plays=answer.n_plays)
                if kept.missing_s is not None:
                    raise NotAllowed(f"listen to at least {kept.missing_s:.0f} seconds of the recording before "
                                     "you answer")
                answer_s = kept.answer_s if kept.answer_s is not None else answer.answer_s
                recognised = answer.recognised if study.options.get("recognise") else None
                s.add(WebGuess(assignment_id=item.id, participant_id=participant_id, clip_id=item.clip_id,
                               latitude=answer.latitude, longitude=answer.longitude, refused=answer.refused,
                               confidence=answer.confidence, clue=answer.clue, answer_s=answer_s,
                               recognised=recognised, **kept.values))
                s.flush()
                created = True
                remaining = s.execute(
                    select(func.count()).select_from(T.web_assignment)
                    .outerjoin(T.web_guess, T.web_guess.c.assignment_id == a.id)
                    .where(a.participant_id == participant_id, T.web_guess.c.id.is_(None))).scalar_one()
                if remaining == 0:
                    s.execute(update(T.web_participant).where(p.id == participant_id).values(finished_at=_now()))
    except IntegrityError:
        created = False  # a second submit raced the first: the unique assignment kept one guess
    return Stored(created, state(store, study, participant_id))


@dataclass(frozen=True)
class Reveal:
    """Game mode, after her guess is stored: the truth, her error and every model's answer on the clip."""

    latitude: float | None
    longitude: float | None
    place: str  # "city, country" as the dataset names it
    error_km: float | None  # None for a refusal
    refused: bool
    guess: tuple[float, float] | None  # her stored guess (None for "I can't tell"): the line to the place
    models: list[dict[str, Any]] = field(default_factory=list)  # {model, latitude, longitude, error_km, refused}
    score: dict[str, Any] = field(default_factory=dict)  # running: {n, mean_error_km, beats: {model: [wins, n]}}


def reveal(store: Store, study: StudyConfig, participant_id: int, item_id: str) -> Reveal:
    """What game mode shows after a stored guess; refused in study mode and before the guess."""
    from workbench.metrics.distance import answer_distance_km

    if study.mode != "game":
        raise NotAllowed("this study reveals nothing")
    a, g, c = T.web_assignment.c, T.web_guess.c, T.clip.c
    with store.read() as connection:
        _participant(connection, study, participant_id)
        row = connection.execute(
            select(a.clip_id, g.latitude, g.longitude, g.refused, c.latitude.label("true_lat"),
                   c.longitude.label("true_lon"), c.city, c.country)
            .join(T.web_guess, g.assignment_id == a.id).join(T.clip, c.id == a.clip_id)
            .where(a.participant_id == participant_id, a.item_id == item_id)).first()
        if row is None:
            raise NotAllowed("nothing to reveal before your guess is stored")
        models = _model_answers(connection, [int(row.clip_id)])
        mine = connection.execute(
            select(a.clip_id, g.latitude, g.longitude, g.refused, c.latitude, c.longitude)
            .join(T.web_guess, g.assignment_id == a.id).join(T.clip, c.id == a.clip_id)
            .where(a.participant_id == participant_id, a.kind != "practice")).all()
        everyone = _model_answers(connection, [int(m.clip_id) for m in mine])
    error = None if row.refused else answer_distance_km(row.latitude, row.longitude, row.true_lat, row.true_lon)
    place = ", ".join(str(v) for v in (row.city, row.country) if v) or "unnamed place"
    # running score: her mean error and, per model, on how many of her clips she was closer
    my_errors = {int(m.clip_id): (10_000.0 if m.refused else answer_distance_km(m[1], m[2], m[4], m[5])) for m in mine}
    beats: dict[str, list[int]] = {}
    for answer in everyone:
        mine_km = my_errors.get(answer["clip_id"])
        if mine_km is None or answer["error_km"] is None:
            continue
        tally = beats.setdefault(answer["model"], [0, 0])
        tally[0] += int(mine_km < answer["error_km"])
        tally[1] += 1
    defined = [e for e in my_errors.values() if e is not None]
    score = {"n": len(defined), "mean_error_km": float(np.mean(defined)) if defined else None,
             "beats": {m: {"wins": w, "n": n} for m, (w, n) in sorted(beats.items())}}
    guess = None if row.refused else (float(row.latitude), float(row.longitude))
    return Reveal(row.true_lat, row.true_lon, place, error, bool(row.refused), guess,
                  [m for m in models if m["clip_id"] == int(row.clip_id)], score)


def _model_answers(connection: Any, clip_ids: list[int]) -> list[dict[str, Any]]:
    """Every stored model answer on these clips, with its distance error (the one stored rule)."""
    from workbench.metrics.distance import parse_coordinate

    pr, run = T.prediction.c, T.alm_run.c
    if not clip_ids:
        return []
    rows = connection.execute(
        select(pr.clip_id, run.model, pr.predicted_latitude, pr.predicted_longitude, pr.distance_error_km,
               pr.refused)
        .join(T.alm_run, run.id == pr.alm_run_id).where(pr.clip_id.in_(clip_ids))).all()
    out = []
    for r in rows:
        refused = bool(r.refused)
        out.append({"clip_id": int(r.clip_id), "model": r.model, "refused": refused,
                    "latitude": None if refused else parse_coordinate(r.predicted_latitude),
                    "longitude": None if refused else parse_coordinate(r.predicted_longitude),
                    "error_km": None if r.distance_error_km is None else float(r.distance_error_km)})
    return sorted(out, key=lambda m: (m["clip_id"], m["model"]))


def summary(store: Store, study: StudyConfig, participant_id: int) -> dict[str, Any]:
    """Her own result once she has finished: mean error and share within 1,000 km (never a clip's place)."""
    from workbench.metrics.distance import answer_distance_km

    a, g, c = T.web_assignment.c, T.web_guess.c, T.clip.c
    with store.read() as connection:
        row = _participant(connection, study, participant_id)
        if row.finished_at is None:
            raise NotAllowed("your summary is shown when you have finished")
        guesses = connection.execute(
            select(g.latitude, g.longitude, g.refused, c.latitude, c.longitude)
            .join(T.web_assignment, a.id == g.assignment_id).join(T.clip, c.id == g.clip_id)
            .where(g.participant_id == participant_id, a.kind == "item")).all()
    errors = [answer_distance_km(x[0], x[1], x[3], x[4]) for x in guesses if not x[2]]
    errors = [e for e in errors if e is not None]
    return {"n_guesses": len(guesses), "n_placed": len(errors),
            "mean_error_km": float(np.mean(errors)) if errors else None,
            "share_within_1000km": float(np.mean([e <= 1000.0 for e in errors])) if errors else None}
