"""Numbers and text read from files, parsed strictly: the one parser every importer uses (issue 28).

Python's ``int()`` and ``float()`` accept far more than a data file means: digits of any script
(``٣``, ``５``, ``१``, ``𝟝``), ``1_000``, surrounding blanks, ``nan``, ``inf``, and integers of
thousands of digits, which then overflow the database (SQLite keeps 64 bits). Here a number is
ASCII decimal (``-12``, ``+3.5``, ``1e-3``), finite, of bounded length and within the bounds the
caller gives; anything else is one :class:`~workbench.errors.InputError` naming where it was
(file and physical line), the field, the value (shortened) and what is expected. Text must be
valid Unicode: a lone surrogate (``"\\ud800"`` in JSON) cannot be stored or printed.
"""

from __future__ import annotations

import math
import re

from workbench.errors import InputError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
# No number in a data file needs more characters than this; a longer one is refused before any
# conversion (a 5,001-digit integer costs quadratic time and overflows everything after).
MAX_NUMBER_CHARS = 64

_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_SURROGATE = re.compile("[\ud800-\udfff]")


def shown(text: object, limit: int = 24) -> str:
    """``text`` as a message may quote it: repr'd (control and surrogate characters escaped), shortened."""
    value = str(text)
    if len(value) > limit:
        return repr(value[:limit]) + f"… ({len(value):,} characters)"
    return repr(value)


def _where(where: str, field: str) -> str:
    """The message's head: "FILE:LINE: FIELD", or "FILE, line N, field X:" when ``field`` is empty."""
    if where and field:
        return f"{where}: {field}"
    return f"{where}:" if where else field


def _bound(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _short(text: str, limit: int = 24) -> str:
    """A valid number as a message shows it (ASCII already): shortened when long."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} digits)"


def _out_of_range(where: str, field: str, text: str, minimum: float | None, maximum: float | None) -> InputError:
    if minimum is not None and maximum is not None:
        return InputError(f"{_where(where, field)} {_short(text)} is outside [{_bound(minimum)}, {_bound(maximum)}]")
    if minimum is not None:
        return InputError(f"{_where(where, field)} {_short(text)} must be >= {_bound(minimum)}")
    return InputError(f"{_where(where, field)} {_short(text)} must be <= {_bound(maximum)}")  # type: ignore[arg-type]


def parse_int(text: str, where: str, field: str, *, minimum: int | None = 0,
              maximum: int | None = INT64_MAX) -> int:
    """``text`` as a whole number in ASCII decimal within [minimum, maximum] (default: 0 to int64's top).

    ``None`` for a bound means int64's. Raises one :class:`InputError` ``WHERE: FIELD VALUE ...``
    for anything else.
    """
    low = INT64_MIN if minimum is None else minimum
    high = INT64_MAX if maximum is None else maximum
    if not _INTEGER.fullmatch(text):
        raise InputError(f"{_where(where, field)} {shown(text)} must be a whole number (written with the "
                         "digits 0-9: no spaces, underscores or other scripts' digits)")
    # a number of more digits than any bound has is out of range without converting it
    value = int(text) if len(text) <= MAX_NUMBER_CHARS else None
    if value is None or value > high:
        raise _out_of_range(where, field, text, low, high)
    if value < low:  # "frame -1 must be >= 0" (int64's top is not worth naming)
        raise _out_of_range(where, field, text, low, None if high == INT64_MAX else high)
    return value


def parse_float(text: str, where: str, field: str, *, minimum: float | None = None,
                maximum: float | None = None) -> float:
    """``text`` as a finite decimal number (``12``, ``-0.5``, ``1e-3``) within [minimum, maximum].

    Raises one :class:`InputError` ``WHERE: FIELD VALUE ...`` for anything else, ``nan``, ``inf``
    and a number too large for a float (``1e400``) included.
    """
    if not _DECIMAL.fullmatch(text):
        lowered = text.strip().lower().lstrip("+-")
        if lowered in ("nan", "inf", "infinity"):
            raise InputError(f"{_where(where, field)} {shown(text)} is not a finite number")
        raise InputError(f"{_where(where, field)} {shown(text)} is not a number (write it with the digits 0-9: "
                         "no spaces, underscores or other scripts' digits)")
    value = float(text) if len(text) <= MAX_NUMBER_CHARS else math.inf
    if not math.isfinite(value):
        raise InputError(f"{_where(where, field)} {_short(text)} is not a finite number (too large)")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise _out_of_range(where, field, text, minimum, maximum)
    return value


def decimal_value(text: str) -> float | None:
    """``text`` (surrounding blanks allowed, as a CSV cell has them) as a finite ASCII decimal
    number, else None: for readers that word their own message (the AGL1K importer's, a mapping's)."""
    body = text.strip()
    if len(body) > MAX_NUMBER_CHARS or not _DECIMAL.fullmatch(body):
        return None
    value = float(body)
    return value if math.isfinite(value) else None


def check_float(value: float, where: str, field: str, *, minimum: float | None = None,
                maximum: float | None = None) -> float:
    """A number already parsed (a JSON number, a spreadsheet cell): finite and within [minimum, maximum]."""
    if isinstance(value, bool) or not math.isfinite(value):
        raise InputError(f"{_where(where, field)} {shown(value)} is not a finite number")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise _out_of_range(where, field, repr(float(value)), minimum, maximum)
    return float(value)


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (never valid Unicode text on its own)."""
    return _SURROGATE.search(text) is not None


def check_text(text: str, where: str, field: str) -> str:
    """``text`` when it is valid Unicode (no lone surrogate), else one :class:`InputError`."""
    match = _SURROGATE.search(text)
    if match is not None:
        raise InputError(f"{_where(where, field)}: {shown(match.group(0))} is a lone surrogate, not valid "
                         "Unicode text; fix the encoding of the input")
    return text


__all__ = [
    "INT64_MAX", "INT64_MIN", "MAX_NUMBER_CHARS", "check_float", "check_text", "has_lone_surrogate",
    "parse_float", "parse_int", "shown",
]
