"""The file jobs behind ``aglw events``: import/export STARSS23 files, evaluate folders, write and
score spatial QA (the CLI parses and prints; this does the work, so the GUI can call it too)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from sqlmodel import select

from storage import Store
from storage.models import Clip, SpatialEvent
from workbench.clip_ids import clip_id_for_key
from workbench.errors import InputError
from workbench.events.model import FRAME_S, STARSS23_CLASSES
from workbench.events.service import EventService, clip_audio_path, clip_info
from workbench.events.starss23 import (
    MetadataFile,
    events_to_rows,
    format_rows,
    read_class_list,
    read_metadata,
    rows_to_events,
)
from workbench.outputs import check_file_target, write_text
from workbench.tasks import TaskContext


@dataclass(frozen=True)
class ImportReport:
    clip_key: str
    clip_id: int
    file: str
    n_rows: int
    n_events: int
    format: str  # dcase2023 | dcase2024
    event_ids: list[str]
    dry_run: bool


def _clip_for_file(store: Store, path: Path, clip_key: str | None) -> int:
    key = clip_key or path.stem
    try:
        return clip_id_for_key(store, key)
    except InputError:
        how = "" if clip_key else " (the file name is taken as the clip key; pass --clip KEY)"
        raise InputError(f"{path}: no clip with key {key!r} in this project{how}") from None


def class_list_path(csv_path: str | Path) -> Path:
    """The class list written beside an exported file (``scene.csv`` → ``scene.classes.txt``), read
    back by an import of that file: the names travel with the indices."""
    return Path(csv_path).with_suffix(".classes.txt")


def _stored_class_list(store: Store, clip_id: int, annotator_id: int | None = None) -> tuple[str, ...] | None:
    """The class list the clip's (the annotator's) stored events were imported with (None: none)."""
    query = select(SpatialEvent.class_list).where(SpatialEvent.clip_id == clip_id,
                                                  SpatialEvent.deleted == False)  # noqa: E712 - SQL comparison
    if annotator_id is not None:
        query = query.where(SpatialEvent.annotator_id == annotator_id)
    with store.session() as s:
        lists = {tuple(v) for v in s.exec(query).all() if v}
    if len(lists) > 1:
        raise InputError(f"the events of clip {clip_id} were imported with {len(lists)} different class lists; "
                         "pass --class-list FILE")
    return next(iter(lists)) if lists else None


def _import_classes(store: Store, path: Path, clip_id: int, class_names: Sequence[str] | None,
                    vocabulary: str) -> tuple[tuple[str, ...], str, tuple[str, ...] | None]:
    """The class list an import reads indices against, its vocabulary, and the list to store.

    Given (``--class-list``), else the list exported beside the file, else the list the clip's
    events were imported with, else the 13 STARSS23 classes: an index is never silently read as a
    STARSS23 class ("female speech") when the events came with a list of their own.
    """
    if class_names is not None:
        names = tuple(class_names)
        if names == STARSS23_CLASSES:
            return names, "starss23", None
        return names, vocabulary, names
    sidecar = class_list_path(path)
    if sidecar.is_file():
        names = read_class_list(sidecar)
        return names, "project", names
    stored = _stored_class_list(store, clip_id)
    if stored is not None:
        return stored, "project", stored
    return STARSS23_CLASSES, "starss23", None


def import_events_file(
    store: Store, annotator_id: int, path: str | Path, *, clip_key: str | None = None,
    class_names: Sequence[str] | None = None, vocabulary: str = "project",
    replace: bool = False, dry_run: bool = False,
) -> ImportReport:
    """Import one STARSS23/DCASE metadata file as the annotator's events on one clip (all or nothing).

    ``class_names`` None: the class list beside the file, else the clip's stored one, else
    STARSS23's (:func:`_import_classes`); the list is stored with the events.
    """
    path = Path(path)
    clip_id = _clip_for_file(store, path, clip_key)
    info = clip_info(store, clip_id)
    names, vocabulary, stored_list = _import_classes(store, path, clip_id, class_names, vocabulary)
    n_frames = None if info.duration_s is None else int(math.floor(info.duration_s / FRAME_S + 0.5))
    metadata = read_metadata(path, n_classes=len(names), n_frames=n_frames)
    events = rows_to_events(metadata, names, vocabulary)
    uids: list[str] = []
    if not dry_run:
        uids = EventService(store).import_events(annotator_id, clip_id, events, replace=replace, source=str(path),
                                                 class_list=stored_list)
    return ImportReport(info.key, clip_id, str(path), len(metadata.rows), len(events),
                        "dcase2024" if metadata.has_distance else "dcase2023", uids, dry_run)


def export_events_file(
    store: Store, clip_key: str, out: str | Path, *, annotator_id: int | None = None,
    class_names: Sequence[str] | None = None, force: bool = False,
) -> dict[str, Any]:
    """Write a clip's events (of one annotator) as a STARSS23/DCASE metadata file.

    ``class_names`` None: the list the events were imported with, else STARSS23's. A list other
    than STARSS23's is written beside the file (:func:`class_list_path`), so that importing the
    file again reads the same names.
    """
    out = check_file_target(out, force=force)  # refused before any work; a link is never written through
    clip_id = clip_id_for_key(store, clip_key)
    events = EventService(store).events(clip_id, annotator_id)
    _one_annotator(events, clip_key, "export")
    owner = next(iter({e.annotator_id for e in events}), annotator_id)
    names = tuple(class_names) if class_names is not None else (
        _stored_class_list(store, clip_id, owner) or STARSS23_CLASSES)
    sidecar = None if names == STARSS23_CLASSES else check_file_target(class_list_path(out), force=force)
    rows, has_distance = events_to_rows(events, names)
    write_text(out, format_rows(rows, has_distance), force=force)
    if sidecar is not None:
        write_text(sidecar, "".join(f"{name}\n" for name in names), force=force)
    return {"clip_key": clip_key, "file": str(out), "n_events": len(events), "n_rows": len(rows),
            "format": "dcase2024" if has_distance else "dcase2023",
            "class_list": None if sidecar is None else str(sidecar)}


def _one_annotator(events: Sequence[Any], clip_key: str, what: str) -> None:
    """Refuse to pool several annotators' events (each sound would count once per annotator)."""
    annotators = {e.annotator_id for e in events}
    if len(annotators) > 1:
        raise InputError(
            f"clip {clip_key} has events by {len(annotators)} annotators; pass --annotator NAME to {what} one's"
        )


