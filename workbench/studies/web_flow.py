"""A web study's participant flow and its exclusions: the one owner (design/web-study.md).

Who entered, consented, passed the headphone check and finished, who is excluded and by which
of the study's rules, and who is analyzed. ``aglw study participants``, the study report's
CONSORT diagram and the leaderboard's crowd rows (``human (<study>)``) all ask
:func:`participant_flow` / :func:`analyzed_participants`, so a participant is counted the same
way everywhere.

The rules are the ones stored with the study before it started (``StudyConfig.rules``):

- ``headphones_failed``: in ``record`` mode, a failed headphone check excludes (in ``screen``
  mode a failure ends the session instead: *screened out*, a box of its own, never analyzed);
- ``max_attention_missed``: an attention clip is missed when its guess is *I can't tell* or
  farther than ``attention_radius_km`` from the clip; more misses than this exclude;
- ``min_median_listen_s``: the median listening time over her guesses (practice clip aside)
  below this floor excludes; a guess without a recorded listening time counts as 0 s (the page
  records it with every submit: none means nothing was measured to have played).

**Who is analyzed**: a participant who *finished* and is not excluded. A participant who left
half-way is not analyzed: the attention clips are spread among her items, so an unfinished
session may not have reached them, and the rules could not be judged on what she did.

Statuses, each participant has one: ``invited`` (an invitation, never opened), ``started``
(entered, no consent), ``consented`` (consented, headphone check still to do), ``screened out``,
``in progress`` (past consent and check, not finished), ``finished``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from storage import Store
from storage import tables as T
from workbench.studies.listening import totals
from workbench.studies.web_study import HEADPHONE_TRIALS, StudyConfig, load_study

STATUSES = ("invited", "started", "consented", "screened out", "in progress", "finished")
# The rules in the order the report lists them; each with the sentence a participant's reason uses.
RULES = ("headphones_failed", "max_attention_missed", "min_median_listen_s")
RULE_TITLES = {"headphones_failed": "failed the headphone check",
               "max_attention_missed": "missed attention checks",
               "min_median_listen_s": "median listening time below the floor"}
ANALYZED_RULE = "finished and not excluded"


@dataclass(frozen=True)
class Participant:
    """One participant as the flow sees her (pseudonym only: the panel id never leaves the store)."""

    id: int
    participant: str  # the pseudonym
    status: str
    n_guesses: int  # stored guesses on scored items (attention and practice clips aside)
    excluded: bool
    reason: str | None  # every rule that excludes her, as one sentence; None when not excluded
    rules: tuple[str, ...] = ()  # the rules that exclude her (keys of RULES)
    headphone_correct: int | None = None
    attention_missed: int = 0
    median_listen_s: float | None = None
    answers: dict[str, Any] | None = None  # her questionnaire answers (None: none given, or no questionnaire)
    device: dict[str, str] | None = None  # {class, browser, os} at consent (never the user agent itself)
    listening: dict[str, Any] = field(default_factory=dict)  # workbench.studies.listening.totals over her guesses

    @property
    def analyzed(self) -> bool:
        return self.status == "finished" and not self.excluded

    def to_dict(self) -> dict[str, Any]:
        """The row of ``aglw study participants --json``: its contract's keys, then who she is and how she
        listened (issue 45: ``answers``, ``device``, ``listening``)."""
        return {"participant": self.participant, "status": self.status, "n_guesses": self.n_guesses,
                "excluded": self.excluded, "reason": self.reason, "answers": self.answers, "device": self.device,
                "listening": self.listening}


@dataclass(frozen=True)
class Flow:
    """A study's participant flow: the counts of each stage and every participant."""

    study: StudyConfig
    participants: list[Participant]
    counts: dict[str, int]  # invited, started, consented, passed_headphones, finished, excluded, analyzed
    # beyond the contract, for the report's diagram
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``aglw study participants --json``: ``{study, mode, flow, participants}``."""
        return {"study": self.study.name, "mode": self.study.mode, "flow": dict(self.counts),
                "participants": [p.to_dict() for p in self.participants]}


def _status(row: Any, check: str) -> str:
    if row.finished_at is not None:
        return "finished"
    if row.screened_out_at is not None:
        return "screened out"
    if row.consented_at is not None:
        return "consented" if check != "off" and row.headphone_correct is None else "in progress"
    if row.started_at is not None:
        return "started"
    return "invited"


def _missed(guess: Any, radius_km: float) -> bool:
    """An attention clip is missed by a refusal or a guess farther than the radius (or unmeasurable)."""
    from workbench.metrics.distance import answer_distance_km

    if guess.refused or guess.latitude is None or guess.longitude is None:
        return True
    error = answer_distance_km(guess.latitude, guess.longitude, guess.clip_latitude, guess.clip_longitude)
    return error is None or error > radius_km


def _judge(study: StudyConfig, row: Any, guesses: list[Any]) -> tuple[tuple[str, ...], list[str], int, float | None]:
    """The rules that exclude this participant and why, her attention misses, her median listening time."""
    rules = study.rules
    hits: list[str] = []
    reasons: list[str] = []
    if study.headphone_check == "record" and rules.get("headphones_failed") and row.headphone_passed is False:
        hits.append("headphones_failed")
        reasons.append(f"failed the headphone check ({row.headphone_correct} of {HEADPHONE_TRIALS} right)")
    radius = float(rules.get("attention_radius_km", 1000.0))
    attention = [g for g in guesses if g.kind == "attention"]
    missed = sum(1 for g in attention if _missed(g, radius))
    allowed = int(rules.get("max_attention_missed", 0))
    if missed > allowed:
        hits.append("max_attention_missed")
        reasons.append(f"missed {missed} of {len(attention)} attention check(s) (allowed {allowed}; a miss is "
                       f"'I can't tell' or farther than {radius:,.0f} km)")
    listened = [float(g.listen_s or 0.0) for g in guesses if g.kind != "practice"]
    median = statistics.median(listened) if listened else None
    floor = float(rules.get("min_median_listen_s", 0.0))
    if floor > 0 and median is not None and median < floor:
        hits.append("min_median_listen_s")
        reasons.append(f"median listening time {median:.1f} s over {len(listened)} guess(es), below {floor:g} s")
    return tuple(hits), reasons, missed, median


def participant_flow(store: Store, study: str | StudyConfig) -> Flow:
    """The flow of a web study (by name or loaded): every participant's status and exclusion, and the counts."""
    config = load_study(store, study) if isinstance(study, str) else study
    p, a, g, c = T.web_participant.c, T.web_assignment.c, T.web_guess.c, T.clip.c
    with store.read() as connection:
        people = connection.execute(select(T.web_participant).where(p.study_id == config.id).order_by(p.id)).all()
        guesses = connection.execute(
            select(g.participant_id, a.kind, g.latitude, g.longitude, g.refused, g.listen_s, g.heard_s, g.n_plays,
                   g.n_seeks,
                   c.latitude.label("clip_latitude"), c.longitude.label("clip_longitude"))
            .join(T.web_assignment, a.id == g.assignment_id).join(T.clip, c.id == g.clip_id)
            .join(T.web_participant, p.id == g.participant_id).where(p.study_id == config.id)).all()
    by_participant: dict[int, list[Any]] = {}
    for guess in guesses:
        by_participant.setdefault(int(guess.participant_id), []).append(guess)
    participants = []
    for row in people:
        mine = by_participant.get(int(row.id), [])
        hits, reasons, missed, median = _judge(config, row, mine)
        status = _status(row, config.headphone_check)
        # a participant the screen ended is never analyzed and not "excluded": she has her own box
        excluded = bool(hits) and status != "screened out"
        participants.append(Participant(
            id=int(row.id), participant=row.pseudonym, status=status,
            n_guesses=sum(1 for x in mine if x.kind == "item"), excluded=excluded,
            reason="; ".join(reasons) if excluded else None, rules=hits if excluded else (),
            headphone_correct=row.headphone_correct, attention_missed=missed, median_listen_s=median,
            answers=row.answers, device=row.device,
            listening=totals([{"heard_s": x.heard_s, "n_plays": x.n_plays, "n_seeks": x.n_seeks}
                              for x in mine if x.kind != "practice"])))
    return Flow(config, participants, _counts(config, people, participants), _details(config, people, participants))


