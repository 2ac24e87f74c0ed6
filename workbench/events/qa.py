"""Spatial question/answer pairs from annotated events, and the scoring of a model's answers.

Templates (spatial-events.md "Files"): the o'clock direction of a sound, left/right,
front/back (only where known), above/below, which of two events is nearer, which of two
sounds is more to the left, and how many distinct sources a clip has. Each question is one
JSON object with ``id, clip_key, audio, start_s, end_s, question_type, question, answer,
answer_value, event_ids`` (o'clock questions also carry the true ``azimuth_deg`` and
``elevation_deg`` so that answers in degrees can be scored by angular error; questions about
two events carry their two class names as ``choices``).

O'clock hours follow ``spatial.md`` (12 = front, 3 = right, 6 = back, 9 = left); the
front/back mirror of an hour is a confusion counted apart from other misses. Unparsable or
missing answers are counted, never dropped.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from workbench.audio.direction import oclock, oclock_mirror
from workbench.events.model import SpatialEventData

QUESTION_TYPES = ("oclock", "left_right", "front_back", "above_below", "nearer", "more_left", "count")

# Directions closer than this to the dividing plane give no left/right, front/back or
# above/below question: a person could not answer them either.
_MARGIN_DEG = 15.0
# Two events are "clearly" apart in distance when the farther is this much farther.
_NEARER_RATIO = 1.25
# Lateral coordinates (sin az · cos el) must differ this much for "more to the left".
_LEFT_MARGIN = 0.2
# A source that moves farther than this from its mean direction has no one direction to ask about.
_MAX_SPREAD_DEG = 45.0


@dataclass(frozen=True)
class ClipEvents:
    """The events of one clip, with what the questions cite."""

    clip_key: str
    audio: str | None
    duration_s: float | None
    events: Sequence[SpatialEventData]


def _qid(clip_key: str, qtype: str, uids: Sequence[str]) -> str:
    digest = hashlib.sha1("|".join([clip_key, qtype, *uids]).encode()).hexdigest()[:12]
    return f"{clip_key}:{qtype}:{digest}"


def _when(event: SpatialEventData) -> str:
    return f"between {event.onset_s:.1f} s and {event.offset_s:.1f} s"


def _question(clip: ClipEvents, qtype: str, events: Sequence[SpatialEventData], question: str, answer: str,
              value: Any, **extra: Any) -> dict[str, Any]:
    uids = [e.uid or f"{e.class_name}@{e.onset_s}" for e in events]
    start = min(e.onset_s for e in events) if events else 0.0
    end = max(e.offset_s for e in events) if events else (clip.duration_s or 0.0)
    record = {
        "id": _qid(clip.clip_key, qtype, uids),
        "clip_key": clip.clip_key,
        "audio": clip.audio,
        "start_s": round(start, 3),
        "end_s": round(end, 3),
        "question_type": qtype,
        "question": question,
        "answer": answer,
        "answer_value": value,
        "event_ids": uids,
    }
    record.update(extra)
    return record


def _lateral_sign(event: SpatialEventData) -> float:
    """sin(azimuth)·cos(elevation): + left, − right (known even when front/back is not)."""
    az, el = event.mean_direction()
    return math.sin(math.radians(az)) * math.cos(math.radians(el))


def spread_deg(event: SpatialEventData) -> float:
    """Largest angle between a track entry and the track's mean direction (0 for a static source)."""
    az, el = event.mean_direction()
    return max(angular_error_deg(t[0], t[1], az, el) for t in event.track)