def evaluate_folders(
    ref_dir: str | Path, pred_dir: str | Path, *, n_classes: int = 13, doa_threshold: float = 20.0,
    distance_threshold: float = 1.0, task: TaskContext | None = None,
) -> dict[str, Any]:
    """DCASE SELD metrics between two folders of metadata CSVs matched by file name."""
    from workbench.events.seld import evaluate_seld

    ref_dir, pred_dir = Path(ref_dir), Path(pred_dir)
    for folder, what in ((ref_dir, "--ref"), (pred_dir, "--pred")):
        if not folder.is_dir():
            raise InputError(f"{folder}: not a folder ({what} needs a folder of metadata CSV files)")
    refs = sorted(p for p in ref_dir.glob("*.csv") if p.is_file())
    preds = {p.name: p for p in pred_dir.glob("*.csv") if p.is_file()}
    if not refs:
        raise InputError(f"{ref_dir}: no .csv files")
    missing = [p.name for p in refs if p.name not in preds]
    if missing:
        raise InputError(
            f"{pred_dir}: no prediction for {len(missing)} reference file(s), first {missing[0]}; write an empty "
            "file for a recording without predictions"
        )
    extra = sorted(set(preds) - {p.name for p in refs})
    if extra:
        raise InputError(f"{pred_dir / extra[0]}: no reference file of that name in {ref_dir}")
    if task is not None:
        task.set_total(len(refs))
    pairs: list[tuple[MetadataFile, MetadataFile]] = []
    for ref in refs:
        # Every file is read (and checked) first: a bad one is reported before any scoring.
        if task is not None:
            task.check_cancel()
        pairs.append((read_metadata(ref, n_classes=n_classes),
                      read_metadata(preds[ref.name], n_classes=n_classes, allow_four_columns=True)))

    def scored(metadata: MetadataFile) -> None:
        # A file is one item once scored (the long part): the bar moves, and a cancel stops here.
        if task is not None:
            task.item_done(Path(metadata.path).name, True)

    names = STARSS23_CLASSES if n_classes == len(STARSS23_CLASSES) else None
    result = evaluate_seld(pairs, n_classes=n_classes, class_names=names, doa_threshold=doa_threshold,
                           distance_threshold=distance_threshold, scored=scored)
    out = result.as_dict()
    out.update({"ref": str(ref_dir), "pred": str(pred_dir), "doa_threshold": doa_threshold})
    if result.metric == "dcase2024":
        out["distance_threshold"] = distance_threshold
    return out


