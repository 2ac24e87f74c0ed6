"""`aglw events` commands: spatial sound events (spatial-events.md, cli.md).

Import/export STARSS23 / DCASE Task 3 metadata, the DCASE SELD metrics between two folders, and
spatial question/answer generation and scoring. Heavy modules load when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from cli.context import app_context, emit_json, run_task, say, show

events_app = typer.Typer(help="Spatial sound events: STARSS23/DCASE files, SELD metrics, spatial QA.")

_CLASS_LIST_HELP = "The project's class list (one name per line; index = line) instead of the 13 STARSS23 classes."


def _class_names(class_list: Optional[Path]) -> tuple[tuple[str, ...] | None, str]:
    """The --class-list given (None: the list beside the file or stored with the events, else STARSS23's)."""
    from workbench.events.starss23 import read_class_list

    if class_list is None:
        return None, "project"
    return read_class_list(class_list), "project"


def _existing_annotator_id(store: Any, name: str | None) -> int | None:
    """The id of the expert --annotator names (None: everyone's events); an unknown name is an
    error, never a new annotator (these commands only read)."""
    if not name:
        return None
    from workbench.errors import InputError
    from workbench.labels import LabelService

    found = LabelService(store).find_annotator(name)
    if found is None:
        raise InputError(f"no annotator called {name!r} in this project")
    return found.id


def _check_format(fmt: str) -> None:
    from cli.context import check_choice

    check_choice(fmt, ("starss23",), "--format")  # DCASE Task 3 metadata, 2023 or 2024 rows


@events_app.command("import")
def events_import(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="STARSS23 / DCASE metadata CSV of one recording."),
    clip: Optional[str] = typer.Option(None, "--clip", help="Clip key (default: the file name without .csv)."),
    fmt: str = typer.Option("starss23", "--format", help="starss23 (2023 rows, or 2024 rows with distance)."),
    class_list: Optional[Path] = typer.Option(None, "--class-list", help=_CLASS_LIST_HELP),
    replace: bool = typer.Option(False, "--replace", help="Replace the annotator's events on the clip."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check the file against the clip; store nothing."),
) -> None:
    """Import DCASE/STARSS23 metadata rows for one clip as the annotator's events (all or nothing)."""
    from workbench.events.files import import_events_file
    from workbench.labels import LabelService

    _check_format(fmt)
    app = app_context(ctx)
    store = app.store(dry_run=dry_run)
    names, vocabulary = _class_names(class_list)
    labels = LabelService(store)
    annotator = labels.find_annotator(app.annotator_name())
    if annotator is None and not dry_run:
        # the file is checked before a new annotator is added: a refused import stores nothing at all
        import_events_file(store, 0, file, clip_key=clip, class_names=names, vocabulary=vocabulary,
                           replace=replace, dry_run=True)
        annotator = labels.ensure_annotator(app.annotator_name())
    report = import_events_file(store, annotator.id if annotator else 0, file, clip_key=clip, class_names=names,
                                vocabulary=vocabulary, replace=replace, dry_run=dry_run)
    if app.json:
        emit_json({"ok": True, "clip_key": report.clip_key, "clip_id": report.clip_id, "file": report.file,
                   "n_rows": report.n_rows, "n_events": report.n_events, "format": report.format,
                   "event_ids": report.event_ids, "dry_run": report.dry_run})
        return
    verb = "would import" if dry_run else "imported"
    show(f"{verb} {report.n_events} events ({report.n_rows} rows, {report.format}) into clip {report.clip_key}")


@events_app.command("export")
def events_export(
    ctx: typer.Context,
    out: Path = typer.Argument(..., help="The metadata CSV to write."),
    clip: str = typer.Option(..., "--clip", help="Clip key."),
    fmt: str = typer.Option("starss23", "--format", help="starss23 (the 2024 distance column when events have distances)."),
    class_list: Optional[Path] = typer.Option(None, "--class-list", help=_CLASS_LIST_HELP),
    force: bool = typer.Option(False, "--force", help="Replace OUT if it exists."),
) -> None:
    """Write the clip's events as DCASE/STARSS23 metadata (one annotator's: --annotator when several)."""
    from workbench.events.files import export_events_file
    _check_format(fmt)
    app = app_context(ctx)
    store = app.store()
    annotator_id = _existing_annotator_id(store, app.annotator)
    names, _ = _class_names(class_list)
    result = export_events_file(store, clip, out, annotator_id=annotator_id, class_names=names, force=force)
    if app.json:
        emit_json({"ok": True, **result})
    else:
        show(f"wrote {result['n_events']} events ({result['n_rows']} rows, {result['format']}) of {clip} to {out}")


@events_app.command("eval")
def events_eval(
    ctx: typer.Context,
    ref: Path = typer.Option(..., "--ref", help="Folder of reference metadata CSVs."),
    pred: Path = typer.Option(..., "--pred", help="Folder of predicted metadata CSVs (same file names)."),
    classes: int = typer.Option(13, "--classes", min=1, help="Number of classes (13 for STARSS23)."),
    doa_threshold: float = typer.Option(20.0, "--doa-threshold", min=0.0, help="DOA threshold in degrees."),
    distance_threshold: float = typer.Option(
        1.0, "--distance-threshold", min=0.0, help="Relative distance threshold (2024 metric, with distances)."
    ),
) -> None:
    """DCASE SELD metrics between two folders (2023 metric; 2024 when the reference has distances)."""
    from workbench.events.files import evaluate_folders

    app = app_context(ctx)
    result = run_task(
        "scoring predictions",
        lambda task: evaluate_folders(ref, pred, n_classes=classes, doa_threshold=doa_threshold,
                                      distance_threshold=distance_threshold, task=task),
    ).value
    if app.json:
        emit_json(result)
        return
    from rich.table import Table

    table = Table(title=f"SELD ({result['metric']}, {result['n_files']} files)")
    table.add_column("metric")
    table.add_column("value", justify="right")

    def fmt(value: object, scale: float = 1.0, digits: int = 3) -> str:
        return "n/a" if value is None else f"{float(value) * scale:.{digits}f}"  # type: ignore[arg-type]

    table.add_row("error rate (ER20°)", fmt(result["error_rate"]))
    table.add_row("F-score (F20°)", fmt(result["f_score"], 100, 1) + " %")
    table.add_row("DOA error", fmt(result["doa_error_deg"], 1, 1) + "°")
    table.add_row("localization recall", fmt(result["localization_recall"], 100, 1) + " %")
    if result["metric"] == "dcase2024":
        table.add_row("relative distance error", fmt(result["relative_distance_error"]))
    table.add_row("SELD score", fmt(result["seld_score"]))
    show(table, min_width=60)


@events_app.command("qa")
def events_qa(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", help="JSON Lines file of questions to write."),
    clips: Optional[list[str]] = typer.Option(
        None, "--clips", help="Clip keys (repeat or comma-separate; default: every clip with events)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace OUT if it exists."),
) -> None:
    """Spatial question/answer pairs generated from the annotated events (--annotator: one expert's)."""
    from workbench.events.files import write_questions

    app = app_context(ctx)
    store = app.store()
    annotator_id = _existing_annotator_id(store, app.annotator)
    keys = [k.strip() for value in (clips or []) for k in value.split(",") if k.strip()]
    result = write_questions(store, keys or None, out, annotator_id=annotator_id, force=force)
    if app.json:
        emit_json({"ok": True, **result})
        return
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(result["per_type"].items()))
    show(f"wrote {result['n_questions']} questions about {result['n_clips']} clips to {out} ({kinds})")