def questions_for_clip(clip: ClipEvents) -> list[dict[str, Any]]:
    """Every question the templates can ask about one clip's events (deterministic order).

    Direction questions skip events whose source moves more than 45° from its mean direction;
    the count question counts every distinct (class, source index).
    """
    all_events = sorted(clip.events, key=lambda e: (e.onset_s, e.class_name, e.source_index))
    events = [e for e in all_events if spread_deg(e) <= _MAX_SPREAD_DEG]
    out: list[dict[str, Any]] = []
    for e in events:
        az_world = e.world_azimuth()
        _, el = e.mean_direction()
        name = e.class_name
        if az_world is not None:
            hour = oclock(az_world)
            out.append(_question(
                clip, "oclock", [e],
                f"{_when(e).capitalize()}, from which o'clock direction does the {name} come "
                "(12 = front, 3 = right, 6 = back, 9 = left)?",
                f"{hour} o'clock", hour, azimuth_deg=round(az_world, 2), elevation_deg=round(el, 2),
            ))
        lateral = math.degrees(math.asin(max(-1.0, min(1.0, _lateral_sign(e)))))
        if abs(lateral) >= _MARGIN_DEG:
            side = "left" if lateral > 0 else "right"
            out.append(_question(clip, "left_right", [e],
                                 f"{_when(e).capitalize()}, is the {name} on the left or on the right?", side, side))
        if az_world is not None and abs(abs(az_world) - 90.0) >= _MARGIN_DEG:
            side = "front" if abs(az_world) < 90 else "back"
            out.append(_question(clip, "front_back", [e],
                                 f"{_when(e).capitalize()}, is the {name} in front of or behind the listener?", side, side))
        if e.direction_kind == "azel" and abs(el) >= _MARGIN_DEG:
            side = "above" if el > 0 else "below"
            out.append(_question(clip, "above_below", [e],
                                 f"{_when(e).capitalize()}, is the {name} above or below the listener?", side, side))
    # Pairs of events of different classes (a class name must identify the event in the answer).
    for i, a in enumerate(events):
        for b in events[i + 1:]:
            if a.class_name == b.class_name:
                continue
            da, db = a.mean_distance_cm(), b.mean_distance_cm()
            if da is not None and db is not None and max(da, db) >= _NEARER_RATIO * min(da, db):
                nearer = a if da < db else b
                out.append(_question(clip, "nearer", [a, b],
                                     f"Which is nearer to the listener, the {a.class_name} ({_when(a)}) or the "
                                     f"{b.class_name} ({_when(b)})?", nearer.class_name, nearer.class_name,
                                     choices=[a.class_name, b.class_name]))
            la, lb = _lateral_sign(a), _lateral_sign(b)
            if abs(la - lb) >= _LEFT_MARGIN:
                left = a if la > lb else b
                out.append(_question(clip, "more_left", [a, b],
                                     f"Which sound is more to the left, the {a.class_name} ({_when(a)}) or the "
                                     f"{b.class_name} ({_when(b)})?", left.class_name, left.class_name,
                                     choices=[a.class_name, b.class_name]))
    if all_events:
        sources = {(e.class_name, e.source_index) for e in all_events}
        out.append(_question(clip, "count", [], "How many distinct sound sources are annotated in this recording?",
                             str(len(sources)), len(sources)))
    return out


def generate_questions(clips: Iterable[ClipEvents]) -> list[dict[str, Any]]:
    """Questions for several clips, in clip order."""
    return [q for clip in clips for q in questions_for_clip(clip)]


# ------------------------------------------------------------------------------ scoring

_NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_HOUR_RE = re.compile(r"\b(1[0-2]|0?[1-9])\s*(?:o['’]?\s*clock|:00\b|h\b)", re.IGNORECASE)
_WORD_HOUR_RE = re.compile(r"\b(" + "|".join(list(_NUMBER_WORDS)[1:]) + r")\s*o['’]?\s*clock", re.IGNORECASE)
_DEGREES_RE = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:°|deg\b|degrees?\b)", re.IGNORECASE)
_INT_RE = re.compile(r"-?\d+")
_WORDS = {
    "left_right": (("left",), ("right",)),
    "front_back": (("front", "ahead"), ("back", "behind", "rear")),
    "above_below": (("above", "up", "over", "overhead"), ("below", "under", "beneath", "down")),
}


def parse_hour(text: str) -> tuple[int | None, float | None]:
    """(hour, azimuth in degrees) read from an answer; either may be None."""
    hour = None
    m = _HOUR_RE.search(text)
    if m:
        hour = int(m.group(1))
    else:
        m = _WORD_HOUR_RE.search(text)
        if m:
            hour = _NUMBER_WORDS[m.group(1).lower()]
    degrees = None
    d = _DEGREES_RE.search(text)
    if d:
        degrees = float(d.group(1))
        if hour is None:
            hour = oclock(degrees)
    if hour is None and text.strip().isdigit() and 1 <= int(text.strip()) <= 12:
        hour = int(text.strip())
    return hour, degrees


def _side(text: str, qtype: str) -> str | None:
    lowered = text.lower()
    first, second = _WORDS[qtype]
    has_first = any(re.search(rf"\b{w}\b", lowered) for w in first)
    has_second = any(re.search(rf"\b{w}\b", lowered) for w in second)
    if has_first == has_second:
        return None
    labels = {"left_right": ("left", "right"), "front_back": ("front", "back"), "above_below": ("above", "below")}[qtype]
    return labels[0] if has_first else labels[1]


