"""Reading a dataset table in its own column layout: CSV, TSV, JSON Lines or Parquet, through a
mapping (``design/datasets.md``). Pure: returns validated clip rows, touches no database.

Each record keeps its place in the file (the physical line of a CSV/TSV record or a JSON line,
the row number of a Parquet row), so every problem is reported as one line naming the file,
that place and the field. Nothing partial is returned: the first bad record stops the read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import InputError
from workbench.importing.agl1k import DatasetTable, csv_records, decode_table_bytes
from workbench.importing.mapping import DatasetMapping, apply_mapping

TABLE_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                  ".parquet": "parquet", ".pq": "parquet"}


@dataclass
class SourceRecords:
    """A table's records before the mapping: ``(where, column -> value)`` in file order."""

    path: Path
    encoding: str | None
    columns: list[str]
    records: list[tuple[str, dict[str, Any]]]
    warnings: list[str]


def table_kind(path: Path) -> str:
    """``csv``, ``tsv``, ``jsonl`` or ``parquet`` from the file's extension."""
    kind = TABLE_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InputError(
            f"{path}: unknown table type {path.suffix or '(no extension)'!r}; use .csv, .tsv, .jsonl or .parquet."
        )
    return kind


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the table ({exc.strerror or exc}).") from exc


def _delimited(path: Path, delimiter: str) -> SourceRecords:
    text, encoding, warnings = decode_table_bytes(_read_bytes(path), path)
    records = csv_records(text, path, delimiter=delimiter)
    if not records:
        raise InputError(f"{path}: the file is empty; expected a header and data rows.")
    header_line, header = records[0]
    names = [name.strip() for name in header]
    repeated = sorted({n for n in names if names.count(n) > 1 and n})
    if repeated:
        raise InputError(f"{path}, line {header_line}: the header repeats the column(s) {', '.join(repeated)}; "
                         "each column must appear once.")
    rows = []
    for line, values in records[1:]:
        if len(values) != len(names):
            raise InputError(
                f"{path}, line {line}: header/row width mismatch: the header (line {header_line}) has "
                f"{len(names)} names, this row has {len(values)} values. Nothing was imported; fix the row."
            )
        rows.append((f"{path}, line {line}", dict(zip(names, values, strict=True))))
    return SourceRecords(path, encoding, names, rows, warnings)


def _json_lines(path: Path) -> SourceRecords:
    text, encoding, warnings = decode_table_bytes(_read_bytes(path), path)
    rows = []
    columns: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {number}: not a JSON object ({exc.msg}); one object per line.") from exc
        if not isinstance(record, dict):
            raise InputError(f"{path}, line {number}: a JSON {type(record).__name__}, not an object; "
                             "one object per line.")
        columns.update(dict.fromkeys(record))
        rows.append((f"{path}, line {number}", record))
    return SourceRecords(path, encoding, list(columns), rows, warnings)


def _parquet(path: Path) -> SourceRecords:
    from workbench.extras import has, missing_extra_message

    if not has("pyarrow"):
        raise InputError(missing_extra_message("pyarrow"))
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"{path}: cannot read the Parquet file ({exc}).") from exc
    rows = [(f"{path}, row {index}", record) for index, record in enumerate(table.to_pylist(), start=1)]
    return SourceRecords(path, None, list(table.column_names), rows, [])


def read_source(path: Path) -> SourceRecords:
    """The records of a table file, by its extension (see :data:`TABLE_SUFFIXES`)."""
    kind = table_kind(path)
    if kind == "csv":
        return _delimited(path, ",")
    if kind == "tsv":
        return _delimited(path, "\t")
    if kind == "jsonl":
        return _json_lines(path)
    return _parquet(path)


def mapped_rows(
    records: Iterable[tuple[str, dict[str, Any]]], mapping: DatasetMapping
) -> tuple[list[dict[str, Any]], list[str]]:
    """Clip rows of ``records`` through ``mapping``, with unique keys; returns (rows, places).

    Raises
    ------
    InputError
        The first record that is bad (see :func:`~workbench.importing.mapping.apply_mapping`) or
        whose key repeats an earlier one (both places named).
    """
    rows: list[dict[str, Any]] = []
    places: list[str] = []
    first_place: dict[str, str] = {}
    for where, record in records:
        row = apply_mapping(record, mapping, where)
        key = row["key"]
        if key is not None:
            if key in first_place:
                raise InputError(f"{where}, field key: {key!r} repeats the key of {first_place[key]}; "
                                 "keys must be unique.")
            first_place[key] = where
        rows.append(row)
        places.append(where)
    return rows, places


def read_mapped_table(path: str | Path, mapping: DatasetMapping) -> DatasetTable:
    """Read and validate a table in its own layout through ``mapping``.

    Returns
    -------
    DatasetTable
        Clip rows (Clip columns plus ``extra``), ``line_numbers`` counting records from 1, the
        encoding and the mapping as applied.

    Raises
    ------
    InputError
        An unknown extension, an unreadable file, a mapping naming a column the table lacks, no
        data rows, or any bad record (one line: file, line or row, field).
    """
    path = Path(path)
    source = read_source(path)
    mapping.check_columns(source.columns, str(path))
    if not source.records:
        raise InputError(f"{path}: the table has no data rows.")
    rows, _ = mapped_rows(source.records, mapping)
    return DatasetTable(
        path=path,
        encoding=source.encoding or "parquet",
        column_mapping=f"mapping:{Path(mapping.source).name}",
        rows=rows,
        line_numbers=list(range(1, len(rows) + 1)),
        warnings=list(source.warnings),
        mapping=mapping.as_dict(),
    )
