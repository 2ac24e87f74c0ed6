"""`aglw` commands: import dataset/predictions, metrics, leaderboard."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from cli.context import app_context, emit_json, project_file_missing, run_task, say, show
from workbench.errors import AglwError
from workbench.metrics.keys import METRIC_KEYS, PROFILES

if TYPE_CHECKING:
    import pandas as pd

    from workbench.importing import ImportReport

# Imports of the store, pandas and the importers happen inside the commands: `aglw --help`
# must not load SQLAlchemy and pandas.

import_app = typer.Typer(help="Import a dataset CSV or ALM result records (all or nothing).", no_args_is_help=True)

# Derived from METRIC_KEYS so a new metric shows up here without a second list to update.
_RATE_KEYS = tuple(k for k in METRIC_KEYS if k.endswith("_acc") or k == "reject_rate" or k.startswith("within_"))
# Only these differ between the agl1k and iso profiles.
_PROFILE_DEPENDENT = ("continent_acc", "country_acc")
_SHARED_COLUMNS = tuple(k for k in METRIC_KEYS if k not in ("model", "profile", *_PROFILE_DEPENDENT))


def _format(key: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if key in _RATE_KEYS or key.startswith(_PROFILE_DEPENDENT):
        return f"{value:.3f}"
    if key in ("distance_error_km", "geoscore_mean"):
        return f"{value:,.2f}"
    return escape(str(value))


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
) -> None:
    """Import a dataset; all or nothing. Creates the project file if it does not exist."""
    app = app_context(ctx)
    new_file = None if dry_run else project_file_missing(app.db)
    try:
        from workbench.importing import import_dataset

        store = app.store(create=True, dry_run=dry_run)
        report = run_task(
            f"importing {file.name}",
            lambda task: import_dataset(
                store, file, format=format, name=name, mapping=mapping, media_root=media_root, dry_run=dry_run,
                task=task,
            ),
        ).value
    except BaseException:
        # All or nothing: a failed first import leaves no empty project file behind either.
        if new_file is not None:
            app.close()
            for leftover in (new_file, *(new_file.with_name(new_file.name + s) for s in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
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


def _check_choice(value: str | None, allowed: tuple[str, ...], option: str) -> None:
    from cli.context import check_choice

    if value is not None:
        check_choice(value, allowed, option)  # a usage error: exit 2


def metrics_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="A model imported with `import predictions`."),
    profile: str = typer.Option("agl1k", "--profile", help="Metric profile: agl1k or iso."),
) -> None:
    """Leaderboard metrics for one model."""
    _check_choice(profile, PROFILES, "--profile")
    app = app_context(ctx)
    from workbench.metrics.service import model_metrics

    result = model_metrics(app.store(), model, profile)  # type: ignore[arg-type]
    if app.json:
        emit_json(result)
        return
    table = Table(title=f"{escape(model)} ({profile} profile)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result.items():
        if key not in ("model", "profile"):
            table.add_row(key, _format(key, value))
    show(table)


def _side_by_side(frame: pd.DataFrame, group: bool) -> pd.DataFrame:
    """One row per model (and group) with the profile-dependent accuracies per profile."""
    index = ["group", "model"] if group else ["model"]
    shared = frame[frame["profile"] == PROFILES[0]][[*index, *_SHARED_COLUMNS]]
    for profile in PROFILES:
        part = frame[frame["profile"] == profile][[*index, *_PROFILE_DEPENDENT]]
        part = part.rename(columns={c: f"{c}_{profile}" for c in _PROFILE_DEPENDENT})
        shared = shared.merge(part, on=index, how="outer")
    ordered = [
        *index,
        "n",
        "distance_error_km",
        *(f"{c}_{p}" for c in _PROFILE_DEPENDENT for p in PROFILES),
        *_SHARED_COLUMNS[2:],
    ]
    return shared[ordered]


def leaderboard_cmd(
    ctx: typer.Context,
    profile: str = typer.Option("both", "--profile", help="agl1k, iso, or both side by side."),
    by: Optional[str] = typer.Option(None, "--by", help="Group by continent or speech."),
) -> None:
    """Table for all imported models."""
    _check_choice(profile, (*PROFILES, "both"), "--profile")
    from workbench.metrics.service import GROUP_BY_OPTIONS, leaderboard

    _check_choice(by, GROUP_BY_OPTIONS, "--by")
    app = app_context(ctx)
    store = app.store()
    frame = leaderboard(store, profile, by)  # type: ignore[arg-type]
    if by is None:
        from workbench.studies.localizers import with_human_rows

        frame = with_human_rows(frame, store, profile)  # people who guessed blind, scored alike
    if app.json:
        emit_json(frame.to_dict(orient="records"))
        return
    if frame.empty:
        say("no predictions imported yet: use `aglw import predictions --model NAME FILE`")
        return
    shown = _side_by_side(frame, by is not None) if profile == "both" else frame.drop(columns="profile")
    title = "leaderboard" + (f" by {by}" if by else "") + f" ({profile} profile{'s' if profile == 'both' else ''})"
    table = Table(title=title)
    for column in shown.columns:
        table.add_column(column.replace("_", " "), justify="left" if column in ("model", "group") else "right")
    for record in shown.to_dict(orient="records"):
        table.add_row(*(_format(column, value) for column, value in record.items()))
    show(table, min_width=200)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.add_typer(import_app, name="import")
    app.command("metrics")(metrics_cmd)
    app.command("leaderboard")(leaderboard_cmd)
