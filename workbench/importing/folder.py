"""A folder of recordings as a dataset (``design/datasets.md``): every audio file below it is a
clip, its metadata from a sidecar through the same mapping as a table. Pure: touches no database.

* Key: the file's path relative to the folder, without its extension (``site/dawn.wav`` ->
  ``site/dawn``), unless the mapping names a key column.
* Metadata: one ``metadata.csv`` in the folder (rows matched to files by the mapped ``audio``
  column, else a ``file_name`` column as in Hugging Face's audio folders, else by key), or else a
  ``NAME.json`` beside each recording (``dawn.json`` for ``dawn.wav``).
* The folder becomes the dataset's media root and each clip's recording is linked in place;
  a recording reached through a link that leads out of the folder is not a clip of it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath
from typing import Any

from workbench.errors import InputError
from workbench.importing.agl1k import DatasetTable, decode_table_bytes
from workbench.importing.mapping import DatasetMapping, identity_mapping, load_mapping
from workbench.importing.tables import mapped_rows, read_source
from workbench.media import AUDIO_SUFFIXES

METADATA_TABLE = "metadata.csv"
FILE_NAME_COLUMN = "file_name"


def recordings(root: Path) -> dict[str, Path]:
    """Key -> file of every recording below ``root`` (resolved; links out of ``root`` skipped).

    Raises
    ------
    InputError
        Two recordings give the same key (``a.wav`` and ``a.mp3``), or there is none.
    """
    found: dict[str, Path] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix.lower() not in AUDIO_SUFFIXES or name.startswith("."):
                continue
            if not path.resolve().is_relative_to(root):
                continue
            relative = PurePosixPath(path.relative_to(root).as_posix())
            key = str(relative.with_suffix(""))
            if key in found:
                raise InputError(
                    f"{root}: {found[key].relative_to(root).as_posix()} and {relative} give the same clip key "
                    f"{key!r}; keep one recording per name."
                )
            found[key] = path
    if not found:
        raise InputError(f"{root}: no recordings below this folder (looked for {', '.join(sorted(AUDIO_SUFFIXES))}).")
    return found


def _json_sidecar(path: Path) -> dict[str, Any]:
    text, _, _ = decode_table_bytes(path.read_bytes(), path)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}).") from exc
    if not isinstance(record, dict):
        raise InputError(f"{path}: a JSON {type(record).__name__}, not an object of metadata fields.")
    return record


def _sidecar_records(root: Path, files: dict[str, Path]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    records = []
    columns: dict[str, None] = {}
    for key, audio in files.items():
        sidecar = audio.with_suffix(".json")
        if not sidecar.is_file():
            raise InputError(
                f"{audio}: no metadata for this recording (no {sidecar.name} beside it and no "
                f"{METADATA_TABLE} in {root}); add one, or move the recording out of the folder."
            )
        record = _json_sidecar(sidecar)
        columns.update(dict.fromkeys(record))
        records.append((str(sidecar), record))
    return records, list(columns)


def _match_table(
    root: Path, table: Path, records: list[tuple[str, dict[str, Any]]], mapping: DatasetMapping, files: dict[str, Path]
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Key of the recording -> its metadata row."""
    by_path = {PurePosixPath(p.relative_to(root).as_posix()): key for key, p in files.items()}
    column = mapping.columns.get("audio") or (FILE_NAME_COLUMN if records and FILE_NAME_COLUMN in records[0][1] else None)
    if column is None and "key" not in mapping.columns:
        raise InputError(
            f"{table}: cannot tell which recording a row describes; map [columns] audio to the column holding "
            f"its file name (or name that column {FILE_NAME_COLUMN!r}), or map [columns] key."
        )
    matched: dict[str, tuple[str, dict[str, Any]]] = {}
    for where, record in records:
        if column is not None:
            name = str(record.get(column) or "").strip()
            key = by_path.get(PurePosixPath(name))
            what = f"field audio (column {column!r}): {name!r}"
        else:
            name = str(record.get(mapping.columns["key"]) or "").strip()
            key = name if name in files else None
            what = f"field key: {name!r}"
        if key is None:
            raise InputError(f"{where}, {what} names no recording below {root}; fix the row or add the recording.")
        if key in matched:
            raise InputError(f"{where}, {what}: the recording is already described by {matched[key][0]}.")
        matched[key] = (where, record)
    return matched


def read_folder(path: str | Path, mapping_path: str | Path | None = None) -> DatasetTable:
    """Read a folder of recordings with sidecar metadata (see the module doc).

    Returns
    -------
    DatasetTable
        One row per recording (Clip columns, ``extra``, and ``audio_path`` relative to the
        folder), ``media_root`` the folder.

    Raises
    ------
    InputError
        Not a folder, no recordings, a recording without metadata, a metadata row naming no
        recording, a bad mapping, or any bad value (one line: file, line, field).
    """
    root = Path(path).expanduser()
    if not root.is_dir():
        raise InputError(f"{root}: not a folder; pass the folder that holds the recordings.")
    root = root.resolve()
    files = recordings(root)
    table = root / METADATA_TABLE
    warnings: list[str] = []
    if table.is_file():
        source = read_source(table)
        records, columns, encoding = source.records, source.columns, source.encoding
        warnings.extend(source.warnings)
    else:
        (records, columns), encoding = _sidecar_records(root, files), "utf-8"
    mapping = (
        load_mapping(mapping_path, key_required=False)
        if mapping_path is not None
        else identity_mapping(columns, f"{root} (no --mapping: columns named as the fields)")
    )
    mapping.check_columns(columns, str(table) if table.is_file() else f"the sidecar files of {root}")
    if table.is_file():
        matched = _match_table(root, table, records, mapping, files)
        missing = [k for k in files if k not in matched]
        if missing:
            raise InputError(
                f"{files[missing[0]]}: no row of {table} describes this recording"
                + (f" (nor {len(missing) - 1} other(s))" if len(missing) > 1 else "")
                + "; add rows for them, or move them out of the folder."
            )
        ordered = [(key, matched[key]) for key in files]
    else:
        ordered = list(zip(files, records, strict=True))
    rows, _ = mapped_rows([record for _, record in ordered], mapping)
    seen: dict[str, str] = {}
    for (key, (where, _)), row in zip(ordered, rows, strict=True):
        relative = files[key].relative_to(root).as_posix()
        row["key"] = row["key"] or key
        if row["key"] in seen:
            raise InputError(f"{where}, field key: {row['key']!r} repeats the key of {seen[row['key']]}; "
                             "keys must be unique.")
        seen[row["key"]] = where
        row["mp3name"] = row["mp3name"] or relative
        row["audio_path"] = relative
        if row["mp3seconds"] is None:
            row["mp3seconds"] = _duration(files[key])
    return DatasetTable(
        path=root,
        encoding=encoding or "utf-8",
        column_mapping=f"mapping:{Path(mapping_path).name}" if mapping_path is not None else "folder",
        rows=rows,
        line_numbers=list(range(1, len(rows) + 1)),
        warnings=warnings,
        mapping=mapping.as_dict(),
        media_root=root,
    )


def _duration(path: Path) -> float | None:
    """The recording's duration from its header (no decode); None when the header does not say."""
    import soundfile

    try:
        info = soundfile.info(str(path))
    except (RuntimeError, OSError, soundfile.LibsndfileError):
        return None
    return float(info.duration) if info.duration and info.duration > 0 else None
