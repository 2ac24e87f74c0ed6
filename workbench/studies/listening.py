"""How she listened: the listening record of one item, kept by the server across reloads (issue 45).

The page posts what it measured (``/api/listening``, throttled, and once more with the submit):
the spans of the recording it played (in the recording's time, seconds), how often playing
started, how often she sought, and the seconds the audio was playing. The server merges each post
into ``web_assignment.listening`` (:func:`merge`) so that nothing ever decreases: spans are united
with the stored ones, counts and playing time take the larger value. So a lost post, a repeated
one, or a reload that restarts the page's counters from the stored record cannot undo what was
recorded. Every value is bounded by what the server knows: spans by the served recording's
duration + 1 s, heard seconds and playing time by the server time since the item was first shown
(at most :data:`MAX_RATE` × that, for a page played faster).

The guess stores ``heard_s`` (the union of the spans), ``n_seeks``, ``n_plays`` and ``listen_s``
from this record, never from the page's own submit fields unless the record is empty.

**Must hear** (a study option, like webMUSHRA's must-play): ``must_hear_s`` seconds, or
``must_hear_share`` of the recording; a clip shorter than the seconds asks for the whole clip.
The server refuses an earlier submit (409), *I can't tell* included: a refusal is an answer about
the recording, and needs the same listening.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select, update

from storage import Store
from storage import tables as T
from workbench.errors import InputError
from workbench.studies.web_study import StudyConfig

MAX_SPANS = 400  # per post, and stored after the union (far more than a person's seeks)
MAX_COUNT = 10_000
MAX_RATE = 2.0  # the fastest playback the browsers' own controls offer
SLACK_S = 1.0  # spans may end this far past the served duration (decoders round the last frame)
# the page measures spans from ``timeupdate`` (every 250 ms or so): the last quarter second may be missed
MUST_HEAR_TOLERANCE_S = 0.5


def empty() -> dict[str, Any]:
    return {"spans": [], "heard_s": 0.0, "plays": 0, "seeks": 0, "played_s": 0.0}


def _count(value: Any, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"the listening record's {name} must be a whole number")
    if not 0 <= value <= MAX_COUNT or value != int(value):
        raise InputError(f"the listening record's {name} must be a whole number from 0 to {MAX_COUNT:,}")
    return int(value)


def _union(spans: list[list[float]]) -> list[list[float]]:
    out: list[list[float]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1] + 1e-6:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def check_record(body: Any) -> dict[str, Any]:
    """A posted listening record, checked for shape: ``{spans, plays, seeks, played_s}``."""
    if not isinstance(body, dict):
        raise InputError("the listening record must be a JSON object")
    spans = body.get("spans") or []
    if not isinstance(spans, list) or len(spans) > MAX_SPANS:
        raise InputError(f"the listening record's spans must be a list of at most {MAX_SPANS} pairs")
    checked = []
    for span in spans:
        if (not isinstance(span, list) or len(span) != 2
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in span)
                or not 0 <= span[0] <= span[1]):
            raise InputError("each listening span must be a pair of seconds [start, end] with 0 <= start <= end")
        checked.append([float(span[0]), float(span[1])])
    played = body.get("played_s") or 0.0
    if isinstance(played, bool) or not isinstance(played, (int, float)) or not 0 <= played < 1e7:
        raise InputError("the listening record's played_s must be a number of seconds of 0 or more")
    return {"spans": checked, "plays": _count(body.get("plays"), "plays"), "seeks": _count(body.get("seeks"), "seeks"),
            "played_s": float(played)}


def merge(old: dict[str, Any] | None, new: dict[str, Any], *, duration_s: float | None,
          elapsed_s: float) -> dict[str, Any]:
    """The stored record after a checked post ``new``: nothing decreases, everything bounded.

    ``duration_s``: the served recording's length (None when unknown: spans are then bounded by
    time alone); ``elapsed_s``: server seconds since the item was first shown.
    """
    before = {**empty(), **(old or {})}
    limit = (duration_s + SLACK_S) if duration_s else None
    spans = [[s, min(e, limit) if limit else e] for s, e in new["spans"] if limit is None or s < limit]
    united = _union([*[list(x) for x in before["spans"]], *spans])
    if len(united) > MAX_SPANS:
        raise InputError("the listening record has too many separate spans")
    heard = sum(e - s for s, e in united)
    bound = MAX_RATE * max(elapsed_s, 0.0) + SLACK_S
    if heard > bound + 1e-6 and heard > before["heard_s"]:
        raise InputError("the listening record holds more than the time since the clip was shown")
    return {"spans": [[round(s, 3), round(e, 3)] for s, e in united], "heard_s": round(heard, 3),
            "plays": max(int(before["plays"]), new["plays"]), "seeks": max(int(before["seeks"]), new["seeks"]),
            "played_s": round(max(float(before["played_s"]), min(new["played_s"], max(elapsed_s, 0.0) + SLACK_S)), 3)}


def required_heard_s(options: dict[str, Any], duration_s: float | None) -> float:
    """Seconds she must have heard before her answer is taken (0: no minimum)."""
    seconds, share = options.get("must_hear_s"), options.get("must_hear_share")
    if not seconds and not share:
        return 0.0
    if duration_s is None:
        return float(seconds or 0.0)
    need = float(seconds) if seconds else float(share) * duration_s
    return max(0.0, min(need, duration_s) - MUST_HEAR_TOLERANCE_S)


@dataclass(frozen=True)
class ForGuess:
    """What a guess stores of the listening, and whether the must-hear minimum refuses it."""

    values: dict[str, Any]  # heard_s, n_seeks, n_plays, listen_s for the guess
    answer_s: float | None  # server seconds since the page was first served (None: never served)
    missing_s: float | None  # the must-hear seconds when not reached (the answer is refused), else None


def for_guess(record: dict[str, Any] | None, shown_at: datetime | None, now: datetime, *, duration_s: float | None,
              options: dict[str, Any], page_listen_s: float | None, page_plays: int | None) -> ForGuess:
    """What the guess stores of the server's record (the page's own numbers only when there is none,
    bounded by the server time) and the must-hear check."""
    elapsed = None if shown_at is None else _elapsed(shown_at, now)
    need = required_heard_s(options, duration_s)
    missing = need + MUST_HEAR_TOLERANCE_S if need > 0 and float((record or {}).get("heard_s") or 0.0) < need else None
    if record:
        values = {"heard_s": record["heard_s"], "n_seeks": record["seeks"], "n_plays": record["plays"],
                  "listen_s": record["played_s"]}
    else:
        cap = (elapsed if elapsed is not None else 86_400.0) + SLACK_S
        values = {"heard_s": None, "n_seeks": None, "n_plays": page_plays,
                  "listen_s": None if page_listen_s is None else min(page_listen_s, cap)}
    return ForGuess(values, elapsed, missing)


def _now() -> datetime:
    from storage.models._base import utcnow

    return utcnow()


def _elapsed(shown_at: datetime | None, now: datetime) -> float:
    return 0.0 if shown_at is None else max(0.0, (now - shown_at).total_seconds())


def _assignment(connection: Any, study: StudyConfig, participant_id: int, item_id: str) -> Any:
    # the participant's own item in this study (the server asks web_session.item_clip first: a 404 there)
    a, p = T.web_assignment.c, T.web_participant.c
    row = connection.execute(select(a.id, a.shown_at, a.listening).join(T.web_participant, p.id == a.participant_id)
                             .where(a.participant_id == participant_id, p.study_id == study.id,
                                    a.item_id == item_id)).first()
    if row is None:
        raise InputError("no such item in this session")
    return row


def mark_shown(store: Store, study: StudyConfig, participant_id: int, item_id: str) -> dict[str, Any]:
    """Set the item's ``shown_at`` the first time its page is served (server time); its record so far."""
    a = T.web_assignment.c
    with store.read() as connection:  # a reload writes nothing (the page is served on every reload)
        row = _assignment(connection, study, participant_id, item_id)
    if row.shown_at is None:
        with store.write() as s:
            s.execute(update(T.web_assignment).where(a.id == row.id, a.shown_at.is_(None)).values(shown_at=_now()))
    return {**empty(), **(row.listening or {})}


