"""Import service for ALM result files: one file is one model's predictions, all or nothing.

Datasets are imported by :mod:`workbench.importing.datasets`; :class:`ImportReport` is shared
(:mod:`workbench.importing.report`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError

from storage import Store
from storage.models import AlmRun, Clip, Dataset, JudgeRun, Prediction, utcnow
from workbench.errors import InputError
from workbench.tasks import TaskContext
from workbench.importing.report import ImportReport, file_sha256, shorten
from workbench.importing.prediction_rows import (
    clip_positions,
    insert_predictions,
    prediction_row,
    truth_disagreements,
)
from workbench.importing.predictions import iter_prediction_records, scan_prediction_file


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
        true values, as AGL1K's analysis does). Records whose true position disagrees with their
        clip's are reported (count, first keys, largest disagreement); every distance is
        measured from the clip's position.

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
            f"{path}: {len(parsed.malformed)} malformed record(s): {shorten(malformed_text)}. "
            f"Nothing was imported; fix them, or pass --skip-malformed to import the "
            f"{len(parsed.records)} good record(s) and skip these."
        )
    if parsed.malformed:
        report.problems.append(
            f"skipped {len(parsed.malformed)} malformed record(s): {shorten(malformed_text)}"
        )
    if parsed.duplicates:
        report.problems.append(
            f"{len(parsed.duplicates)} duplicate question_id(s) ignored (the first occurrence is "
            "kept): "
            + shorten([f"line {line} repeats line {first} ({qid})" for line, first, qid in parsed.duplicates])
        )
    if parsed.unknown_fields:
        report.warnings.append(
            "fields not in the AGL1K result format (ignored): "
            + ", ".join(f"{name} (first on line {line})" for name, line in parsed.unknown_fields.items())
        )
    if not parsed.records:
        raise InputError(f"{path}: no importable record; nothing was imported.")

    keys = [record.question_id for record in parsed.records]
    sha = file_sha256(path)
    with store.session() as session:
        dataset_name, clip_ids = _choose_dataset(session, keys, dataset)
        positions = clip_positions(session, clip_ids)  # the truth every distance is measured from
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
            f"without a clip link): {shorten(unknown_keys)}"
        )
    disagreements = truth_disagreements(parsed.records, clip_ids, positions)
    report.details.update(true_position_disagreements=disagreements.as_dict())
    if disagreements.message():
        report.warnings.append(disagreements.message())
    report.counts.update(
        records=len(parsed.records) + len(parsed.malformed) + len(parsed.duplicates),
        importable=len(parsed.records),
        malformed=len(parsed.malformed),
        duplicates=len(parsed.duplicates),
        unknown_keys=len(unknown_keys),
        linked=len(parsed.records) - len(unknown_keys),
        replaced=previous if existing is not None else 0,
        true_position_disagreements=disagreements.count,
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
            stored = insert_predictions(session, _rows(path, run.id, clip_ids, keys, positions))
    except IntegrityError as exc:
        raise InputError(
            f"model {model!r} was imported meanwhile by another process; nothing was imported. "
            "Pass --replace or choose another --model."
        ) from exc
    report.stored = True
    report.counts["stored"] = stored
    task.item_done(str(path))
    return report


def _rows(
    path: Path, run_id: int, clip_ids: dict[str, int], keys: list[str], positions: dict[int, tuple[Any, Any]]
) -> Iterator[dict[str, Any]]:
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
            clip_id=(clip_id := clip_ids.get(record.question_id)),
            line_no=record.line_no,
            clip_position=positions.get(clip_id) if clip_id is not None else None,
        )
    if count != len(keys):
        raise _changed(path)


def _changed(path: Path) -> InputError:
    return InputError(f"{path}: the file changed while it was being imported; nothing was imported. Import it again.")
