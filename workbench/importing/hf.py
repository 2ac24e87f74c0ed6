"""Reading back a Hugging Face export made by ``aglw export dataset --format hf`` (``datasets.md``).

The Parquet files under ``DIR/data/`` give the clips field for field (the columns written by
:mod:`workbench.curation.hf_export`), so table -> project -> hf -> project is exact. The curation
values of an export (localizability, flags, tags) are results of the project that made it, not
clip data: they are not imported. Recordings embedded in the export are written under the media
root given (``--media-root``), at their path relative to the original media root, and linked;
without a media root nothing is written and the report says how many recordings were left out.
Recordings exported as paths only are linked in place under ``--media-root``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from workbench.errors import InputError
from workbench.importing.agl1k import DatasetTable, check_coordinates
from workbench.importing.report import ImportReport, shorten

# export column -> Clip column (the inverse of hf_export.CLIP_FIELDS and AGL1K_FIELDS)
COLUMNS: dict[str, str] = {
    "key": "key", "latitude": "latitude", "longitude": "longitude", "city": "city", "country": "country",
    "continent": "continent", "title": "title", "description": "description", "duration_s": "mp3seconds",
    "licence": "licence", "recordist": "recordist", "url": "url", "recorded_at": "recorded_at",
    "audio_file": "mp3name", "short_key": "short_key", "altitude": "altitude", "human_sounds": "human_sounds",
    "animal": "animal", "music": "music", "natural_sounds": "natural_sounds", "channel": "channel",
    "environment_and_background": "environment_and_background", "sounds_of_things": "sounds_of_things",
    "source_ambiguous_sounds": "source_ambiguous_sounds", "derived": "derived",
}
REQUIRED = ("key", "latitude", "longitude", "audio")


@dataclass
class HfExport:
    """A read export: the clip rows and the recordings it carries."""

    folder: Path
    files: list[Path]
    table: DatasetTable
    media_root: Path | None
    audio: dict[str, tuple[str, bytes | None]] = field(default_factory=dict)  # key -> (relative path, bytes)

    def fingerprint(self) -> str:
        """SHA-256 over the data files (the dataset's ``source_sha256``)."""
        digest = hashlib.sha256()
        for path in self.files:
            digest.update(path.relative_to(self.folder).as_posix().encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()

    def _target(self, relative: str) -> Path | None:
        assert self.media_root is not None
        root = self.media_root.resolve()
        target = (root / PurePosixPath(relative)).resolve()
        return target if target.is_relative_to(root) and not PurePosixPath(relative).is_absolute() else None

    def link(self, report: ImportReport) -> dict[str, str]:
        """Key -> audio path under the media root for every clip whose recording is (or will be) there."""
        embedded = [k for k, (_, data) in self.audio.items() if data is not None]
        report.counts["audio_embedded"] = len(embedded)
        if self.media_root is None:
            if embedded:
                report.warnings.append(
                    f"{len(embedded)} embedded recording(s) were not written: pass --media-root DIR to write them "
                    "there and link them")
            return {}
        linked: dict[str, str] = {}
        escaping: list[str] = []
        for key, (relative, data) in self.audio.items():
            target = self._target(relative)
            if target is None:
                escaping.append(key)
            elif data is not None or target.is_file():
                linked[key] = relative
        if escaping:
            report.problems.append(f"{len(escaping)} clip(s) name an audio path outside the media root (not linked): "
                                   f"{shorten(escaping)}")
        return linked

    def write_recordings(self, report: ImportReport) -> list[Path]:
        """Write the embedded recordings under the media root; returns the files written (an
        identical file already there is kept, a different one stops the import)."""
        from workbench.outputs import write_bytes

        if self.media_root is None:
            return []
        written: list[Path] = []
        try:
            for key, (relative, data) in self.audio.items():
                target = self._target(relative)
                if data is None or target is None:
                    continue
                if target.exists():
                    if target.is_file() and target.read_bytes() == data:
                        continue
                    raise InputError(f"{target}: a different file is already there (recording of clip {key!r}); "
                                     "choose an empty --media-root")
                target.parent.mkdir(parents=True, exist_ok=True)
                write_bytes(target, data, force=False)
                written.append(target)
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)
            raise
        report.counts["audio_written"] = len(written)
        return written


def _data_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder; pass the folder that `aglw export dataset --format hf` wrote.")
    files = sorted((folder / "data").glob("*.parquet"))
    if not files:
        raise InputError(f"{folder}: no data/*.parquet; not a folder written by `aglw export dataset --format hf`.")
    return files


def _row(record: dict[str, Any], where: str) -> dict[str, Any]:
    row: dict[str, Any] = {column: record.get(name) for name, column in COLUMNS.items()}
    if not isinstance(row["key"], str) or not row["key"].strip():
        raise InputError(f"{where}, field key: empty; every clip needs one.")
    for name in ("latitude", "longitude"):
        if not isinstance(row[name], (int, float)):
            raise InputError(f"{where}, field {name}: {row[name]!r} is not a number.")
    check_coordinates(row["latitude"], row["longitude"], where)
    extra = record.get("extra")
    try:
        row["extra"] = json.loads(extra) if extra is not None else None
    except (TypeError, json.JSONDecodeError) as exc:
        raise InputError(f"{where}, field extra: not a JSON object ({exc}).") from exc
    row["derived"] = list(row["derived"]) if row["derived"] else None
    return row


def read_hf_export(folder: str | Path, media_root: Path | None = None) -> HfExport:
    """Read and validate an export folder (see the module doc)."""
    from workbench.extras import has, missing_extra_message

    if not has("pyarrow"):
        raise InputError(missing_extra_message("pyarrow"))
    import pyarrow.parquet as pq

    folder = Path(folder)
    files = _data_files(folder)
    rows: list[dict[str, Any]] = []
    audio: dict[str, tuple[str, bytes | None]] = {}
    seen: dict[str, str] = {}
    for path in files:
        try:
            table = pq.read_table(path)
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: cannot read the Parquet file ({exc}).") from exc
        missing = [c for c in REQUIRED if c not in table.column_names]
        if missing:
            raise InputError(f"{path}: lacks the column(s) {', '.join(missing)}; not written by "
                             "`aglw export dataset --format hf`.")
        for index, record in enumerate(table.to_pylist(), start=1):
            where = f"{path}, row {index}"
            row = _row(record, where)
            if row["key"] in seen:
                raise InputError(f"{where}, field key: {row['key']!r} repeats the key of {seen[row['key']]}; "
                                 "keys must be unique.")
            seen[row["key"]] = where
            value = record.get("audio")
            if value and value.get("path"):
                audio[row["key"]] = (str(value["path"]), value.get("bytes"))
            rows.append(row)
    table_ = DatasetTable(path=folder, encoding="parquet", column_mapping="hf", rows=rows,
                          line_numbers=list(range(1, len(rows) + 1)))
    return HfExport(folder=folder, files=files, table=table_, media_root=media_root, audio=audio)
