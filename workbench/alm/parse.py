"""Reading an ALM's reply into a location guess, without guessing.

AGL1K's ``openllm.py`` took the first ``\\{[^{}]*\\}`` match (a reason containing ``{...}``
broke it) and turned a missing number into 0.0 (a real place in the Gulf of Guinea). Here:

- structured output is read as JSON first;
- otherwise every top-level JSON object in the text is decoded with the JSON decoder itself
  (so braces inside strings, nested objects and code fences are harmless) and the *last* one
  that carries location keys wins (models often restate their answer at the end);
- AGL1K's own prompt shows its JSON example without a comma after ``reason``; models copy it.
  When no object decodes, that one defect (a missing comma between a string value and the
  next key on a new line) is repaired and the repair is recorded;
- no coordinates, coordinates out of range, or exactly (0, 0) → a *reject* with its reason,
  stored as such (AGL1K's reject rate), never a made-up number.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "reason": ("reason", "reasoning", "explanation", "rationale"),
    "city": ("city", "predicted_city"),
    "country": ("country", "predicted_country"),
    "continent": ("continent", "predicted_continent"),
    "longitude": ("longitude", "lon", "lng", "long", "predicted_longitude"),
    "latitude": ("latitude", "lat", "predicted_latitude"),
}
LOCATION_KEYS = ("city", "country", "continent", "longitude", "latitude")
_MISSING_COMMA = re.compile(r'"(\s*\n\s*)"(?=[A-Za-z_]+"\s*:)')

# The schema asked for where the provider supports structured output (same keys as AGL1K's prompt).
RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "city": {"type": "string"},
        "country": {"type": "string"},
        "continent": {"type": "string"},
        "longitude": {"type": "number"},
        "latitude": {"type": "number"},
    },
    "required": ["reason", "city", "country", "continent", "longitude", "latitude"],
    "additionalProperties": False,
}

Status = Literal["ok", "rejected"]


@dataclass(frozen=True)
class ParsedAnswer:
    """What a reply said: the fields as the model wrote them, and whether it is a usable guess.

    ``fields`` keeps each value as written (numbers as numbers, strings as strings), which is
    what the stored prediction keeps; ``latitude``/``longitude`` are the checked numbers.
    """

    status: Status
    reason: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    latitude: float | None = None
    longitude: float | None = None
    repaired: bool = False

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (stored in ``alm_answer.parsed``)."""
        return {"status": self.status, "reason": self.reason, "fields": self.fields,
                "latitude": self.latitude, "longitude": self.longitude, "repaired": self.repaired}


def _objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order (nested ones are inside their parent)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except (json.JSONDecodeError, RecursionError):
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        position = text.find("{", end)
    return found


def _pick(obj: dict[str, Any]) -> dict[str, Any]:
    """The location fields of one object under their canonical names (first alias present wins)."""
    lowered = {str(k).strip().lower(): v for k, v in obj.items()}
    picked: dict[str, Any] = {}
    for canonical, aliases in KEY_ALIASES.items():
        for alias in aliases:
            if alias in lowered:
                picked[canonical] = lowered[alias]
                break
    return picked


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _candidates(text: str, structured: bool) -> tuple[list[dict[str, Any]], bool]:
    if structured:
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            value = None
        if isinstance(value, dict):
            return [value], False
    objects = [o for o in _objects(text) if any(k in _pick(o) for k in LOCATION_KEYS)]
    if objects:
        return objects, False
    repaired_text = _MISSING_COMMA.sub(r'",\1"', text)
    if repaired_text != text:
        objects = [o for o in _objects(repaired_text) if any(k in _pick(o) for k in LOCATION_KEYS)]
        if objects:
            return objects, True
    return [], False


def parse_reply(text: str | None, *, structured: bool = False) -> ParsedAnswer:
    """The location guess in a reply, or a reject saying why there is none.

    Parameters
    ----------
    text
        The reply text as the provider returned it.
    structured
        The provider was asked for JSON with :data:`RESPONSE_SCHEMA` (the text should be that
        object; anything else still goes through the tolerant reading).

    Returns
    -------
    ParsedAnswer
        ``status`` ``"ok"`` with numeric coordinates in range, else ``"rejected"`` with
        ``reason`` (the fields found are kept either way).
    """
    if text is None or not text.strip():
        return ParsedAnswer("rejected", "empty reply")
    objects, repaired = _candidates(text, structured)
    if not objects:
        return ParsedAnswer("rejected", "no JSON object with a location in the reply")
    fields = _pick(objects[-1])
    latitude = _number(fields.get("latitude"))
    longitude = _number(fields.get("longitude"))
    problem = None
    if latitude is None or longitude is None:
        missing = [name for name, value in (("latitude", latitude), ("longitude", longitude)) if value is None]
        problem = f"no numeric {' and '.join(missing)} in the answer"
    elif not -90 <= latitude <= 90 or not -180 <= longitude <= 180:
        problem = f"coordinates out of range (latitude {latitude}, longitude {longitude})"
    elif latitude == 0 and longitude == 0:
        problem = "coordinates 0, 0 (the no-answer value AGL1K's parser produced), not a guess"
    if problem is not None:
        return ParsedAnswer("rejected", problem, fields, None, None, repaired)
    return ParsedAnswer("ok", None, fields, latitude, longitude, repaired)
