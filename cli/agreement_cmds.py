"""`aglw` commands: agreement."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.context import app_context, emit_json, run_task, say, show


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""

    @app.command("agreement")
    def agreement(
        ctx: typer.Context,
        out: Optional[Path] = typer.Option(None, "--out", help="Write the project's agreement bundle into DIR."),
        ratings: Optional[Path] = typer.Option(
            None, "--ratings", help="Agreement of a long-format CSV with columns unit,rater,value (no project)."
        ),
        level: str = typer.Option("nominal", "--level", help="nominal | ordinal | interval (with --ratings)."),
        bootstrap: int = typer.Option(2000, "--bootstrap", min=0, help="Cluster-bootstrap resamples over clips (B)."),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
        reveal_annotators: bool = typer.Option(
            False, "--reveal-annotators", help="Name experts by name instead of pseudonym in the bundle."
        ),
        ontology: Optional[Path] = typer.Option(
            None, "--ontology",
            help="AudioSet ontology.json for the root-category breakdown (default: $AGLW_ONTOLOGY, "
            "ontology_path in config.toml, or the downloaded copy).",
        ),
        alm: Optional[str] = typer.Option(None, "--alm", help="ALM whose judged reasoning is studied (default: latest)."),
        force: bool = typer.Option(
            False, "--force", help="Replace an earlier agreement bundle in DIR (any other non-empty DIR is refused)."
        ),
    ) -> None:
        """Agreement study: the project bundle (--out) or any ratings CSV (--ratings)."""
        from workbench.agreement import service

        context = app_context(ctx)
        if (out is None) == (ratings is None):
            from cli.context import usage_error

            raise usage_error("pass exactly one of --out DIR (project bundle) or --ratings FILE.csv", "--out / --ratings")
        if ratings is not None:
            from cli.context import check_choice

            check_choice(level, ("nominal", "ordinal", "interval"), "--level")
            frame = service.read_ratings_csv(ratings, level)
            result = service.agreement_from_ratings(frame, level)
            if context.json:
                emit_json(result)
            else:
                _print_ratings(result)
            return
        from workbench.agreement.report import check_bundle_target
        from workbench.tagging.ontology import load_local_ontology, load_ontology

        check_bundle_target(out, replace=force)  # refuse at once, before any diagnostics or work

        audioset = load_ontology(ontology) if ontology is not None else load_local_ontology()
        roots = audioset.primary_roots if audioset is not None else None
        if roots is None:
            say("no AudioSet ontology given (--ontology, $AGLW_ONTOLOGY or ontology_path): "
                "the root-category breakdown is skipped")
        from workbench import extras
        from workbench.studies import error_modes

        if not extras.has("pyarrow"):
            say(f"the bundle gets its tables as CSV only: {extras.missing_extra_message('pyarrow')}")
        say(f"agreement: cluster bootstrap B = {bootstrap}, seed = {seed} ...")
        store = context.store()
        manifest = run_task(
            "agreement bootstrap",
            lambda task: service.export_agreement(
                store, out, bootstrap=bootstrap, seed=seed, reveal_annotators=reveal_annotators,
                category_roots=roots, alm_model=alm, replace=force, task=task,
                extra_tables=error_modes.bundle_tables,
            ),
        ).value
        if context.json:
            emit_json({"out": str(out), **manifest.to_dict()})
        else:
            show(f"wrote {len(manifest.files) + 1} files to {out} ({manifest.n_ratings} ratings, "
                f"fingerprint {manifest.data_fingerprint[:12]})")


def _print_ratings(result: dict) -> None:
    def fmt(entry: dict) -> str:
        n = f"n = {entry['n_units']} units, {entry['n_raters']} raters"
        if entry["value"] is None:
            return f"not reported ({entry['reason']}; {n})"
        return f"{entry['value']:.4f} ({n})"

    details = result["details"]
    show(f"units: {result['n_units']}, raters: {', '.join(result['raters'])}")
    for key in ("percent_agreement", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1", "icc2_1", "icc3_1"):
        if key in details:
            show(f"{key}: {fmt(details[key])}")
    for key in ("cohen_kappa", "weighted_kappa_linear", "weighted_kappa_quadratic"):
        for pair, entry in details.get(key, {}).items():
            show(f"{key} {pair}: {fmt(entry)}")
