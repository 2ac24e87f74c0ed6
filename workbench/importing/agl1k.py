"""Reading and validating an AGL1K dataset CSV (pure: returns plain rows, touches no database).

The published file has a 19-name header over 20-value rows (see ``design/data-and-metrics.md``).
The reader never guesses: it applies the named ``agl1k-20`` mapping when the header is exactly the
published 19-name header, accepts a correct 20-name header, and refuses any other header/row width
mismatch, naming the line and the counts, so that shifted columns can never be imported.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import InputError
from workbench.strict_numbers import decimal_value

CATEGORY_COLUMNS = (
    "human_sounds",
    "animal",
    "music",
    "natural_sounds",
    "channel",
    "environment_and_background",
    "sounds_of_things",
    "source_ambiguous_sounds",
)
BASE_COLUMNS = (
    "key",
    "short_key",
    "longitude",
    "latitude",
    "altitude",
    "description",
    "title",
    "mp3name",
    "mp3seconds",
    "city",
    "country",
    "continent",
)
CLIP_COLUMNS = (*BASE_COLUMNS, *CATEGORY_COLUMNS)

# The header as published: the channel and environment_and_background columns share one name.
AGL1K_PUBLISHED_HEADER = (
    *BASE_COLUMNS,
    "human_sounds",
    "animal",
    "music",
    "natural_sounds",
    "channel_environment_and_background",
    "sounds_of_things",
    "source_ambiguous_sounds",
)
MAPPING_AGL1K_20 = "agl1k-20"
MAPPING_HEADER = "header"
SUPPORTED_FORMATS = ("agl1k",)

_TEXT_COLUMNS = ("description", "title")
_STRIPPED_COLUMNS = ("key", "short_key", "mp3name", "city", "country", "continent")
# Large enough for any real description; the csv module's default (128 KiB) refuses long fields.
_FIELD_SIZE_LIMIT = 64 * 1024 * 1024


@dataclass
class DatasetTable:
    """A validated dataset table: one dict per clip with the :data:`CLIP_COLUMNS` keys."""

    path: Path
    encoding: str
    column_mapping: str
    rows: list[dict[str, Any]]
    line_numbers: list[int]
    empty_continent_keys: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # mapped tables and folders (datasets.md): the mapping as applied, and the folder that holds
    # the recordings when the reader found them itself (rows then carry ``audio_path``)
    mapping: dict[str, Any] | None = None
    media_root: Path | None = None


def decode_table_bytes(data: bytes, path: Path) -> tuple[str, str, list[str]]:
    """Decode a table file: UTF-8 (with or without BOM), else Latin-1 with a warning.

    Returns
    -------
    tuple
        ``(text, encoding, warnings)``.
    """
    try:
        text = data.decode("utf-8-sig")
        encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
        return text, encoding, []
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        warning = (
            f"{path}: not valid UTF-8 (first bad byte on line {line}); read as Latin-1. "
            "Check non-ASCII names (e.g. Türkiye) and re-save the file as UTF-8 if they look wrong."
        )
        return data.decode("latin-1"), "latin-1", [warning]


def csv_records(text: str, path: Path, *, delimiter: str = ",") -> list[tuple[int, list[str]]]:
    """CSV (or TSV) records with the physical line on which each starts; blank lines are skipped."""
    csv.field_size_limit(max(csv.field_size_limit(), _FIELD_SIZE_LIMIT))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True, delimiter=delimiter)
    records: list[tuple[int, list[str]]] = []
    start_line = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(
                f"{path}, line {start_line}: the CSV cannot be read ({exc}); "
                "check for an unbalanced quote or a stray NUL byte in this record."
            ) from exc
        if row and any(cell.strip() for cell in row):
            records.append((start_line, row))
        start_line = reader.line_num + 1
    return records


def _mapping_for_header(header: list[str], path: Path) -> tuple[str, list[str], list[str]]:
    """Choose how rows map to columns; returns (mapping name, row column names, warnings)."""
    names = [name.strip() for name in header]
    duplicates = sorted({n for n in names if names.count(n) > 1 and n})
    if duplicates:
        raise InputError(
            f"{path}, line 1: the header repeats the column(s) {', '.join(duplicates)}; "
            "each column must appear once."
        )
    if tuple(names) == AGL1K_PUBLISHED_HEADER:
        return MAPPING_AGL1K_20, list(CLIP_COLUMNS), []
    missing = [c for c in CLIP_COLUMNS if c not in names]
    if missing:
        raise InputError(
            f"{path}, line 1: the header lacks the column(s) {', '.join(missing)} "
            f"(it has {len(names)} names). Use the published AGL1K header "
            f"({len(AGL1K_PUBLISHED_HEADER)} names, rows of {len(CLIP_COLUMNS)} values) or a "
            f"header naming all {len(CLIP_COLUMNS)} columns."
        )
    extra = [n for n in names if n not in CLIP_COLUMNS]
    warnings = (
        [f"{path}: column(s) {', '.join(extra)} are not part of the AGL1K format and were ignored"]
        if extra
        else []
    )
    return MAPPING_HEADER, names, warnings


def number_field(value: str, where: str, column: str) -> float:
    """A finite number from a cell's text, else an :class:`InputError` naming ``where`` and the field.

    ``where`` is the location as shown in messages (``"data.csv, line 7"``, ``"data.parquet, row 3"``).
    """
    # ASCII decimal only (workbench.strict_numbers): float() would take "٣", "1_0" or " inf ".
    number = decimal_value(value)
    if number is None:
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise InputError(
            f"{where}, field {column}: {shown!r} is not a number; "
            "fix the value (the columns may be shifted if this looks like another field)."
        )
    return number


def check_coordinates(latitude: float, longitude: float, where: str) -> None:
    """Latitude in [-90, 90] and longitude in [-180, 180], else an :class:`InputError` naming the field."""
    if not -180.0 <= longitude <= 180.0:
        raise InputError(f"{where}, field longitude: {longitude:g} is outside [-180, 180].")
    if not -90.0 <= latitude <= 90.0:
        raise InputError(f"{where}, field latitude: {latitude:g} is outside [-90, 90].")


def _number(value: str, path: Path, line: int, column: str) -> float:
    return number_field(value, f"{path}, line {line}", column)


def _validated_row(
    cells: dict[str, str], path: Path, line: int
) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for column in _STRIPPED_COLUMNS:
        value = cells[column].strip()
        row[column] = value or None
    for column in _TEXT_COLUMNS:
        row[column] = cells[column] if cells[column] != "" else None
    if row["key"] is None:
        raise InputError(f"{path}, line {line}, field key: the key is empty; every clip needs one.")

    longitude = _number(cells["longitude"], path, line, "longitude")
    latitude = _number(cells["latitude"], path, line, "latitude")
    check_coordinates(latitude, longitude, f"{path}, line {line}")
    row["longitude"], row["latitude"] = longitude, latitude
    altitude = cells["altitude"].strip()
    row["altitude"] = _number(altitude, path, line, "altitude") if altitude else None
    seconds = _number(cells["mp3seconds"], path, line, "mp3seconds")
    if seconds <= 0:
        raise InputError(
            f"{path}, line {line}, field mp3seconds: {seconds:g} is not a positive duration."
        )
    row["mp3seconds"] = seconds
    for column in CATEGORY_COLUMNS:
        value = _number(cells[column], path, line, column)
        if not 0.0 <= value <= 1.0:
            raise InputError(
                f"{path}, line {line}, field {column}: {value:g} is outside [0, 1]; "
                "category values are fractions."
            )
        row[column] = value
    return row


def read_agl1k_text(text: str, path: Path, *, encoding: str = "utf-8") -> DatasetTable:
    """Parse and validate AGL1K CSV text.

    Parameters
    ----------
    text : str
        The decoded file content.
    path : Path
        The file, named in messages.
    encoding : str
        How the text was decoded (reported).

    Returns
    -------
    DatasetTable
        Every row validated; nothing partial.

    Raises
    ------
    InputError
        Header/row width mismatch (naming the line and both counts), missing or repeated columns,
        an empty or repeated key, a non-numeric or out-of-range coordinate, duration or category
        value (naming the line and field), an unreadable CSV record, or no data rows.
    """
    records = csv_records(text, path)
    if not records:
        raise InputError(f"{path}: the file is empty; expected an AGL1K header and data rows.")
    header_line, header = records[0]
    mapping, columns, warnings = _mapping_for_header(header, path)
    if len(records) == 1:
        raise InputError(f"{path}: the file has a header but no data rows.")

    rows: list[dict[str, Any]] = []
    line_numbers: list[int] = []
    first_line_of_key: dict[str, int] = {}
    empty_continent_keys: list[str] = []
    for line, values in records[1:]:
        if len(values) != len(columns):
            hint = (
                f" (the published AGL1K header has {len(AGL1K_PUBLISHED_HEADER)} names and "
                f"rows of {len(CLIP_COLUMNS)} values)"
                if mapping == MAPPING_AGL1K_20
                else ""
            )
            raise InputError(
                f"{path}, line {line}: header/row width mismatch: the header (line {header_line}) "
                f"has {len(header)} names, this row has {len(values)} values{hint}. "
                "Nothing was imported; fix the row or the header."
            )
        row = _validated_row(dict(zip(columns, values, strict=True)), path, line)
        key = row["key"]
        if key in first_line_of_key:
            raise InputError(
                f"{path}, line {line}, field key: {key!r} repeats the key of line "
                f"{first_line_of_key[key]}; keys must be unique."
            )
        first_line_of_key[key] = line
        if row["continent"] is None:
            empty_continent_keys.append(key)
        rows.append(row)
        line_numbers.append(line)
    return DatasetTable(
        path=path,
        encoding=encoding,
        column_mapping=mapping,
        rows=rows,
        line_numbers=line_numbers,
        empty_continent_keys=empty_continent_keys,
        warnings=warnings,
    )


def read_agl1k_csv(path: str | Path, *, format: str = "agl1k") -> DatasetTable:  # noqa: A002
    """Read and validate an AGL1K dataset CSV file.

    Parameters
    ----------
    path : str or Path
        The CSV file (UTF-8, UTF-8 with BOM, or Latin-1).
    format : str
        The table format; only ``"agl1k"`` is known.

    Returns
    -------
    DatasetTable

    Raises
    ------
    InputError
        An unknown format, an unreadable file, or any problem listed in :func:`read_agl1k_text`.
    """
    path = Path(path)
    if format not in SUPPORTED_FORMATS:
        raise InputError(
            f"unknown dataset format {format!r}; supported: {', '.join(SUPPORTED_FORMATS)}"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the dataset file ({exc.strerror or exc}).") from exc
    text, encoding, warnings = decode_table_bytes(data, path)
    table = read_agl1k_text(text, path, encoding=encoding)
    table.warnings[:0] = warnings
    return table
