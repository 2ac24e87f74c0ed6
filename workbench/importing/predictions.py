"""Reading ALM result files (JSON Lines or a JSON array) into plain records (no database).

Every record keeps the model's predicted values as raw text (``"Unknown"``, ``""``, ``"0"`` are
meaningful to the metrics); problems are collected with line numbers instead of crashing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from workbench.agl1k_record import RECORD_FIELDS
from workbench.errors import InputError
from workbench.strict_numbers import INT64_MAX, INT64_MIN, MAX_NUMBER_CHARS, has_lone_surrogate, parse_float, shown

KNOWN_FIELDS = frozenset(RECORD_FIELDS)
TEXT_FIELDS = (
    "task_id",
    "true_city",
    "true_country",
    "true_continent",
    "predicted_city",
    "predicted_country",
    "predicted_continent",
    "predicted_longitude",
    "predicted_latitude",
    "reasoning",
    "model_output",
    "question",
)
CONTAINER_JSONL = "jsonl"
CONTAINER_JSON_ARRAY = "json-array"


@dataclass
class PredictionRecord:
    """One result record ready to store: raw text values, parsed true coordinates."""

    line_no: int
    question_id: str
    values: dict[str, Any]
    # The stated true position (lat, lon), kept by a scan that keeps no values: the import
    # compares it with the clip's (workbench.importing.prediction_rows.truth_disagreements).
    truth: tuple[Any, Any] | None = None


@dataclass
class PredictionFile:
    """Everything read from one result file, good records and findings alike."""

    path: Path
    container: str
    records: list[PredictionRecord]
    malformed: list[tuple[int, str]] = field(default_factory=list)
    duplicates: list[tuple[int, int, str]] = field(default_factory=list)  # line, first line, id
    unknown_fields: dict[str, int] = field(default_factory=dict)  # field -> first line
    seed: int | None = None


def _raw_text(value: Any) -> str | None:
    """Store a value as the model wrote it: numbers as their JSON text, null (or NaN) as None."""
    if isinstance(value, str):  # the common case first
        return value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _true_coordinate(value: Any) -> float | None:
    if type(value) is float:  # the common case, without the conversions below
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):  # ASCII decimal only: "٣٥" or "1_0" is not a coordinate
        try:
            return parse_float(value.strip(), "", "coordinate")
        except InputError:
            return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def to_record(obj: Any, line_no: int, keep_values: bool = True) -> PredictionRecord | str:
    """A record, or the reason the object is malformed. Without ``keep_values`` (a scan) the
    record is checked alike but only its ``seed`` is kept."""
    if not isinstance(obj, dict):
        return f"expected a JSON object, found {type(obj).__name__}"
    question_id = obj.get("question_id")
    if isinstance(question_id, (int, float)) and not isinstance(question_id, bool):
        question_id = str(question_id)
    if not isinstance(question_id, str) or not question_id.strip():
        return "no question_id (the dataset key of the clip)"
    # Text (nearly every value) is kept as is without a call per field: an import reads every record.
    values: dict[str, Any] = (
        {name: value if type(value := obj.get(name)) is str else _raw_text(value) for name in TEXT_FIELDS}
        if keep_values
        else {}
    )
    for name, low, high in (("true_latitude", -90, 90), ("true_longitude", -180, 180)):
        raw = obj.get(name)
        number = _true_coordinate(raw)
        if raw is not None and (number is None or not low <= number <= high):
            return f"field {name}: {raw!r} is not a coordinate in [{low}, {high}]"
        values[name] = number  # a scan keeps these too: the import compares them with the clip's
    seed = obj.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool) and not INT64_MIN <= seed <= INT64_MAX:
        return f"field seed: {shown(seed)} is not a whole number within 64 bits"
    values["seed"] = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
    return PredictionRecord(line_no=line_no, question_id=question_id.strip(), values=values)


# Bounds on what a result file may be (quality-bar: parsers bound their input). AGL1K's files
# are ~10 MB; the size bound stops a file that would exhaust memory, and nesting beyond
# Python's recursion limit is reported as a malformed record instead of a stack overflow.
MAX_RESULT_FILE_BYTES = 1 << 30


def _too_deep(text: str, position: int) -> json.JSONDecodeError:
    return json.JSONDecodeError("nested too deeply for the JSON parser; not a result record", text, position)


class _Refused(ValueError):
    """A JSON value no result record can hold (raised from inside the decoder)."""


def _json_int(text: str) -> int:
    # Python refuses integers past 4,300 digits with a ValueError the decoder does not expect
    if len(text) > MAX_NUMBER_CHARS:
        raise _Refused(f"a number of {len(text):,} digits")
    return int(text)


def _checked(obj: Any, text: str, position: int) -> Any:
    """``obj`` decoded from ``text``, unless it holds a lone surrogate (``"\\ud800"``): that is
    not Unicode text, and neither the database nor a terminal can take it."""
    if "\\u" in text and _holds_lone_surrogate(obj):
        raise json.JSONDecodeError("a lone surrogate escape (\\ud800-\\udfff) is not valid Unicode text",
                                   text, position)
    return obj


def _holds_lone_surrogate(obj: Any) -> bool:
    if isinstance(obj, str):
        return has_lone_surrogate(obj)
    if isinstance(obj, dict):
        return any(_holds_lone_surrogate(k) or _holds_lone_surrogate(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_holds_lone_surrogate(v) for v in obj)
    return False


_DECODER = json.JSONDecoder(parse_int=_json_int)


def _loads(text: str) -> Any:
    """``json.loads`` whose stack overflow on absurd nesting, huge integers and lone surrogates
    become ordinary decode errors (a malformed record with its line)."""
    try:
        return _checked(json.loads(text, parse_int=_json_int), text, 0)
    except RecursionError:
        raise _too_deep(text, 0) from None
    except _Refused as exc:
        raise json.JSONDecodeError(str(exc), text, 0) from None


def _iter_jsonl(text: str) -> list[tuple[int, Any | json.JSONDecodeError]]:
    items: list[tuple[int, Any | json.JSONDecodeError]] = []
    # split("\n"), not splitlines(): U+2028 and friends may legally sit inside JSON strings.
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            items.append((line_no, _loads(line)))
        except json.JSONDecodeError as exc:
            items.append((line_no, exc))
    return items


def _iter_json_array(text: str, path: Path) -> list[tuple[int, Any]]:
    """Elements of a JSON array with the line each starts on."""
    decoder = _DECODER
    position = text.index("[") + 1
    items: list[tuple[int, Any]] = []
    length = len(text)

    def skip_whitespace(pos: int) -> int:
        while pos < length and text[pos] in " \t\r\n":
            pos += 1
        return pos

    def fail(pos: int, what: str) -> InputError:
        line = text.count("\n", 0, pos) + 1
        return InputError(
            f"{path}, line {line}: the JSON array is malformed ({what}); a broken array cannot be "
            "partly imported. Fix the file or convert it to JSON Lines."
        )

    position = skip_whitespace(position)
    if position < length and text[position] == "]":
        if skip_whitespace(position + 1) != length:
            raise fail(position + 1, "text after the closing ']'")
        return items
    while True:
        position = skip_whitespace(position)
        try:
            try:
                obj, end = decoder.raw_decode(text, position)
                obj = _checked(obj, text[position:end], position)
            except RecursionError:
                raise _too_deep(text, position) from None
            except _Refused as exc:
                raise json.JSONDecodeError(str(exc), text, position) from None
        except json.JSONDecodeError as exc:
            raise fail(exc.pos, exc.msg) from exc
        items.append((text.count("\n", 0, position) + 1, obj))
        position = skip_whitespace(end)
        if position < length and text[position] == ",":
            position += 1
            continue
        if position < length and text[position] == "]":
            if skip_whitespace(position + 1) != length:
                raise fail(position + 1, "text after the closing ']'")
            return items
        raise fail(position, "expected ',' or ']'")


def _looks_like_json_array(text: str) -> bool:
    """A JSON array, unless the text is JSON Lines whose first record happens to be an array."""
    if not text.lstrip().startswith("["):
        return False
    try:
        return isinstance(_loads(text), list)
    except json.JSONDecodeError:
        pass
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2:
        return True
    try:
        _loads(lines[0])
    except json.JSONDecodeError:
        return True
    return False


class _Collector:
    """Turns parsed items into records, collecting the findings into a :class:`PredictionFile`
    (whose ``records`` list is left to the caller: a scan keeps none of them)."""

    def __init__(self, path: Path, container: str) -> None:
        self.file = PredictionFile(path=path, container=container, records=[])
        self._first_line: dict[str, int] = {}
        self._seeds: set[int] = set()

    def record(self, line_no: int, obj: Any, keep_values: bool = True) -> PredictionRecord | None:
        result = self.file
        if isinstance(obj, json.JSONDecodeError):
            result.malformed.append((line_no, f"not valid JSON ({obj.msg}, column {obj.colno})"))
            return None
        record = to_record(obj, line_no, keep_values)
        if isinstance(record, str):
            result.malformed.append((line_no, record))
            return None
        if not KNOWN_FIELDS.issuperset(obj):  # one set operation for the usual record
            for name in obj:
                if name not in KNOWN_FIELDS and name not in result.unknown_fields:
                    result.unknown_fields[name] = line_no
        if record.question_id in self._first_line:
            result.duplicates.append((line_no, self._first_line[record.question_id], record.question_id))
            return None
        self._first_line[record.question_id] = line_no
        if record.values["seed"] is not None:
            self._seeds.add(record.values["seed"])
        return record

    def finish(self) -> PredictionFile:
        self.file.seed = next(iter(self._seeds)) if len(self._seeds) == 1 else None
        return self.file


def _items_of_text(text: str, path: Path) -> tuple[str, Iterable[tuple[int, Any]]]:
    """Container and parsed items of a whole decoded text."""
    if not text.lstrip():
        raise InputError(f"{path}: the result file is empty.")
    if _looks_like_json_array(text):
        return CONTAINER_JSON_ARRAY, _iter_json_array(text, path)
    return CONTAINER_JSONL, _iter_jsonl(text)


def parse_prediction_text(text: str, path: Path) -> PredictionFile:
    """Parse ALM result records, detecting JSON Lines vs a JSON array.

    Parameters
    ----------
    text : str
        The decoded file content.
    path : Path
        The file, named in messages.

    Returns
    -------
    PredictionFile
        Good records (first occurrence of each ``question_id``) plus the malformed lines,
        duplicate lines and unknown fields found. The caller decides whether malformed lines stop
        the import.

    Raises
    ------
    InputError
        The file is empty, or it is a JSON array that is not valid JSON.
    """
    container, items = _items_of_text(text, path)
    collector = _Collector(path, container)
    records = [record for line_no, obj in items if (record := collector.record(line_no, obj)) is not None]
    result = collector.finish()
    result.records = records
    return result


_BOM = b"\xef\xbb\xbf"


def _check_size(path: Path) -> None:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"{path}: cannot read the result file ({exc.strerror or exc}).") from exc
    if size > MAX_RESULT_FILE_BYTES:
        raise InputError(
            f"{path}: {size / 2**30:.1f} GiB is larger than a result file can be "
            f"({MAX_RESULT_FILE_BYTES // 2**30} GiB); split it into several files."
        )


def _not_utf8(path: Path, line: int) -> InputError:
    return InputError(f"{path}, line {line}: not valid UTF-8; JSON result files must be UTF-8.")


def _decode_whole(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the result file ({exc.strerror or exc}).") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, data.count(b"\n", 0, exc.start) + 1) from exc


def _stream_items(path: Path) -> tuple[str, Iterator[tuple[int, Any]]]:
    """Container and parsed items of a result file, reading JSON Lines one line at a time.

    A file whose first character is ``[`` may be a JSON array, which is parsed as a whole (the
    size bound applies); JSON Lines, the format AGL1K publishes, never sits in memory entirely.
    """
    _check_size(path)
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).removeprefix(_BOM).lstrip()
            while not head:
                block = handle.read(1 << 16)
                if not block:
                    raise InputError(f"{path}: the result file is empty.")
                head = block.lstrip()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the result file ({exc.strerror or exc}).") from exc
    if head.startswith(b"["):
        container, items = _items_of_text(_decode_whole(path), path)
        return container, iter(items)
    return CONTAINER_JSONL, _iter_jsonl_file(path)


def _iter_jsonl_file(path: Path) -> Iterator[tuple[int, Any | json.JSONDecodeError]]:
    # Binary lines split on b"\n" only, as the whole-text reader splits: U+2028 and friends may
    # legally sit inside JSON strings.
    try:
        with path.open("rb") as handle:
            for line_no, raw in enumerate(handle, start=1):
                if line_no == 1:
                    raw = raw.removeprefix(_BOM)
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise _not_utf8(path, line_no) from exc
                if not line or line.isspace():  # blank; strip() would copy every long line
                    continue
                try:
                    yield line_no, _loads(line)
                except json.JSONDecodeError as exc:
                    yield line_no, exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read the result file ({exc.strerror or exc}).") from exc


def scan_prediction_file(path: str | Path) -> PredictionFile:
    """Read a result file once to check it, keeping no record values (first pass of an import).

    Returns
    -------
    PredictionFile
        Findings as :func:`read_prediction_file` gives them, but ``records`` holds each good
        record's line and ``question_id`` with empty ``values`` (and its stated true position in
        ``truth``): memory stays flat however large
        the file. :func:`iter_prediction_records` yields the records themselves.

    Raises
    ------
    InputError
        The file cannot be read or decoded, is empty, or is a malformed JSON array.
    """
    path = Path(path)
    container, items = _stream_items(path)
    collector = _Collector(path, container)
    light: list[PredictionRecord] = []
    for line_no, obj in items:
        record = collector.record(line_no, obj, keep_values=False)
        if record is not None:
            values = record.values
            light.append(PredictionRecord(record.line_no, record.question_id, {},
                                          truth=(values["true_latitude"], values["true_longitude"])))
    result = collector.finish()
    result.records = light
    return result


def iter_prediction_records(path: str | Path) -> Iterator[PredictionRecord]:
    """The good records of a result file (first of each ``question_id``), one at a time.

    Raises
    ------
    InputError
        As :func:`scan_prediction_file`.
    """
    path = Path(path)
    container, items = _stream_items(path)
    collector = _Collector(path, container)
    for line_no, obj in items:
        record = collector.record(line_no, obj)
        if record is not None:
            yield record


def read_prediction_file(path: str | Path) -> PredictionFile:
    """Read an ALM result file (UTF-8, with or without BOM) and parse it, records included.

    Raises
    ------
    InputError
        The file cannot be read or decoded, or :func:`parse_prediction_text` refuses it.
    """
    path = Path(path)
    _check_size(path)
    return parse_prediction_text(_decode_whole(path), path)