def record(store: Store, study: StudyConfig, participant_id: int, item_id: str, posted: dict[str, Any],
           *, duration_s: float | None) -> dict[str, Any]:
    """Merge a checked post into the item's stored record (one transaction); the record as stored."""
    a = T.web_assignment.c
    with store.write() as s:
        row = _assignment(s, study, participant_id, item_id)
        now = _now()
        if row.shown_at is None:
            # a post before the page was served: shown now, so nothing can be claimed heard yet
            s.execute(update(T.web_assignment).where(a.id == row.id).values(shown_at=now))
        merged = merge(row.listening, posted, duration_s=duration_s, elapsed_s=_elapsed(row.shown_at, now))
        s.execute(update(T.web_assignment).where(a.id == row.id).values(listening=merged))
    return merged


def totals(records: list[dict[str, Any] | None]) -> dict[str, Any]:
    """A participant's listening over her guesses: median heard seconds, total plays and seeks, with n."""
    import statistics

    heard = [float(r["heard_s"]) for r in records if r and r.get("heard_s") is not None]
    return {"n": len(records), "n_heard": len(heard),
            "median_heard_s": round(statistics.median(heard), 1) if heard else None,
            "n_plays": sum(int(r.get("n_plays") or 0) for r in records if r),
            "n_seeks": sum(int(r.get("n_seeks") or 0) for r in records if r)}
