"""Import services: a dataset CSV or an ALM result file into a project store, all or nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from storage import Store
from storage.models import AlmRun, Clip, Dataset, JudgeRun, MediaRoot, Prediction, utcnow
from workbench.errors import InputError
from workbench.tasks import TaskContext
from workbench.importing.agl1k import DatasetTable, read_agl1k_csv
from workbench.importing.prediction_rows import insert_predictions, prediction_row
from workbench.importing.predictions import iter_prediction_records, scan_prediction_file

# Lists in messages stay readable; the report's ``details`` keep every item.
_SHOWN_IN_MESSAGE = 20


@dataclass
class ImportReport:
    """What an import found and did.

    Attributes
    ----------
    kind : str
        ``"dataset"`` or ``"predictions"``.
    source : str
        The imported file.
    name : str
        Dataset name or model name.
    dry_run : bool
        True when nothing was stored by design.
    stored : bool
        True when the records were committed.
    counts : dict
        Named counts (rows read, stored, skipped, ...).
    warnings : list of str
        Notable facts that did not stop the import (Latin-1 fallback, empty continents, ...).
    problems : list of str
        Defects in the input that were skipped or would stop a real import.
    details : dict
        Full lists behind the messages (keys, line numbers, fields).
    """

    kind: str
    source: str
    name: str
    dry_run: bool = False
    stored: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy."""
        return asdict(self)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _shorten(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOWN_IN_MESSAGE])
    more = len(items) - _SHOWN_IN_MESSAGE
    return f"{shown}, … ({more} more)" if more > 0 else shown


def _audio_paths(
    table: DatasetTable, media_root: Path, report: ImportReport
) -> dict[str, str]:
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
        files = index.find(row["key"], mp3name or None)
        if len(files) == 1:
            found[row["key"]] = index.relative(files[0])[1]
        elif len(files) > 1:
            ambiguous.append(row["key"])
    if escaping:
        report.problems.append(
            f"{len(escaping)} clip(s) name an audio file outside the media root {root} "
            f"(ignored, no audio linked): {_shorten(escaping)}"
        )
        report.details["audio_outside_media_root"] = escaping
    if ambiguous:
        report.problems.append(
            f"{len(ambiguous)} clip(s) match more than one file under the media root (not linked; "
            f"see `aglw media link --dry-run`): {_shorten(ambiguous)}"
        )
        report.details["audio_ambiguous"] = ambiguous
    return found


def import_dataset(
    store: Store,
    path: str | Path,
    *,
    format: str = "agl1k",  # noqa: A002 - mirrors the --format option
    name: str | None = None,
    media_root: str | Path | None = None,
    dry_run: bool = False,
    task: TaskContext | None = None,
) -> ImportReport:
    """Import a dataset CSV as one new dataset, in one transaction.

    Parameters
    ----------
    store : Store
        The project store.
    path : str or Path
        The CSV file.
    format : str
        Table format (``"agl1k"``).
    name : str, optional
        Dataset name; defaults to the file's stem. Must not exist yet.
    media_root : str or Path, optional
        Folder holding the recordings: recorded as the dataset's media root, and each clip whose
        ``mp3name`` exists under it (directly or in a ``<key>/`` subfolder) gets ``audio_path``.
    dry_run : bool
        Validate and report; store nothing.
    task : TaskContext, optional
        Progress and cancel: the file is one item, stored whole or not at all; a cancel
        before the transaction stores nothing (importing again does it all).

    Returns
    -------
    ImportReport

    Raises
    ------
    InputError
        Any problem in the file (see :func:`workbench.importing.agl1k.read_agl1k_text`), a
        missing media root, or a dataset of that name already existing. Nothing is stored.
    """
    path = Path(path)
    task = task or TaskContext()
    task.set_total(1)
    table = read_agl1k_csv(path, format=format)
    dataset_name = (name or path.stem).strip()
    if not dataset_name:
        raise InputError("the dataset name is empty; pass --name NAME")
    report = ImportReport(kind="dataset", source=str(path), name=dataset_name, dry_run=dry_run)
    report.warnings.extend(table.warnings)
    report.details.update(
        encoding=table.encoding,
        column_mapping=table.column_mapping,
        empty_continent_keys=table.empty_continent_keys,
    )
    report.counts.update(rows=len(table.rows), empty_continent=len(table.empty_continent_keys))
    if table.empty_continent_keys:
        report.warnings.append(
            f"{len(table.empty_continent_keys)} clip(s) have an empty continent (stored as "
            f"missing): {_shorten(table.empty_continent_keys)}"
        )

    audio: dict[str, str] = {}
    root: Path | None = None
    if media_root is not None:
        root = Path(media_root).expanduser()
        if not root.is_dir():
            raise InputError(f"media root {root}: not a folder; pass an existing folder.")
        audio = _audio_paths(table, root, report)
        report.counts.update(audio_found=len(audio), audio_missing=len(table.rows) - len(audio))

    with store.session() as session:
        existing = (
            session.execute(select(Dataset).where(Dataset.name == dataset_name)).scalars().first()
        )
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

    sha = _sha256(path)
    # The last safe point: from here the file is stored whole.
    task.check_cancel()
    try:
        with store.write() as session:
            dataset = Dataset(
                name=dataset_name,
                format=format,
                source_path=str(path.resolve()),
                source_sha256=sha,
                column_mapping=table.column_mapping,
            )
            session.add(dataset)
            session.flush()
            if root is not None:
                session.add(MediaRoot(dataset_id=dataset.id, path=str(root.resolve())))
            clip_rows = [
                {**row, "dataset_id": dataset.id, "audio_path": audio.get(row["key"])}
                for row in table.rows
            ]
            session.execute(insert(Clip.__table__), clip_rows)
            linked = _link_waiting_predictions(session, dataset.id)
    except IntegrityError as exc:
        raise InputError(
            f"a dataset named {dataset_name!r} was created meanwhile; nothing was imported. "
            "Import under another --name."
        ) from exc
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
    return int(result.rowcount or 0)


