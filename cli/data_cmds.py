"""`aglw import dataset|predictions` and the dataset exports (`aglw export dataset`); the metrics' tables are in
:mod:`cli.board_cmds`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape

from cli.context import app_context, check_choice, emit_json, project_file_missing, run_task, say, show
from workbench.errors import AglwError

if TYPE_CHECKING:
    from workbench.importing import ImportReport

# Imports of the store, pandas and the importers happen inside the commands: `aglw --help`
# must not load SQLAlchemy and pandas.

import_app = typer.Typer(
    help="Import a dataset (AGL1K CSV, a mapped table, a folder of recordings, an hf export) or ALM result records (all or nothing).",
    no_args_is_help=True,
)


def _show_report(report: ImportReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.as_dict())
        return
    verb = "checked (dry run, nothing stored)" if report.dry_run else "imported"
    counts = ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in report.counts.items())
    show(f"{report.kind} {escape(report.name)!s} from {escape(report.source)}: {verb}; {counts}")
    for warning in report.warnings:
        say(f"[yellow]warning:[/yellow] {escape(warning)}", markup=True)
    for problem in report.problems:
        say(f"[red]problem:[/red] {escape(problem)}", markup=True)


@import_app.command("dataset")
def import_dataset_cmd(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ..., help="The AGL1K CSV, a table (CSV, TSV, JSON Lines, Parquet), a folder of recordings or an hf export."
    ),
    format: str = typer.Option("agl1k", "--format", help="agl1k, table, folder or hf."),  # noqa: A002
    mapping: Optional[Path] = typer.Option(
        None, "--mapping", help="Which column gives which clip field (TOML; --format table or folder)."
    ),
    media_root: Optional[Path] = typer.Option(
        None, "--media-root", help="Folder with the recordings (hf: where the embedded recordings are written)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and report; store nothing."),
    name: Optional[str] = typer.Option(None, "--name", help="Dataset name (default: the file or folder name)."),
    verify: bool = typer.Option(
        True, "--verify/--no-verify",
        help="hf: check the export against what it states first (croissant.json, every file's SHA-256, every "
             "embedded recording decodable); --no-verify imports it as it is, with a warning.",
    ),
) -> None:
    """Import a dataset; all or nothing. Creates the project file if it does not exist."""
    from cli.context import check_choice, usage_error
    from workbench.importing.datasets import FORMATS

    check_choice(format, FORMATS, "--format")
    if mapping is not None and format in ("agl1k", "hf"):
        raise usage_error(f"is for --format table or folder; --format {format} has its own layout", "--mapping")
    app = app_context(ctx)
    new_file = None if dry_run else project_file_missing(app.db)
    try:
        from workbench.importing import import_dataset

        store = app.store(create=True, dry_run=dry_run)
        report = run_task(
            f"importing {file.name}",
            lambda task: import_dataset(
                store, file, format=format, name=name, mapping=mapping, media_root=media_root, dry_run=dry_run,
                verify=verify, task=task,
            ),
        ).value
    except BaseException as exc:
        # All or nothing: a failed first import leaves no empty project file behind either.
        if new_file is not None:
            app.close()
            for leftover in (new_file, *(new_file.with_name(new_file.name + s) for s in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
        problems = getattr(exc, "problems", None)  # an hf export not as it states: one line per problem
        if isinstance(exc, AglwError) and problems:
            for problem in problems:
                say(problem)
            if app.json:
                emit_json({"error": exc.summary, "problems": problems, "exit_code": 1})  # type: ignore[attr-defined]
            raise AglwError(exc.summary) from exc  # type: ignore[attr-defined]
        raise
    _show_report(report, app.json)


@import_app.command("predictions")
def import_predictions_cmd(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="ALM result records: JSON Lines or a JSON array."),
    model: str = typer.Option(..., "--model", help="Name to file the predictions under."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and report; store nothing."),
    skip_malformed: bool = typer.Option(
        False, "--skip-malformed", help="Import the good records and report the malformed ones."
    ),
    replace: bool = typer.Option(False, "--replace", help="Replace this model's earlier predictions."),
    dataset: Optional[str] = typer.Option(
        None, "--dataset", help="Dataset to link clips from (default: the one holding most keys)."
    ),
) -> None:
    """Import ALM result records (JSON Lines or JSON array); all or nothing."""
    app = app_context(ctx)
    from workbench.importing import import_predictions

    store = app.store(dry_run=dry_run)
    report = run_task(
        f"importing {file.name}",
        lambda task: import_predictions(
            store, model, file, dry_run=dry_run, skip_malformed=skip_malformed, replace=replace, dataset=dataset,
            task=task,
        ),
    ).value
    _show_report(report, app.json)


def export_hf_folder(
    app: Any, out: Path, *, dataset: str | None = None, clips: str | None = None, selection: str | None = None,
    embed_audio: bool = True, force: bool = False, url: str | None = None,
) -> None:
    """Write a Hugging Face dataset folder (``export dataset`` / ``export selection --format hf``)."""
    from workbench.curation.hf_export import export_hf

    keys = [k.strip() for k in clips.split(",") if k.strip()] if clips is not None else None
    if selection is not None and selection != "latest" and not selection.isdigit():
        raise typer.BadParameter(f"--selection {selection!r}: use 'latest' or a selection id")
    store = app.store()
    result = run_task(
        f"exporting to {out.name}",
        lambda task: export_hf(store, out, dataset=dataset, keys=keys, selection=selection, embed_audio=embed_audio,
                               force=force, url=url, task=task),
    ).value
    if app.json:
        emit_json({"out": str(result.out), "n_rows": result.n_rows, "files": result.files,
                   "embedded_audio": result.embedded, "without_audio": result.without_audio,
                   "selection_id": result.selection_id, "datasets": result.datasets})
        return
    source = f"selection {result.selection_id}" if result.selection_id is not None else ", ".join(result.datasets)
    show(f"wrote {result.n_rows} clips of {escape(source)} to {escape(str(result.out))} "
         f"({len(result.files)} Parquet file(s), README.md, croissant.json)")
    if result.without_audio:
        say(f"warning: {len(result.without_audio)} clip(s) have no recording linked and are exported without audio: "
            + ", ".join(result.without_audio[:20]) + (" …" if len(result.without_audio) > 20 else ""))


def export_dataset_command(
    ctx: typer.Context,
    out: Path = typer.Argument(..., help="Folder to write (new or empty; --force replaces an earlier export)."),
    format: str = typer.Option("hf", "--format", help="hf: a folder that datasets.load_dataset reads."),  # noqa: A002
    dataset: Optional[str] = typer.Option(None, "--dataset", help="Dataset name (default: the project's only one)."),
    clips: Optional[str] = typer.Option(None, "--clips", help="Only these clips: KEY,KEY,..."),
    selection: Optional[str] = typer.Option(None, "--selection", help="The clips of a selection: latest or an id."),
    no_embed_audio: bool = typer.Option(
        False, "--no-embed-audio", help="Write each recording's path relative to its media root, not its bytes."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an earlier export in OUT."),
    url: Optional[str] = typer.Option(None, "--url", help="Where the dataset will be published (Croissant url)."),
) -> None:
    """Export the dataset, chosen clips or a selection as a Hugging Face dataset with a card and Croissant."""
    check_choice(format, ("hf",), "--format")
    export_hf_folder(app_context(ctx), out, dataset=dataset, clips=clips, selection=selection,
                     embed_audio=not no_embed_audio, force=force, url=url)



def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.add_typer(import_app, name="import")
