"""Reading a long-format ratings CSV (``unit,rater,value``): for ``aglw agreement --ratings`` and
``aglw study alt-test --ratings``.

Every problem is one line naming the file, the PHYSICAL line it starts on (blank lines and
newlines inside quoted fields counted, as an editor shows them), the field and what to do: a row
of another width than the header, a value that is not a strict ASCII decimal where a number is
needed, a rating beyond :data:`RATING_LIMIT` (its square would overflow the statistics), text that
is not valid Unicode, a unit rated twice by one rater.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import InputError
from workbench.strict_numbers import check_text, parse_float

COLUMNS = ("unit", "rater", "value")
# No rating scale reaches this; beyond it sums of squared differences (RMSE, ICC) overflow a float.
RATING_LIMIT = 1e15
# A field longer than this is not a unit, a rater or a rating (the csv module's own limit is 128 KiB).
MAX_FIELD_CHARS = 10_000


@dataclass(frozen=True)
class RatingRow:
    """One rating with the physical line its row starts on."""

    line: int
    unit: str
    rater: str
    value: str


def read_rating_rows(path: str | Path) -> list[RatingRow]:
    """The non-empty ratings of a long-format CSV, in file order (values as stripped text).

    Raises
    ------
    InputError
        One line naming the file, line and field; nothing is returned then.
    """
    path = Path(path)
    try:
        with path.open("r", encoding="utf-8-sig", newline="") as handle:
            return _rows(path, handle)
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file; pass a CSV with columns unit,rater,value") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{path} is a folder; pass a CSV with columns unit,rater,value") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 (byte {exc.start + 1}); save it as a UTF-8 CSV") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from exc


def _rows(path: Path, handle) -> list[RatingRow]:  # type: ignore[no-untyped-def]
    reader = csv.reader(handle, strict=True)
    header: list[str] | None = None
    positions: tuple[int, int, int] = (0, 1, 2)
    rows: list[RatingRow] = []
    seen: dict[tuple[str, str], int] = {}
    end = 0  # physical line the previous record ended on
    while True:
        start = end + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(f"{path}, line {reader.line_num}: not readable as CSV ({_one_line(exc)}); "
                             "fix the quoting of that row") from None
        end = reader.line_num
        if not fields or all(not f.strip() for f in fields):
            continue  # a blank line
        for column, text in enumerate(fields, start=1):
            if len(text) > MAX_FIELD_CHARS:
                raise InputError(f"{path}, line {start}, column {column}: a field of {len(text):,} characters; "
                                 f"fields are at most {MAX_FIELD_CHARS:,}")
            check_text(text, f"{path}, line {start}", f"column {column}")
        if header is None:
            header = [f.strip().lower() for f in fields]
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise InputError(f"{path}, line {start}: missing column(s) {', '.join(missing)}; "
                                 "the header must name unit,rater,value")
            positions = tuple(header.index(c) for c in COLUMNS)  # type: ignore[assignment]
            continue
        if len(fields) != len(header):
            raise InputError(f"{path}, line {start}: {len(fields)} fields where the header has {len(header)} "
                             f"({','.join(header)}); a ragged row cannot be read (quote a value with commas)")
        unit, rater, value = (fields[i].strip() for i in positions)
        if not value:
            continue  # an empty value is a missing rating
        key = (unit, rater)
        if key in seen:
            raise InputError(f"{path}, line {start}: rater {rater!r} rates unit {unit!r} twice (first on line "
                             f"{seen[key]}); keep one row per unit and rater")
        seen[key] = start
        rows.append(RatingRow(start, unit, rater, value))
    if header is None:
        raise InputError(f"{path}: the file is empty; pass a CSV with columns unit,rater,value")
    return rows


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def numeric_value(path: str | Path, row: RatingRow, need: str) -> float:
    """``row.value`` as a finite number within ±:data:`RATING_LIMIT` (``need`` says why one is needed)."""
    try:
        return parse_float(row.value, f"{path}, line {row.line}, field value", "", minimum=-RATING_LIMIT,
                           maximum=RATING_LIMIT)
    except InputError as exc:
        raise InputError(f"{exc}; {need}") from None


def is_number(text: str) -> bool:
    """Whether ``text`` is a number :func:`numeric_value` accepts."""
    try:
        parse_float(text, "", "value", minimum=-RATING_LIMIT, maximum=RATING_LIMIT)
    except InputError:
        return False
    return True


__all__ = ["COLUMNS", "RATING_LIMIT", "RatingRow", "is_number", "numeric_value", "read_rating_rows"]
