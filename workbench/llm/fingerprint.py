"""The one request fingerprint: the key under which an answer is never paid for twice."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal


def fingerprint(payload: dict[str, Any], *, style: Literal["compact", "spaced"] = "compact") -> str:
    """sha256 of the canonical JSON of ``payload`` (keys sorted).

    ``style`` keeps the keys projects already hold valid: ALM answers were keyed on compact JSON
    (ASCII-escaped), judge calls on Python's default separators with text kept as written.
    Changing either would make every stored answer look unanswered and be bought again.
    """
    if style == "compact":
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    else:
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
