"""Reading back a Hugging Face export made by ``aglw export dataset --format hf`` (``datasets.md``).

The Parquet files under ``DIR/data/`` give the clips field for field (the columns written by
:mod:`workbench.curation.hf_export`), so table -> project -> hf -> project is exact. The curation
values of an export (localizability, flags, tags) are results of the project that made it, not
clip data: they are not imported. Recordings embedded in the export are written under the media
root given (``--media-root``), at their path relative to the original media root, and linked;
without a media root nothing is written and the report says how many recordings were left out.
Recordings exported as paths only are linked in place under ``--media-root``.

Before anything is written the export is verified against what it states (:func:`verify_export`):
``croissant.json`` present and Croissant 1.0, every data file listed there with the SHA-256 it
has, and every embedded recording decodable by the project's decoder. Each problem is one line
(:class:`ExportNotVerified`); ``verify=False`` (``--no-verify``) imports the folder as it is.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
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
CROISSANT, CROISSANT_VERSION = "croissant.json", "http://mlcommons.org/croissant/1.0"
_SHA256 = re.compile(r"[0-9a-f]{64}")
AGAIN = "export it again with `aglw export dataset --format hf`"
UNVERIFIED_WARNING = ("not verified (--no-verify): croissant.json, the files' SHA-256 and the embedded recordings "
                      "were not checked; imported as the folder is")


class ExportNotVerified(InputError):
    """The export is not as it states: :attr:`problems` holds one line per problem (each naming
    the file and what to do); nothing was imported."""

    def __init__(self, folder: Path, problems: list[str]) -> None:
        self.problems = problems
        self.summary = (f"{folder}: the export is not as it states ({len(problems)} problem(s)); nothing was "
                        f"imported. Restore the files or {AGAIN}; --no-verify imports it as it is")
        super().__init__("\n".join([*problems, self.summary]))


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


def _croissant_files(folder: Path, problems: list[str]) -> dict[str, str] | None:
    """Relative path -> SHA-256 of every file ``croissant.json`` lists; None (a problem added)
    when it is missing, not JSON or not Croissant 1.0 metadata of files with their hashes."""
    path = folder / CROISSANT
    if not path.is_file():
        problems.append(f"{path}: missing; it states the export's files and their SHA-256, so nothing can be "
                        f"checked: restore it or {AGAIN}")
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: not valid JSON (not UTF-8 text: {exc.reason}); restore it or {AGAIN}")
        return None
    except json.JSONDecodeError as exc:
        problems.append(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                        f"restore it or {AGAIN}")
        return None
    distribution = document.get("distribution") if isinstance(document, dict) else None
    reason = ("not a JSON object" if not isinstance(document, dict)
              else f"conformsTo is {document.get('conformsTo')!r}, not {CROISSANT_VERSION!r}"
              if document.get("conformsTo") != CROISSANT_VERSION
              else "no distribution list of files" if not isinstance(distribution, list) else None)
    listed: dict[str, str] = {}
    for item in distribution if reason is None else []:
        if not isinstance(item, dict) or item.get("@type") != "cr:FileObject":
            continue
        url, digest = item.get("contentUrl"), item.get("sha256")
        if not isinstance(url, str) or not url or not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            reason = f"the file object {item.get('@id')!r} lacks a contentUrl or a SHA-256 of 64 hex digits"
            break
        listed[url] = digest
    if reason is None and not listed:
        reason = "it lists no file"
    if reason is not None:
        problems.append(f"{path}: not Croissant 1.0 metadata ({reason}); restore it or {AGAIN}")
        return None
    return listed


def _verify_files(folder: Path, files: list[Path]) -> list[str]:
    """The problems of croissant.json and of the files it lists: missing, outside the folder,
    another SHA-256; and of data files it does not list."""
    problems: list[str] = []
    listed = _croissant_files(folder, problems)
    if listed is None:
        return problems
    root = folder.resolve()
    for relative, stated in sorted(listed.items()):
        path = folder / PurePosixPath(relative)
        if PurePosixPath(relative).is_absolute() or not path.resolve().is_relative_to(root):
            problems.append(f"{folder / CROISSANT}: lists {relative!r}, outside the export folder; {AGAIN}")
        elif not path.is_file():
            problems.append(f"{path}: listed in {CROISSANT} but missing; restore it or {AGAIN}")
        else:
            actual = hashlib.sha256(path.read_bytes()).hexdigest()
            if actual != stated:
                problems.append(f"{path}: SHA-256 {actual} is not the {stated} that {CROISSANT} states (the file "
                                f"changed after the export); restore it or {AGAIN}")
    for path in files:
        if path.relative_to(folder).as_posix() not in listed:
            problems.append(f"{path}: not listed in {CROISSANT} (no SHA-256 to check it against); remove it or {AGAIN}")
    return problems


def _verify_recordings(audio: dict[str, tuple[str, bytes | None]], where: dict[str, str]) -> list[str]:
    """One problem per embedded recording the project's decoder cannot decode, is empty, or
    lacks its bytes while the export embeds the others."""
    from workbench.audio.loader import load_audio

    problems: list[str] = []
    embedded = any(data is not None for _, data in audio.values())
    with tempfile.TemporaryDirectory(prefix="aglw-verify-") as scratch:
        for key, (relative, data) in audio.items():
            at = f"{where[key]}, clip {key!r}: the embedded recording {relative!r}"
            if data is None:
                if embedded:
                    problems.append(f"{at}: its bytes are missing while the export embeds the others; {AGAIN}")
                continue
            if not data:
                problems.append(f"{at} is empty (0 bytes); {AGAIN}")
                continue
            file = Path(scratch) / f"recording{PurePosixPath(relative).suffix}"
            file.write_bytes(data)
            try:
                load_audio(file)
            except Exception as exc:  # noqa: BLE001 - whatever the decoder says, the recording is unusable
                detail = str(exc).replace(f"{file}: ", "").replace(str(file), "it") or type(exc).__name__
                if isinstance(exc, InputError) and "; " in detail:
                    detail = detail.rsplit("; ", 1)[0]  # the decoder's advice is for a file; ours follows
                problems.append(f"{at} cannot be decoded ({detail}); {AGAIN}")
            finally:
                file.unlink(missing_ok=True)
    return problems


def verify_export(folder: str | Path) -> list[str]:
    """The problems of an export folder (see the module doc), one line each; [] when it is as it states."""
    try:
        read_hf_export(folder)
    except ExportNotVerified as exc:
        return exc.problems
    except InputError as exc:
        return [str(exc)]
    return []


def read_hf_export(folder: str | Path, media_root: Path | None = None, *, verify: bool = True) -> HfExport:
    """Read and validate an export folder (see the module doc); ``verify``: check it against what
    it states first (:class:`ExportNotVerified` lists every problem)."""
    from workbench.extras import has, missing_extra_message

    if not has("pyarrow"):
        raise InputError(missing_extra_message("pyarrow"))
    import pyarrow.parquet as pq

    folder = Path(folder)
    files = _data_files(folder)
    problems = _verify_files(folder, files) if verify else []
    rows: list[dict[str, Any]] = []
    audio: dict[str, tuple[str, bytes | None]] = {}
    seen: dict[str, str] = {}
    try:
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
    except InputError as exc:
        if not problems:
            raise
        raise ExportNotVerified(folder, [*problems, str(exc)]) from exc
    if verify:
        problems += _verify_recordings(audio, seen)
    if problems:
        raise ExportNotVerified(folder, problems)
    table_ = DatasetTable(path=folder, encoding="parquet", column_mapping="hf", rows=rows,
                          line_numbers=list(range(1, len(rows) + 1)))
    return HfExport(folder=folder, files=files, table=table_, media_root=media_root, audio=audio)
