"""`aglw` commands: fit, select, export selection, check locations."""

from __future__ import annotations

from typing import Any, Optional

import typer

from cli.context import app_context, check_choice, emit_json, run_task, say, show, usage_error

export_app = typer.Typer(help="Export project data.", no_args_is_help=True)
check_app = typer.Typer(help="Consistency checks of the project's data.", no_args_is_help=True)


def _ontology_roll_up() -> tuple[dict[str, list[str]], dict[str, str]]:
    """Class id → root ids and id → name, from the configured AudioSet ontology.

    A local copy (``AGLW_ONTOLOGY``, ``ontology_path`` or the cache) is used as it is; only
    when there is none is the ontology downloaded.
    """
    from workbench.tagging.ontology import load_local_ontology

    ontology = load_local_ontology()
    if ontology is None:
        from workbench.tagging.assets import load_default_ontology

        ontology = load_default_ontology(show_progress=True)
    return ontology.root_ids_by_node(), ontology.names


def _parse_what_if(values: list[str]) -> dict[str, str]:
    forced: dict[str, str] = {}
    for value in values:
        category, sep, polarity = value.rpartition("=")
        if not sep or not category or polarity not in ("P", "N", "neutral"):
            raise usage_error(f"expects CATEGORY=P|N|neutral (e.g. /m/020bb7=N), got {value!r}", "--what-if")
        forced[category] = polarity
    return forced


def fit_command(
    ctx: typer.Context,
    # None: the latest stored run's value, else the model's default (a project keeps its settings)
    gamma: Optional[float] = typer.Option(None, "--gamma", help="Success threshold γ on the ALM error (km) [last run's, else 1000]."),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="Margin α between a and ā for P / N [last run's, else 0.05]."),
    theta: Optional[float] = typer.Option(None, "--theta", help="Candidate threshold θ on localizability [last run's, else 0]."),
    tau: Optional[float] = typer.Option(None, "--tau", help="Tag probability threshold τ for detected categories [last run's, else 0.15]."),
    n_min: Optional[int] = typer.Option(None, "--n-min", help="Minimum support for a fitted polarity [last run's, else 5]."),
    top_n: Optional[int] = typer.Option(None, "--top-n", help="At most this many detected categories per clip [last run's, else 10]."),
    rollup: Optional[str] = typer.Option(None, "--rollup", help="Category level: leaf or root (needs the ontology) [last run's, else leaf]."),
    alm: Optional[str] = typer.Option(None, "--alm", help="Reference ALM model (default: the judged one)."),
    preview: bool = typer.Option(False, "--preview", help="Compute without storing a run."),
    recalibrate_theta: bool = typer.Option(
        False, "--recalibrate-theta", help="Use the θ that best matches ≥ 20 expert accept/reject decisions."
    ),
    what_if: list[str] = typer.Option(
        [], "--what-if", help="Preview only: force CATEGORY=P|N|neutral (repeatable)."
    ),
) -> None:
    """Fit the curation model (a stored run unless --preview) and show the diff to the last run."""
    from workbench.curation import service
    from workbench.curation.model import FitParameters

    if rollup is not None:
        check_choice(rollup, ("leaf", "root"), "--rollup")
    app = app_context(ctx)
    given = {"gamma_km": gamma, "alpha": alpha, "theta": theta, "tau": tau, "n_min": n_min, "top_n": top_n,
             "rollup": rollup}
    try:
        FitParameters(**{k: v for k, v in given.items() if v is not None})  # a bad option is a usage error first
    except ValueError as exc:
        raise usage_error(str(exc)) from exc
    from workbench.curation.stored import latest_parameters

    store = app.store()
    latest = latest_parameters(store)
    values = FitParameters().to_dict()
    if latest is not None:  # the project's own settings where no option is given
        values.update({k: v for k, v in latest[1].items() if k in values})
    values.update({k: v for k, v in given.items() if v is not None})
    try:
        params = FitParameters(**values)
    except ValueError as exc:
        raise usage_error(str(exc)) from exc
    inherited = sorted(k for k, v in given.items() if v is None and latest is not None
                       and latest[1].get(k, values[k]) != FitParameters().to_dict()[k])
    forced = _parse_what_if(what_if)
    if forced and not preview:
        raise usage_error("needs --preview (a stored run holds only recorded labels)", "--what-if")
    from workbench.project import category_names, check_category_id

    # A typo in --what-if would preview a category nobody has: refused with the close ids.
    forced = {check_category_id(store, category, "--what-if"): value for category, value in forced.items()}
    roots_of, names = (_ontology_roll_up() if params.rollup == "root" else (None, category_names(store)))
    result = run_task(
        "fitting the curation model",
        lambda task: service.fit(
            store, params, alm_model=alm, preview=preview,
            what_if=service.WhatIf(category_polarity=forced) if forced else None,
            recalibrate_theta=recalibrate_theta, roots_of=roots_of, category_names=names, task=task,
        ),
    ).value
    if app.json:
        emit_json(result.to_json())
        return
    _print_fit(result)
    if inherited and latest is not None:
        show(f"settings of run {latest[0]} kept: " + ", ".join(f"{k} {values[k]:g}" if isinstance(values[k], float)
                                                              else f"{k} {values[k]}" for k in inherited)
             + " (give the option to change one)")