def clips_with_events(store: Store) -> list[str]:
    """Keys of the clips that have at least one (not deleted) event, in key order."""
    with store.session() as s:
        rows = s.exec(select(Clip.key).join(SpatialEvent, SpatialEvent.clip_id == Clip.id)
                      .where(SpatialEvent.deleted == False)  # noqa: E712 - SQL comparison
                      .distinct().order_by(Clip.key)).all()
    return list(rows)


def write_questions(
    store: Store, clip_keys: Sequence[str] | None, out: str | Path, *, annotator_id: int | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Spatial QA (JSON Lines) from the events of the given clips (None: every clip with events)."""
    from workbench.events.qa import ClipEvents, generate_questions

    out = check_file_target(out, force=force)  # refused before any work; a link is never written through
    keys = list(clip_keys) if clip_keys else clips_with_events(store)
    if not keys:
        raise InputError("no clip has events yet; annotate or `aglw events import` first")
    service = EventService(store)
    clips = []
    for key in keys:
        clip_id = clip_id_for_key(store, key)
        events = service.events(clip_id, annotator_id)
        _one_annotator(events, key, "write questions from")
        info = clip_info(store, clip_id)
        clips.append(ClipEvents(key, clip_audio_path(store, clip_id) or info.audio_path, info.duration_s, events))
    questions = generate_questions(clips)
    write_text(out, "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), force=force)
    per_type: dict[str, int] = {}
    for q in questions:
        per_type[q["question_type"]] = per_type.get(q["question_type"], 0) + 1
    return {"out": str(out), "n_clips": len(clips), "n_questions": len(questions), "per_type": per_type}


def _read_jsonl(path: Path, what: str) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    records = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{n}: not JSON ({exc.msg}); one JSON object per line") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}:{n}: a JSON object is expected, got {type(record).__name__}")
        if "id" not in record:
            raise InputError(f"{path}:{n}: field 'id' is missing")
        record["_line"] = n
        records.append(record)
    return records


def score_qa_files(questions_path: str | Path, answers_path: str | Path) -> dict[str, Any]:
    """Score a model's answers (JSON Lines ``{"id", "answer"}``) to a questions file."""
    from workbench.events.qa import score_answers

    questions_path, answers_path = Path(questions_path), Path(answers_path)
    questions = _read_jsonl(questions_path, "questions")
    for q in questions:
        for name in ("question_type", "question", "answer_value"):
            if name not in q:
                raise InputError(f"{questions_path}:{q['_line']}: field '{name}' is missing")
    answers: dict[str, str] = {}
    for a in _read_jsonl(answers_path, "answers"):
        text = a.get("answer", a.get("prediction"))
        if text is None:
            raise InputError(f"{answers_path}:{a['_line']}: field 'answer' is missing")
        if str(a["id"]) in answers:
            raise InputError(f"{answers_path}:{a['_line']}: a second answer to question {a['id']}")
        answers[str(a["id"])] = str(text)
    result = score_answers(questions, answers)
    result.update({"questions": str(questions_path), "answers": str(answers_path)})
    return result
