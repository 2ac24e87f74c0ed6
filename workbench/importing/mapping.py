"""The mapping of a dataset table onto clip fields (``design/datasets.md``): read, checked, applied.

A mapping is TOML with three tables: ``[columns]`` (clip field = the source column's name),
``[constants]`` (a field with one value for every row) and ``[transforms]`` (field = transform).
Every mistake in the mapping itself is one :class:`~workbench.errors.InputError` naming the
mapping file, the table and the field; a row the mapping cannot turn into a clip is one naming
the data file, the line (or row) and the field. Pure: no store.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from workbench.errors import InputError
from workbench.importing.agl1k import check_coordinates
from workbench.strict_numbers import decimal_value

# clip field (as a mapping names it) -> Clip column
FIELD_COLUMNS: dict[str, str] = {
    "key": "key",
    "latitude": "latitude",
    "longitude": "longitude",
    "title": "title",
    "description": "description",
    "city": "city",
    "country": "country",
    "continent": "continent",
    "audio": "mp3name",
    "duration_s": "mp3seconds",
    "licence": "licence",
    "recordist": "recordist",
    "url": "url",
    "recorded_at": "recorded_at",
}
FIELDS = tuple(FIELD_COLUMNS)
NUMBER_FIELDS = frozenset({"latitude", "longitude", "duration_s"})
# Kept verbatim (free text may start or end with spaces); the other text fields are stripped.
VERBATIM_FIELDS = frozenset({"title", "description"})
SECTIONS = ("columns", "constants", "transforms")

_DMS_SEPARATORS = re.compile(r"[\s°º˚'′’‘\"″”“:]+")
_DMS_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # ASCII digits only: \d would take other scripts' digits
_HEMISPHERES = {"latitude": {"N": 1.0, "S": -1.0}, "longitude": {"E": 1.0, "W": -1.0}}


def dms_degrees(text: str, field_name: str) -> float:
    """Decimal degrees of ``41°24'12.2"N``-style text (degrees, minutes, seconds, hemisphere).

    Accepts one to three numbers (degrees; minutes; seconds) separated by degree, minute and
    second marks, spaces or colons; a hemisphere letter before or after (N/S for a latitude,
    E/W for a longitude) or a sign; plain decimal degrees too.

    Raises
    ------
    ValueError
        The text is not of that form, minutes or seconds are 60 or more, or the hemisphere
        letter does not belong to ``field_name``.
    """
    body = text.strip().upper()
    hemisphere = None
    if body and body[0].isalpha():
        hemisphere, body = body[0], body[1:].strip()
    elif body and body[-1].isalpha():
        hemisphere, body = body[-1], body[:-1].strip()
    sign = 1.0
    if body[:1] in ("-", "+"):
        sign, body = (-1.0 if body[0] == "-" else 1.0), body[1:].strip()
    numbers = _DMS_NUMBER.findall(body)
    if not numbers or len(numbers) > 3 or _DMS_SEPARATORS.sub("", _DMS_NUMBER.sub("", body)):
        raise ValueError("not degrees, minutes and seconds (e.g. 41°24'12.2\"N)")
    parts = [float(n) for n in numbers] + [0.0] * (3 - len(numbers))
    if parts[1] >= 60 or parts[2] >= 60:
        raise ValueError("minutes and seconds must be below 60")
    if hemisphere is not None:
        signs = _HEMISPHERES.get(field_name, {})
        if hemisphere not in signs:
            allowed = "/".join(signs) or "none"
            raise ValueError(f"the hemisphere {hemisphere!r} does not fit a {field_name} (use {allowed})")
        if sign < 0:
            raise ValueError("both a minus sign and a hemisphere letter")
        sign = signs[hemisphere]
    return sign * (parts[0] + parts[1] / 60.0 + parts[2] / 3600.0)


def _country_by(attribute: str, label: str) -> Callable[[str, str], str]:
    def convert(text: str, field_name: str) -> str:
        import pycountry

        country = pycountry.countries.get(**{attribute: text.strip().upper()})
        if country is None:
            raise ValueError(f"not an ISO 3166-1 {label} country code")
        return str(country.name)

    return convert


# transform -> (the fields it applies to, text -> value (raises ValueError))
TRANSFORMS: dict[str, tuple[frozenset[str], Callable[[str, str], Any]]] = {
    "dms": (frozenset({"latitude", "longitude"}), dms_degrees),
    "iso2": (frozenset({"country"}), _country_by("alpha_2", "alpha-2")),
    "iso3": (frozenset({"country"}), _country_by("alpha_3", "alpha-3")),
}


@dataclass(frozen=True)
class DatasetMapping:
    """Which source column gives which clip field, the constants and the transforms."""

    columns: dict[str, str] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)
    transforms: dict[str, str] = field(default_factory=dict)
    source: str = "the mapping"

    def as_dict(self) -> dict[str, Any]:
        """The mapping as stored with the dataset (``dataset.mapping``)."""
        return {"columns": dict(self.columns), "constants": dict(self.constants), "transforms": dict(self.transforms)}

    def check_columns(self, available: list[str], data: str) -> None:
        """Every mapped column exists in the data (``available``), else one line naming it."""
        known = set(available)
        for name, column in self.columns.items():
            if column not in known:
                shown = ", ".join(available[:30]) + (", …" if len(available) > 30 else "")
                raise InputError(
                    f"{self.source}, [columns] {name}: column {column!r} is not in {data} "
                    f"(its columns: {shown or 'none'}); fix the column name in the mapping."
                )


def identity_mapping(available: list[str], source: str) -> DatasetMapping:
    """The mapping of a source whose columns carry the field names themselves (a folder without
    ``--mapping``): each field whose name is a column."""
    names = set(available)
    return DatasetMapping(columns={f: f for f in FIELDS if f in names}, source=source)


def _mapping_error(source: str, where: str, message: str) -> InputError:
    return InputError(f"{source}, {where}: {message}")


def parse_mapping(data: Mapping[str, Any], source: str, *, key_required: bool = True) -> DatasetMapping:
    """Check a mapping's content (as read from TOML) and return it.

    Parameters
    ----------
    data
        The TOML document as a dict.
    source
        The mapping file, named in messages.
    key_required
        A table needs ``[columns] key``; a folder derives keys from file paths.

    Raises
    ------
    InputError
        An unknown section, field or transform, a value of the wrong type, a field given twice
        (as a column and a constant), a transform on a field it does not apply to, a constant
        the transform refuses, or a required field (key, latitude, longitude) that is not given.
    """
    for section, value in data.items():
        if section not in SECTIONS:
            raise _mapping_error(source, f"[{section}]", f"unknown section; a mapping has {', '.join(SECTIONS)}")
        if not isinstance(value, dict):
            raise _mapping_error(source, section, f"expected a table [{section}], got {type(value).__name__}")
    sections = {name: dict(data.get(name, {})) for name in SECTIONS}
    for section, entries in sections.items():
        for name in entries:
            if name not in FIELD_COLUMNS:
                raise _mapping_error(
                    source, f"[{section}] {name}", f"unknown field; the fields are {', '.join(FIELDS)}"
                )
    columns: dict[str, str] = {}
    for name, column in sections["columns"].items():
        if not isinstance(column, str) or not column:
            raise _mapping_error(
                source, f"[columns] {name}", f"expected a column name (text), got {column!r}"
            )
        columns[name] = column
    transforms: dict[str, str] = {}
    for name, transform in sections["transforms"].items():
        if not isinstance(transform, str) or transform not in TRANSFORMS:
            raise _mapping_error(
                source, f"[transforms] {name}", f"unknown transform {transform!r}; known: {', '.join(TRANSFORMS)}"
            )
        if name not in TRANSFORMS[transform][0]:
            fits = ", ".join(sorted(TRANSFORMS[transform][0]))
            raise _mapping_error(source, f"[transforms] {name}", f"the transform {transform!r} applies to {fits} only")
        transforms[name] = transform
    constants: dict[str, Any] = {}
    for name, value in sections["constants"].items():
        where = f"[constants] {name}"
        if name in columns:
            raise _mapping_error(source, where, f"also mapped to column {columns[name]!r}; give one or the other")
        if name == "key":
            raise _mapping_error(source, where, "keys are unique per clip; map [columns] key to a column instead")
        try:
            constants[name] = convert_value(name, value, transforms.get(name))
        except ValueError as exc:
            raise _mapping_error(source, where, f"{value!r}: {exc}") from exc
    required = ("key", "latitude", "longitude") if key_required else ("latitude", "longitude")
    for name in required:
        if name not in columns and name not in constants:
            raise _mapping_error(source, "[columns]", f"{name} is required; name the column that gives it")
    return DatasetMapping(columns=columns, constants=constants, transforms=transforms, source=source)


def load_mapping(path: str | Path, *, key_required: bool = True) -> DatasetMapping:
    """Read and check a mapping file (see :func:`parse_mapping`); TOML errors name the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"{path}: cannot read the mapping ({reason}).") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc}); see the mapping format in the README.") from exc
    return parse_mapping(data, str(path), key_required=key_required)