def _counts(study: StudyConfig, people: list[Any], participants: list[Participant]) -> dict[str, int]:
    consented = [r for r in people if r.consented_at is not None]
    if study.headphone_check == "off":
        passed = len(consented)  # no check: every consenting participant goes on
    else:
        passed = sum(1 for r in consented if r.headphone_passed)
    finished = [x for x in participants if x.status == "finished"]
    return {
        "invited": sum(1 for r in people if r.invite_nonce is not None),
        "started": sum(1 for r in people if r.started_at is not None),
        "consented": len(consented),
        "passed_headphones": passed,
        "finished": len(finished),
        "excluded": sum(1 for x in finished if x.excluded),
        "analyzed": sum(1 for x in finished if not x.excluded),
    }


def _details(study: StudyConfig, people: list[Any], participants: list[Participant]) -> dict[str, Any]:
    """The counts behind the CONSORT boxes beyond the contract's."""
    finished = [x for x in participants if x.status == "finished"]
    return {
        "open_link": sum(1 for r in people if r.invite_nonce is None),
        "not_started": sum(1 for x in participants if x.status == "invited"),
        "no_consent": sum(1 for x in participants if x.status == "started"),
        "failed_headphones": sum(1 for r in people if r.headphone_passed is False),
        "headphones_pending": sum(1 for x in participants if x.status == "consented"),
        "screened_out": sum(1 for x in participants if x.status == "screened out"),
        "in_progress": sum(1 for x in participants if x.status == "in progress"),
        # among the finished, by rule (one participant may meet several rules)
        "excluded_by": {rule: sum(1 for x in finished if rule in x.rules) for rule in RULES},
        "excluded_unfinished": sum(1 for x in participants if x.excluded and x.status != "finished"),
        "analyzed_rule": ANALYZED_RULE,
        "headphone_check": study.headphone_check,
    }


def analyzed_participants(store: Store, study: str | StudyConfig) -> dict[int, str]:
    """``{participant id: pseudonym}`` of the participants whose guesses are analyzed (finished, not excluded)."""
    return {x.id: x.participant for x in participant_flow(store, study).participants if x.analyzed}