def _print_fit(result: Any) -> None:
    summary = result.summary
    title = "preview (not stored)" if result.run_id is None else f"run {result.run_id}"
    show(
        f"curation fit, {title}: {summary['n_clips']} clips, {summary['n_categories']} categories "
        f"({summary['n_positive']} P, {summary['n_negative']} N), {summary['n_candidates']} candidates "
        f"at θ = {summary['theta_used']:.4g} (reference ALM {result.alm_model})"
    )
    for reason in summary.get("missing", []):
        say(f"no category could be fitted; missing {reason}")
    pool = summary.get("quality_pool") or {}
    show(f"quality: {summary.get('n_quality_flagged', 0)} of the {summary['n_clips']} clips flagged"
         + (f"; {pool['why_not']}" if pool.get("why_not") else
            f"; low_complexity below ACI {pool['cut_off']:.4g}, percentile {pool['percentile']:g} of {pool['clips']} "
            f"{pool['what']}" if pool.get("cut_off") is not None else ""))
    calibration = summary["theta_calibration"]
    if calibration["theta"] is not None:
        show(
            f"θ from {calibration['n_decisions']} expert decisions: {calibration['theta']:.4g} "
            f"(balanced accuracy {calibration['balanced_accuracy']:.3f})"
        )
    if calibration["spearman"] is not None:
        show(f"Spearman(l, expert rating) = {calibration['spearman']:.3f} over {calibration['n_ratings']} clips")
    for category in sorted(result.categories, key=lambda c: (c.polarity not in ("P", "N"), -abs(c.a - c.a_bar))):
        if category.polarity in ("P", "N"):
            mark = " (expert)" if category.overridden else ""
            show(
                f"  {category.polarity} {category.id} {category.name or ''} a={category.a:.3f} "
                f"ā={category.a_bar:.3f} n={category.support}{mark}"
            )
    diff = result.diff
    if diff is None:
        show("no earlier run to compare with")
    elif diff.empty:
        show(f"no change against run {diff.base_run_id}")
    else:
        show(
            f"against run {diff.base_run_id}: {len(diff.polarity_changes)} polarity changes, "
            f"{len(diff.entered)} clips entered and {len(diff.left)} left the candidates"
        )
        from workbench.agreement.names import category_name

        names = {c.id: c.name for c in result.categories if c.name}  # the name beside the id (issue 39)
        for change in diff.polarity_changes:
            show(f"  {category_name(change.category, names)}: {change.old} → {change.new}")
        for move in diff.largest_moves[:10]:
            show(f"  {move.clip}: {move.old:+.3f} → {move.new:+.3f}")


def select_command(
    ctx: typer.Context,
    size: int = typer.Option(..., "--size", help="Number of clips M to select."),
    run: Optional[int] = typer.Option(None, "--run", help="Curation run id (default: the latest)."),
) -> None:
    """Select M clips from a curation run, stratified by speech and continent; stores the selection."""
    from workbench.curation.stored import run_to_select_from

    app = app_context(ctx)
    store = app.store()
    run_to_select_from(store, run)  # a refusal answers before the curation model (scipy) loads
    from workbench.curation.selection import make_selection

    result = make_selection(store, size, run_id=run)
    if app.json:
        emit_json({"selection_id": result.selection_id, "run_id": result.run_id, "keys": result.keys,
                   "counts": result.counts, "left_out": result.left_out})
        return
    counts = result.counts
    show(
        f"selection {result.selection_id} from run {result.run_id}: {counts['selected']} of {counts['size_requested']} "
        f"clips ({counts['speech']} speech, {counts['no_speech']} no speech; {counts['accepted_in']} expert accepts)"
    )
    for stratum, n in sorted(counts["by_stratum"].items()):
        show(f"  {stratum}: {n}")
    if counts["continents_missing"]:
        show(f"continents without a clip (M too small): {', '.join(counts['continents_missing'])}")
    excluded = counts.get("excluded", {})
    show(
        f"left out: {excluded.get('rejected', 0)} rejected, {excluded.get('quality_flagged', 0)} with unresolved "
        f"quality flags, {excluded.get('below_theta', 0)} below θ"
    )
    for entry in counts.get("accepted_left_out", []):
        show(f"  accepted but left out: {entry['key']}: {entry['reason']}")
    if ctx.find_root().params.get("verbose"):
        for entry in result.left_out:
            why = {"rejected": "rejected by the experts", "below_theta": "below θ",
                   "not_chosen": "eligible, not chosen (size, speech balance or continents)",
                   "quality_flagged": f"unresolved quality flag(s): {entry.get('detail', '')}"}[entry["reason"]]
            show(f"  left out: {entry['key']}: {why}")
    elif result.left_out:
        say(f"{len(result.left_out)} clip(s) left out; -v names them, --json lists them with why")


