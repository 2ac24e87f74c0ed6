"""Find time references ("at 1:08", "0:48", "1:02:03", "at 12 seconds") in free text.

The review GUI makes every reference in an ALM's reasoning clickable (it seeks the
player) and marks it on the time axis. This module is pure: text in, spans out.

Recognised forms
----------------
- Clock forms ``M:SS``, ``MM:SS``, ``H:MM:SS`` with an optional decimal fraction of
  a second (``0:48.5``). Seconds (and minutes in ``H:MM:SS``) must have exactly two
  digits and be below 60, so ratios such as ``3:2`` or ``16:9`` are not taken.
- Seconds written out after a preposition: ``at 12 s``, ``around 4.5 sec``,
  ``after 30 seconds``. Without the preposition ("12 seconds long") a number is a
  duration, not a point in time, and is not taken.

Not recognised on purpose: clock forms that are part of a longer number chain
(``12:34:56:78``, ``10:30:00.000Z``-style stamps glued to other digits), times of day
followed by ``am``/``pm``, and bare numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CLOCK = re.compile(
    r"(?<![\d:.])"  # not the tail of a longer number or chain
    r"(?:(?P<h>\d{1,2}):(?P<hm>[0-5]\d):(?P<hs>[0-5]\d)|(?P<m>\d{1,3}):(?P<s>[0-5]\d))"
    r"(?P<frac>\.\d+)?"
    r"(?![\d:]|\s*(?:[ap]\.?m\b))",
    re.IGNORECASE,
)

_SECONDS = re.compile(
    r"\b(?:at|around|about|near|after|from|until|till|to|by|before|approximately|approx\.?)"
    r"\s+~?\s*(?P<num>\d+(?:\.\d+)?)\s*(?:s|secs?|seconds?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TimeRef:
    """A time reference found in a text.

    Attributes
    ----------
    start_char, end_char
        The span of the time expression itself (``text[start_char:end_char]``).
    seconds
        The time it names, in seconds from the start of the recording.
    """

    start_char: int
    end_char: int
    seconds: float


def find_time_references(text: str | None) -> list[TimeRef]:
    """Find the time references in ``text``.

    Parameters
    ----------
    text
        Free text (e.g. an ALM's chain-of-thought); ``None`` is treated as empty.

    Returns
    -------
    list of TimeRef
        Ordered by position, non-overlapping.
    """
    if not text:
        return []
    found: list[TimeRef] = []
    for match in _CLOCK.finditer(text):
        fraction = float(match.group("frac")) if match.group("frac") else 0.0
        if match.group("h") is not None:
            seconds = int(match.group("h")) * 3600 + int(match.group("hm")) * 60 + int(match.group("hs"))
        else:
            seconds = int(match.group("m")) * 60 + int(match.group("s"))
        found.append(TimeRef(match.start(), match.end(), seconds + fraction))
    taken = [(ref.start_char, ref.end_char) for ref in found]
    for match in _SECONDS.finditer(text):
        start, end = match.start("num"), match.end()
        if any(start < t_end and t_start < end for t_start, t_end in taken):
            continue
        found.append(TimeRef(start, end, float(match.group("num"))))
    return sorted(found, key=lambda ref: ref.start_char)