@events_app.command("score-qa")
def events_score_qa(
    ctx: typer.Context,
    questions: Path = typer.Option(..., "--questions", help="Questions JSON Lines (from `aglw events qa`)."),
    answers: Path = typer.Option(..., "--answers", help='Answers JSON Lines: {"id": ..., "answer": "..."} per line.'),
) -> None:
    """Score a model's answers: accuracy per question type, o'clock exact/±1 hour/front-back confusions."""
    from workbench.events.files import score_qa_files

    app = app_context(ctx)
    result = score_qa_files(questions, answers)
    if result["unknown_answer_ids"]:
        say(f"{len(result['unknown_answer_ids'])} answers name no question (first {result['unknown_answer_ids'][0]})")
    if app.json:
        emit_json(result)
        return
    from rich.table import Table

    from workbench.formatting import formatted

    table = Table(title=f"spatial QA: {result['n_questions']} questions, {result['n_missing']} unanswered, "
                        f"{result['n_unparsable']} unparsable")
    for name in ("type", "n", "correct", "accuracy", "unparsable", "missing"):
        table.add_column(name, justify="left" if name == "type" else "right")
    for qtype, s in sorted(result["per_type"].items()):
        acc = formatted(s["accuracy"], "accuracy", missing="n/a")
        table.add_row(qtype, str(s["n"]), str(s["correct"]), acc, str(s["unparsable"]), str(s["missing"]))
    show(table, min_width=70)
    o = result["oclock"]
    if o["n"]:
        line = (f"o'clock: exact {o['exact']}/{o['n']}, within ±1 hour {o['within_one_hour']}/{o['n']}, "
                f"front/back confusions {o['front_back_confusions']}")
        if o["mean_angular_error_deg"] is not None:
            line += f", mean angular error {o['mean_angular_error_deg']:.1f}° over {o['n_degrees']} answers in degrees"
        show(line)


def register(app: typer.Typer) -> None:
    """Add the `events` group to the root app."""
    app.add_typer(events_app, name="events")