def _which_class(text: str, question: dict[str, Any]) -> str | None:
    names = question.get("choices") or re.findall(r"(?:, | or )the (.+?) \(between", question["question"])
    lowered = text.lower()
    found = [n for n in names if n.lower() in lowered]
    return found[0] if len(found) == 1 else None


def _count(text: str) -> int | None:
    m = _INT_RE.search(text)
    if m:
        return int(m.group())
    for word, value in _NUMBER_WORDS.items():
        if re.search(rf"\b{word}\b", text.lower()):
            return value
    return None


def _hour_gap(a: int, b: int) -> int:
    d = abs(a - b) % 12
    return min(d, 12 - d)


def angular_error_deg(az1: float, el1: float, az2: float, el2: float) -> float:
    """Great-circle angle between two directions in degrees."""
    a1, e1, a2, e2 = map(math.radians, (az1, el1, az2, el2))
    cos = math.sin(e1) * math.sin(e2) + math.cos(e1) * math.cos(e2) * math.cos(a1 - a2)
    return math.degrees(math.acos(max(-1.0, min(1.0, cos))))


def score_answers(questions: Sequence[dict[str, Any]], answers: dict[str, str]) -> dict[str, Any]:
    """Score a model's answers (``id -> answer text``) to ``questions``.

    Returns
    -------
    dict
        ``n_questions``, ``n_answered``, ``n_missing``, ``n_unparsable``, ``accuracy`` (over
        all questions: a missing or unparsable answer is wrong), ``per_type`` (``n``,
        ``correct``, ``accuracy``, ``unparsable``, ``missing``), and ``oclock`` (``exact``,
        ``within_one_hour``, ``front_back_confusions``, ``n_degrees``,
        ``mean_angular_error_deg``), ``unknown_answer_ids`` (answers to no question).
    """
    per_type: dict[str, dict[str, Any]] = {}
    oclock_stats = {"n": 0, "exact": 0, "within_one_hour": 0, "front_back_confusions": 0}
    angular: list[float] = []
    missing = unparsable = correct_total = 0
    ids = set()
    for q in questions:
        ids.add(q["id"])
        qtype = q["question_type"]
        stats = per_type.setdefault(qtype, {"n": 0, "correct": 0, "unparsable": 0, "missing": 0})
        stats["n"] += 1
        text = answers.get(q["id"])
        if text is None:
            stats["missing"] += 1
            missing += 1
            if qtype == "oclock":
                oclock_stats["n"] += 1
            continue
        text = str(text)
        ok: bool | None
        if qtype == "oclock":
            oclock_stats["n"] += 1
            hour, degrees = parse_hour(text)
            if degrees is not None and "azimuth_deg" in q:
                angular.append(angular_error_deg(degrees, 0.0, q["azimuth_deg"], 0.0))
            if hour is None:
                ok = None
            else:
                truth = int(q["answer_value"])
                ok = hour == truth
                oclock_stats["exact"] += ok
                oclock_stats["within_one_hour"] += _hour_gap(hour, truth) <= 1
                mirror = oclock_mirror(truth)
                oclock_stats["front_back_confusions"] += mirror is not None and hour == mirror and hour != truth
        elif qtype in _WORDS:
            side = _side(text, qtype)
            ok = None if side is None else side == q["answer_value"]
        elif qtype in ("nearer", "more_left"):
            name = _which_class(text, q)
            ok = None if name is None else name == q["answer_value"]
        elif qtype == "count":
            value = _count(text)
            ok = None if value is None else value == int(q["answer_value"])
        else:
            ok = None
        if ok is None:
            stats["unparsable"] += 1
            unparsable += 1
        elif ok:
            stats["correct"] += 1
            correct_total += 1
    for stats in per_type.values():
        stats["accuracy"] = stats["correct"] / stats["n"] if stats["n"] else None
    n = len(questions)
    return {
        "n_questions": n,
        "n_answered": n - missing,
        "n_missing": missing,
        "n_unparsable": unparsable,
        "accuracy": correct_total / n if n else None,
        "per_type": per_type,
        "oclock": {
            **oclock_stats,
            "exact_rate": oclock_stats["exact"] / oclock_stats["n"] if oclock_stats["n"] else None,
            "within_one_hour_rate": oclock_stats["within_one_hour"] / oclock_stats["n"] if oclock_stats["n"] else None,
            "n_degrees": len(angular),
            "mean_angular_error_deg": sum(angular) / len(angular) if angular else None,
        },
        "unknown_answer_ids": sorted(set(answers) - ids),
    }
