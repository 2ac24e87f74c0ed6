"""Dataset import: an AGL1K CSV, a table in its own layout, a folder of recordings or a Hugging
Face export made by ``aglw export dataset --format hf``, stored as one new dataset, all or nothing.

The readers (:mod:`~workbench.importing.agl1k`, :mod:`~workbench.importing.tables`,
:mod:`~workbench.importing.folder`, :mod:`~workbench.importing.hf`) validate the whole source and
return plain clip rows; this module derives what is missing (country and continent from the
coordinates, for mapped sources), links the recordings by the one rule of :mod:`workbench.media`
and stores the rows in one transaction. ``dry_run`` does all of it but the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError

from storage import Store
from storage.models import Clip, Dataset, MediaRoot, Prediction
from workbench.errors import InputError
from workbench.importing.agl1k import DatasetTable, read_agl1k_csv
from workbench.importing.report import ImportReport, file_sha256, shorten
from workbench.tasks import TaskContext

FORMATS = ("agl1k", "table", "folder", "hf")
# Every row stored carries these columns (an executemany insert needs one set of keys).
_ROW_COLUMNS = (
    "key", "short_key", "longitude", "latitude", "altitude", "description", "title", "mp3name", "mp3seconds",
    "city", "country", "continent", "human_sounds", "animal", "music", "natural_sounds", "channel",
    "environment_and_background", "sounds_of_things", "source_ambiguous_sounds", "licence", "recordist", "url",
    "recorded_at", "extra", "derived", "audio_path",
)


def _audio_paths(table: DatasetTable, media_root: Path, report: ImportReport) -> dict[str, str]:
    """Clip key -> audio path relative to the media root, by the one rule of :mod:`workbench.media`."""
    from workbench.media import MediaIndex

    root = media_root.resolve()
    index = MediaIndex([root])
    found: dict[str, str] = {}
    escaping: list[str] = []
    ambiguous: list[str] = []
    for row in table.rows:
        mp3name = row["mp3name"]
        if mp3name and not (root / mp3name).resolve().is_relative_to(root):
            escaping.append(row["key"])
            continue
        files = index.find(row["key"], mp3name or None, row.get("audio_path"))
        if len(files) == 1:
            found[row["key"]] = index.relative(files[0])[1]
        elif len(files) > 1:
            ambiguous.append(row["key"])
    if escaping:
        report.problems.append(
            f"{len(escaping)} clip(s) name an audio file outside the media root {root} "
            f"(ignored, no audio linked): {shorten(escaping)}"
        )
        report.details["audio_outside_media_root"] = escaping
    if ambiguous:
        report.problems.append(
            f"{len(ambiguous)} clip(s) match more than one file under the media root (not linked; "
            f"see `aglw media link --dry-run`): {shorten(ambiguous)}"
        )
        report.details["audio_ambiguous"] = ambiguous
    return found


def _read(
    path: Path, format: str, mapping: str | Path | None, media_root: Path | None, verify: bool = True  # noqa: A002
) -> tuple[DatasetTable, Any]:
    """The validated source, and (for an export with embedded audio) the recordings to write."""
    if format not in FORMATS:
        raise InputError(f"unknown dataset format {format!r}; supported: {', '.join(FORMATS)}")
    if mapping is not None and format in ("agl1k", "hf"):
        raise InputError(f"--mapping is for --format table or folder; --format {format} has its own layout")
    if format == "agl1k":
        return read_agl1k_csv(path, format=format), None
    if format == "table":
        if mapping is None:
            raise InputError("--format table needs --mapping MAPPING.toml (which column gives which field; see the README)")
        from workbench.importing.mapping import load_mapping
        from workbench.importing.tables import read_mapped_table

        return read_mapped_table(path, load_mapping(mapping)), None
    if format == "folder":
        if media_root is not None:
            raise InputError("--format folder links the recordings in place: the folder is the media root; "
                             "drop --media-root")
        from workbench.importing.folder import read_folder

        return read_folder(path, mapping), None
    from workbench.importing.hf import read_hf_export

    export = read_hf_export(path, media_root, verify=verify)
    return export.table, export


def import_dataset(
    store: Store,
    path: str | Path,
    *,
    format: str = "agl1k",  # noqa: A002 - mirrors the --format option
    name: str | None = None,
    mapping: str | Path | None = None,
    media_root: str | Path | None = None,
    dry_run: bool = False,
    verify: bool = True,
    task: TaskContext | None = None,
) -> ImportReport:
    """Import a dataset as one new dataset, in one transaction.

    Parameters
    ----------
    store : Store
        The project store.
    path : str or Path
        The AGL1K CSV, the table, the folder of recordings or the export folder.
    format : str
        ``"agl1k"``, ``"table"`` (needs ``mapping``), ``"folder"`` or ``"hf"`` (see ``datasets.md``).
    name : str, optional
        Dataset name; defaults to the file's stem (the folder's name). Must not exist yet.
    mapping : str or Path, optional
        The mapping TOML of a table or folder.
    media_root : str or Path, optional
        Folder holding the recordings: recorded as the dataset's media root, and each clip whose
        audio file exists under it gets ``audio_path``. A table whose mapping names an ``audio``
        column defaults to the table's folder; a folder is its own media root; for an export with
        embedded recordings this is where they are written (nothing is written without it).
    dry_run : bool
        Validate and report; store (and write) nothing.
    verify : bool
        ``"hf"``: check the export against what it states first (``croissant.json``, every
        file's SHA-256, every embedded recording decodable); ``False`` imports it as it is, with
        a warning.
    task : TaskContext, optional
        Progress and cancel: the source is one item, stored whole or not at all; a cancel
        before the transaction stores nothing (importing again does it all).

    Returns
    -------
    ImportReport

    Raises
    ------
    InputError
        Any problem in the source (one line: file, line or row, field), a missing media root, or
        a dataset of that name already existing; an export not as it states
        (:class:`~workbench.importing.hf.ExportNotVerified`, one line per problem). Nothing is stored.
    """
    path = Path(path)
    task = task or TaskContext()
    task.set_total(1)
    root = Path(media_root).expanduser() if media_root is not None else None
    if root is not None and format != "hf" and not root.is_dir():
        raise InputError(f"media root {root}: not a folder; pass an existing folder.")
    table, export = _read(path, format, mapping, root, verify)
    dataset_name = (name or (path.resolve().name if path.is_dir() else path.stem)).strip()
    if not dataset_name:
        raise InputError("the dataset name is empty; pass --name NAME")
    report = ImportReport(kind="dataset", source=str(path), name=dataset_name, dry_run=dry_run)
    report.warnings.extend(table.warnings)
    if export is not None and not verify:
        from workbench.importing.hf import UNVERIFIED_WARNING

        report.warnings.append(UNVERIFIED_WARNING)
    report.details.update(encoding=table.encoding, column_mapping=table.column_mapping)
    report.counts["rows"] = len(table.rows)
    if format in ("table", "folder"):
        from workbench.importing.places import derive_places

        derived = derive_places(table.rows)
        report.counts.update(derived_country=derived["country"], derived_continent=derived["continent"])
        if any(derived.values()):
            report.warnings.append(
                f"country derived from the coordinates for {derived['country']} clip(s), continent for "
                f"{derived['continent']} (offline gazetteer; marked as derived)"
            )
    empty_continent = [row["key"] for row in table.rows if row.get("continent") is None]
    report.details["empty_continent_keys"] = empty_continent
    report.counts["empty_continent"] = len(empty_continent)
    if empty_continent:
        report.warnings.append(
            f"{len(empty_continent)} clip(s) have an empty continent (stored as missing): {shorten(empty_continent)}"
        )

    if table.media_root is not None:
        root = table.media_root
    elif root is None and format == "table" and table.mapping and "audio" in table.mapping["columns"]:
        root = path.resolve().parent  # datasets.md: audio paths are relative to the table's folder
    audio: dict[str, str] = {}
    if export is not None:
        audio = export.link(report)
    elif table.media_root is not None:
        audio = {row["key"]: row["audio_path"] for row in table.rows}
    elif root is not None:
        audio = _audio_paths(table, root, report)
    if root is not None:
        report.counts.update(audio_found=len(audio), audio_missing=len(table.rows) - len(audio))

    with store.session() as session:
        existing = session.execute(select(Dataset).where(Dataset.name == dataset_name)).scalars().first()
        if existing is not None:
            n_clips = session.execute(
                select(func.count()).select_from(Clip).where(Clip.dataset_id == existing.id)
            ).scalar_one()
            raise InputError(
                f"a dataset named {dataset_name!r} already exists ({n_clips} clips, imported "
                f"{existing.imported_at:%Y-%m-%d %H:%M}); its clips may carry labels and "
                "results, so it is not overwritten. Import under another --name."
            )
    if dry_run:
        report.counts["clips_stored"] = 0
        task.item_done(str(path))
        return report

    sha = file_sha256(path) if path.is_file() else (export.fingerprint() if export is not None else None)
    # The last safe point: from here the source is stored whole.
    task.check_cancel()
    written = export.write_recordings(report) if export is not None else []
    try:
        with store.write() as session:
            dataset = Dataset(
                name=dataset_name,
                format=format,
                source_path=str(path.resolve()),
                source_sha256=sha,
                column_mapping=table.column_mapping,
                mapping=table.mapping,
            )
            session.add(dataset)
            session.flush()
            if root is not None:
                session.add(MediaRoot(dataset_id=dataset.id, path=str(root.resolve())))
            clip_rows = [
                {**{c: row.get(c) for c in _ROW_COLUMNS}, "dataset_id": dataset.id, "audio_path": audio.get(row["key"])}
                for row in table.rows
            ]
            session.execute(insert(Clip.__table__), clip_rows)
            linked = _link_waiting_predictions(session, dataset.id)
    except BaseException as exc:
        for file in written:  # all or nothing: the recordings written for this import go too
            file.unlink(missing_ok=True)
        if isinstance(exc, IntegrityError):
            raise InputError(
                f"a dataset named {dataset_name!r} was created meanwhile; nothing was imported. "
                "Import under another --name."
            ) from exc
        raise
    report.stored = True
    report.counts["clips_stored"] = len(table.rows)
    task.item_done(str(path))
    if linked:
        report.counts["predictions_linked"] = linked
        report.warnings.append(f"{linked} prediction(s) imported before this dataset are now linked to its clips")
    return report


def _link_waiting_predictions(session: Any, dataset_id: int) -> int:
    """Link predictions stored without a clip (imported before any dataset) to this dataset's
    clips of the same key, in the import's transaction; returns how many were linked."""
    key_to_clip = (
        select(Clip.id)
        .where(Clip.dataset_id == dataset_id, Clip.key == Prediction.question_id)
        .scalar_subquery()
    )
    keys = select(Clip.key).where(Clip.dataset_id == dataset_id)
    result = session.execute(
        update(Prediction)
        .where(Prediction.clip_id.is_(None), Prediction.question_id.in_(keys))  # type: ignore[union-attr]
        .values(clip_id=key_to_clip)
        .execution_options(synchronize_session=False)
    )
    from workbench.importing.prediction_rows import remeasure_from_clips

    remeasure_from_clips(session, dataset_id)  # their distances are measured from the clips now
    return int(result.rowcount or 0)