def _choose_dataset(
    session: Any, keys: list[str], dataset: str | None
) -> tuple[str | None, dict[str, int]]:
    """The dataset to link records to, and its key -> clip id map.

    Without an explicit name, the dataset holding most of the file's keys (latest on a tie).
    """
    datasets = session.execute(select(Dataset.id, Dataset.name).order_by(Dataset.id)).all()
    if dataset is not None:
        chosen = [d for d in datasets if d.name == dataset]
        if not chosen:
            known = ", ".join(d.name for d in datasets) or "none imported yet"
            raise InputError(f"no dataset named {dataset!r} (known: {known}).")
        candidates = chosen
    else:
        candidates = datasets
    if not candidates:
        return None, {}
    wanted = set(keys)
    best_name: str | None = None
    best_map: dict[str, int] = {}
    best_hits = -1
    for candidate in candidates:
        clip_ids = {
            key: clip_id
            for key, clip_id in session.execute(
                select(Clip.key, Clip.id).where(Clip.dataset_id == candidate.id)
            ).all()
            if key in wanted
        }
        if len(clip_ids) >= best_hits:
            best_name, best_map, best_hits = candidate.name, clip_ids, len(clip_ids)
    return best_name, best_map


def import_predictions(
    store: Store,
    model: str,
    path: str | Path,
    *,
    dry_run: bool = False,
    skip_malformed: bool = False,
    replace: bool = False,
    dataset: str | None = None,
    task: TaskContext | None = None,
) -> ImportReport:
    """Import one ALM result file as the predictions of ``model``, in one transaction.

    Parameters
    ----------
    store : Store
        The project store.
    model : str
        Name the predictions are filed under (one result file per model).
    path : str or Path
        JSON Lines or JSON array of AGL1K result records.
    dry_run : bool
        Validate and report; store nothing.
    skip_malformed : bool
        Import the good records and report the malformed ones, instead of stopping.
    replace : bool
        Replace the model's earlier predictions (the run keeps its id, so judge runs stay linked).
    dataset : str, optional
        Dataset whose clips the records are linked to; by default the one holding most keys.
    task : TaskContext, optional
        Progress and cancel: the file is one item, stored whole or not at all; a cancel
        before the transaction stores nothing (importing again does it all).

    Returns
    -------
    ImportReport
        Keys not in the dataset, duplicate ``question_id`` lines (first kept) and unknown fields
        are reported; unknown keys are stored without a clip link (metrics use the records' own
        true values, as AGL1K's analysis does).

    Raises
    ------
    InputError
        Malformed records (unless ``skip_malformed``), no importable record, an unknown
        ``dataset``, or predictions for ``model`` already stored (unless ``replace``).
    """
    path = Path(path)
    task = task or TaskContext()
    task.set_total(1)
    model = model.strip()
    if not model:
        raise InputError("the model name is empty; pass --model NAME")
    # Two passes over the file, so that memory stays flat however many records it holds: a scan
    # that keeps only keys and findings, then (when storing) a second read that inserts the
    # records in batches inside the one transaction.
    parsed = scan_prediction_file(path)
    report = ImportReport(kind="predictions", source=str(path), name=model, dry_run=dry_run)
    report.details.update(
        container=parsed.container,
        malformed=[{"line": line, "reason": reason} for line, reason in parsed.malformed],
        duplicates=[
            {"line": line, "first_line": first, "question_id": qid}
            for line, first, qid in parsed.duplicates
        ],
        unknown_fields=parsed.unknown_fields,
    )
    malformed_text = [f"line {line}: {reason}" for line, reason in parsed.malformed]
    if parsed.malformed and not skip_malformed:
        raise InputError(
            f"{path}: {len(parsed.malformed)} malformed record(s): {_shorten(malformed_text)}. "
            f"Nothing was imported; fix them, or pass --skip-malformed to import the "
            f"{len(parsed.records)} good record(s) and skip these."
        )
    if parsed.malformed:
        report.problems.append(
            f"skipped {len(parsed.malformed)} malformed record(s): {_shorten(malformed_text)}"
        )
    if parsed.duplicates:
        report.problems.append(
            f"{len(parsed.duplicates)} duplicate question_id(s) ignored (the first occurrence is "
            "kept): "
            + _shorten([f"line {line} repeats line {first} ({qid})" for line, first, qid in parsed.duplicates])
        )
    if parsed.unknown_fields:
        report.warnings.append(
            "fields not in the AGL1K result format (ignored): "
            + ", ".join(f"{name} (first on line {line})" for name, line in parsed.unknown_fields.items())
        )
    if not parsed.records:
        raise InputError(f"{path}: no importable record; nothing was imported.")

    keys = [record.question_id for record in parsed.records]
    sha = _sha256(path)
    with store.session() as session:
        dataset_name, clip_ids = _choose_dataset(session, keys, dataset)
        existing = session.execute(select(AlmRun).where(AlmRun.model == model)).scalars().first()
        same_file = session.execute(
            select(AlmRun.model).where(AlmRun.source_sha256 == sha, AlmRun.model != model)
        ).scalars().all()
        judge_runs = (
            session.execute(
                select(func.count()).select_from(JudgeRun).where(JudgeRun.alm_run_id == existing.id)
            ).scalar_one()
            if existing is not None
            else 0
        )
        previous = (
            session.execute(
                select(func.count()).select_from(Prediction).where(Prediction.alm_run_id == existing.id)
            ).scalar_one()
            if existing is not None
            else 0
        )
    if existing is not None and not replace:
        raise InputError(
            f"model {model!r} already has {previous} prediction(s), imported "
            f"{existing.imported_at:%Y-%m-%d %H:%M} from {existing.source_path}. Pass --replace to "
            "replace them, or choose another --model."
        )
    if existing is not None:
        report.warnings.append(f"replacing {previous} earlier prediction(s) of model {model!r}")
        if judge_runs:
            report.warnings.append(
                f"{judge_runs} judge run(s) on model {model!r} were made on the replaced "
                "predictions; re-run them if the reasoning changed"
            )
    if same_file:
        report.warnings.append(
            f"the same file is already imported as model(s) {', '.join(same_file)}"
        )

    unknown_keys = [key for key in keys if key not in clip_ids]
    report.details.update(dataset=dataset_name, unknown_keys=unknown_keys)
    if dataset_name is None:
        report.warnings.append(
            "no dataset imported yet: the records are stored without clip links; they are "
            "linked when the dataset is imported"
        )
    elif unknown_keys:
        report.warnings.append(
            f"{len(unknown_keys)} question_id(s) are not in dataset {dataset_name!r} (stored "
            f"without a clip link): {_shorten(unknown_keys)}"
        )
    report.counts.update(
        records=len(parsed.records) + len(parsed.malformed) + len(parsed.duplicates),
        importable=len(parsed.records),
        malformed=len(parsed.malformed),
        duplicates=len(parsed.duplicates),
        unknown_keys=len(unknown_keys),
        linked=len(parsed.records) - len(unknown_keys),
        replaced=previous if existing is not None else 0,
    )
    if dry_run:
        report.counts["stored"] = 0
        task.item_done(str(path))
        return report

    # The last safe point: from here the file is stored whole.
    task.check_cancel()

    try:
        with store.write() as session:
            if existing is not None:
                run = session.get(AlmRun, existing.id)
                session.execute(delete(Prediction).where(Prediction.alm_run_id == run.id))
                run.source_path = str(path.resolve())
                run.source_sha256 = sha
                run.container = parsed.container
                run.seed = parsed.seed
                run.imported_at = utcnow()
            else:
                run = AlmRun(
                    model=model,
                    source_path=str(path.resolve()),
                    source_sha256=sha,
                    container=parsed.container,
                    seed=parsed.seed,
                )
                session.add(run)
            session.flush()
            stored = insert_predictions(session, _rows(path, run.id, clip_ids, keys))
    except IntegrityError as exc:
        raise InputError(
            f"model {model!r} was imported meanwhile by another process; nothing was imported. "
            "Pass --replace or choose another --model."
        ) from exc
    report.stored = True
    report.counts["stored"] = stored
    task.item_done(str(path))
    return report


def _rows(path: Path, run_id: int, clip_ids: dict[str, int], keys: list[str]) -> Iterator[dict[str, Any]]:
    """The file's records as prediction rows, read again; the file must not have changed since
    the scan (its keys are compared in order), else the import stops and nothing is stored."""
    count = 0
    for count, record in enumerate(iter_prediction_records(path), start=1):
        if count > len(keys) or keys[count - 1] != record.question_id:
            raise _changed(path)
        yield prediction_row(
            run_id,
            record.question_id,
            record.values,
            clip_id=clip_ids.get(record.question_id),
            line_no=record.line_no,
        )
    if count != len(keys):
        raise _changed(path)


def _changed(path: Path) -> InputError:
    return InputError(f"{path}: the file changed while it was being imported; nothing was imported. Import it again.")