def _kind(value: Any) -> str:
    return {list: "a list", dict: "a table", bool: "true/false"}.get(type(value), type(value).__name__)


def convert_value(name: str, value: Any, transform: str | None) -> Any:
    """One source value as the clip field ``name`` holds it (None when empty).

    Raises
    ------
    ValueError
        With what is wrong (not a number, the wrong type, a transform that refuses the value).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (bool, list, dict)):
        raise ValueError(f"expected {'a number' if name in NUMBER_FIELDS else 'text'}, got {_kind(value)}")
    if transform is not None:
        text = value if isinstance(value, str) else repr(value)
        if not text.strip():
            return None
        return TRANSFORMS[transform][1](text, name)
    if name in NUMBER_FIELDS:
        if isinstance(value, str):
            if not value.strip():
                return None
            number = decimal_value(value)  # ASCII decimal only: float() would take "٣" or "1_0"
            if number is None:
                raise ValueError("not a number (finite, written with the digits 0-9)")
            return number
        if not isinstance(value, (int, float, Decimal)):
            raise ValueError(f"expected a number, got {_kind(value)}")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        return number
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        text = value.isoformat()
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, (str, int, Decimal)):
        text = str(value)
    else:
        raise ValueError(f"expected text, got {_kind(value)}")
    if name not in VERBATIM_FIELDS:
        text = text.strip()
    return text or None


def json_safe(value: Any) -> Any:
    """A source value as JSON can hold it exactly (extra metadata): NaN becomes null, times ISO text."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def apply_mapping(record: Mapping[str, Any], mapping: DatasetMapping, where: str) -> dict[str, Any]:
    """One source record as clip columns, ``extra`` holding the columns no field maps.

    Parameters
    ----------
    record
        Source column -> raw value (text from CSV, JSON values, Parquet values).
    mapping
        The checked mapping.
    where
        The record's place for messages: ``"data.csv, line 7"`` or ``"data.parquet, row 3"``.

    Raises
    ------
    InputError
        One line naming ``where`` and the field: an empty key or coordinate, a value that is not
        a number, a value of the wrong type, a transform that fails, coordinates out of range or
        a duration that is not positive.
    """
    row: dict[str, Any] = {column: None for column in FIELD_COLUMNS.values()}
    for name, value in mapping.constants.items():
        row[FIELD_COLUMNS[name]] = value
    for name, column in mapping.columns.items():
        value = record.get(column)
        try:
            row[FIELD_COLUMNS[name]] = convert_value(name, value, mapping.transforms.get(name))
        except ValueError as exc:
            shown = value if not isinstance(value, str) or len(value) <= 40 else value[:37] + "..."
            transform = mapping.transforms.get(name)
            via = f" (transform {transform})" if transform else ""
            raise InputError(
                f"{where}, field {name} (column {column!r}){via}: {shown!r}: {exc}; fix the value or the mapping."
            ) from exc
    mapped = set(mapping.columns.values())
    row["extra"] = {column: json_safe(value) for column, value in record.items() if column not in mapped} or None
    for name in ("key", "latitude", "longitude"):
        if row[FIELD_COLUMNS[name]] is None and (name != "key" or "key" in mapping.columns):
            column = mapping.columns.get(name)
            source = f" (column {column!r})" if column else ""
            raise InputError(f"{where}, field {name}{source}: empty; every clip needs a {name}.")
    check_coordinates(row["latitude"], row["longitude"], where)
    seconds = row["mp3seconds"]
    if seconds is not None and seconds <= 0:
        raise InputError(f"{where}, field duration_s: {seconds:g} is not a positive duration.")
    return row


__all__ = [
    "FIELDS", "FIELD_COLUMNS", "TRANSFORMS", "DatasetMapping", "apply_mapping", "convert_value", "dms_degrees",
    "identity_mapping", "json_safe", "load_mapping", "parse_mapping",
]