@export_app.command("selection")
def export_selection_command(
    ctx: typer.Context,
    file: str = typer.Argument(..., help="CSV to write (manifest: FILE.manifest.json); --format hf: a folder."),
    selection: Optional[int] = typer.Option(None, "--selection", help="Selection id (default: the latest)."),
    force: bool = typer.Option(False, "--force", help="Replace FILE and FILE.manifest.json if they exist."),
    format: str = typer.Option("agl1k", "--format", help="agl1k (CSV + manifest) or hf (a Hugging Face dataset folder)."),  # noqa: A002
    no_embed_audio: bool = typer.Option(False, "--no-embed-audio", help="hf: write recording paths, not their bytes."),
) -> None:
    """Write a selection as an AGL1K-format CSV (20-name header) plus FILE.manifest.json, or as a Hugging Face dataset."""
    from workbench.curation.stored import selection_to_export

    app = app_context(ctx)
    check_choice(format, ("agl1k", "hf"), "--format")
    selection_to_export(app.store(), selection)  # a refusal answers before the curation model (scipy) loads
    if format == "hf":
        from pathlib import Path

        from cli.data_cmds import export_hf_folder

        export_hf_folder(app, Path(file), selection=str(selection) if selection is not None else "latest",
                         embed_audio=not no_embed_audio, force=force)
        return
    from workbench.curation.export import export_selection

    result = export_selection(app.store(), file, selection_id=selection, overwrite=force)
    if app.json:
        emit_json({"csv": str(result.csv_path), "manifest": str(result.manifest_path), "n_rows": result.n_rows,
                   "selection_id": result.selection_id})
        return
    show(f"wrote {result.n_rows} clips to {result.csv_path} and the manifest to {result.manifest_path}")


@check_app.command("locations")
def check_locations_command(
    ctx: typer.Context,
    dataset: Optional[str] = typer.Option(None, "--dataset", help="Only this dataset (by name)."),
    aliases: Optional[str] = typer.Option(
        None, "--aliases", help="Country alias table (TOML; default: country_aliases.toml in the configuration "
                                "folder, if there). Template: resources/country_aliases.toml."),
) -> None:
    """List clips whose coordinates fall outside their stated country (offline reverse geocoding).

    A labelling convention the dataset follows on purpose (AGL1K files Taiwan under China) is
    accepted once in a country alias table: its clips are counted as matches under the alias.
    """
    from workbench.curation.geocheck import location_report

    app = app_context(ctx)
    report = location_report(app.store(), dataset=dataset, aliases_path=aliases)
    if app.json:
        emit_json(report.to_dict())
        return
    counts = report.counts
    show(
        f"{report.n_checked} clips checked: {counts['match']} match, "
        + (f"{counts['alias']} match under an alias, " if report.aliases_file else "")
        + f"{counts['mismatch']} mismatch, "
        f"{counts['unknown_country']} unknown country names, {counts['no_coordinates']} without coordinates"
    )
    for check in report.mismatches:
        show(
            f"  {check.key}: stated {check.country} ({check.stated_iso}), coordinates near {check.nearest_place} "
            f"({check.geocoded_iso}, {check.nearest_place_km:.1f} km)"
        )
    for check in report.unknown_country:
        show(f"  {check.key}: country {check.country!r} has no ISO code")
    if report.aliases_file:
        show(f"country aliases from {report.aliases_file}:")
        for alias, count in report.alias_counts.items():
            show(f"  {alias}: {count} clip(s) affected")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("fit")(fit_command)
    app.command("select")(select_command)
    from cli.alm_cmds import export_predictions_command

    if not any(c.name == "predictions" for c in export_app.registered_commands):
        export_app.command("predictions")(export_predictions_command)
    from cli.data_cmds import export_dataset_command

    if not any(c.name == "dataset" for c in export_app.registered_commands):
        export_app.command("dataset")(export_dataset_command)
    app.add_typer(export_app, name="export")
    app.add_typer(check_app, name="check")
