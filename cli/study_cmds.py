"""`aglw study ...`: the Alternative Annotator Test, curation sensitivity, error modes, the report."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.context import app_context, emit_json, run_task, say, show, usage_error
from workbench.errors import AglwError
from workbench.studies.taxonomy import MODES, RIGHT_RADIUS_KM


def register(app: typer.Typer) -> None:
    """Add the ``study`` command group to the root app."""
    study = typer.Typer(help="Studies: may the LLM judge replace a person? error modes, sensitivity, the report.",
                        no_args_is_help=True)
    app.add_typer(study, name="study")

    @study.command("alt-test")
    def alt_test_cmd(
        ctx: typer.Context,
        ratings: Optional[Path] = typer.Option(
            None, "--ratings", help="Long-format CSV unit,rater,value (default: the project's own labels)."),
        llm: Optional[str] = typer.Option(
            None, "--llm", help="The rater tested as the alternative annotator (required with --ratings)."),
        epsilon: float = typer.Option(0.2, "--epsilon", help="Cost-benefit margin ε (0.2 experts, 0.15 skilled, 0.1 crowd)."),
        alpha: float = typer.Option(0.05, "--alpha", help="FDR level of the Benjamini–Yekutieli correction."),
        metric: str = typer.Option("accuracy", "--metric", help="accuracy | neg_rmse (with --ratings)."),
        min_items: int = typer.Option(30, "--min-items", help="Units an annotator must share to be tested (t-test)."),
        ignore: list[str] = typer.Option([], "--ignore-rater", help="A rater of the file that is neither the LLM nor a human."),
        alm: Optional[str] = typer.Option(None, "--alm", help="ALM whose judged reasoning is studied (project)."),
    ) -> None:
        """The Alternative Annotator Test (Calderon et al., ACL 2025): may the LLM replace the annotators?"""
        from workbench.studies import judges

        from cli.context import check_choice
        from workbench.studies.alt_test import METRICS

        check_choice(metric, METRICS, "--metric")
        context = app_context(ctx)
        if ratings is not None:
            if not llm:
                raise usage_error("NAME is required with --ratings: name the rater to test as the alternative annotator",
                                  "--llm")
            result = judges.alt_test_file(ratings, llm, metric=metric, epsilon=epsilon, alpha=alpha,
                                          min_items=min_items, ignore=tuple(ignore))
            payload = result.to_dict()
            if context.json:
                emit_json(payload)
            else:
                _print_result(payload)
            return
        from workbench.agreement.units import load_ratings

        data = load_ratings(context.store(), alm_model=alm)
        if data.ratings.empty:
            raise AglwError("the project has no judge or expert ratings yet; run `aglw judge` or record labels first")
        rows = judges.project_alt_tests(data.ratings, epsilon=epsilon, alpha=alpha, min_items=min_items)
        if llm:
            rows = [r for r in rows if r["llm"] == llm]
            if not rows:
                raise AglwError(f"--llm {llm!r}: no judge of that name in the project's ratings")
        if not rows:
            # nothing to test: say why instead of printing nothing (exit 1: the request failed)
            ratings_all = data.ratings
            n_experts = int(ratings_all.loc[ratings_all["rater_kind"] == "expert", "rater"].nunique())
            raise AglwError(f"no alt-test could run: the project has no LLM judge ratings (and {n_experts} "
                            "expert(s); the test needs at least 3); run `aglw judge` and record labels first")
        if context.json:
            emit_json({"alm": data.alm_model, "epsilon": epsilon, "alpha": alpha, "tests": rows})
        else:
            for row in rows:
                if row.get("refused"):
                    show(f"{row['label']} · {row['llm']}: not tested ({row['refused']})")
                else:
                    _print_result(row)
        if all(row.get("refused") for row in rows):
            reasons = sorted({str(row["refused"]) for row in rows})
            say(f"no requested alt-test could run: {reasons[0]}"
                + (f" (and {len(reasons) - 1} other reason(s) above)" if len(reasons) > 1 else ""))
            raise typer.Exit(1)


    @study.command("sensitivity")
    def sensitivity_cmd(
        ctx: typer.Context,
        gamma: str = typer.Option("250:4000:10:log", "--gamma", help="γ grid in km: start:stop:count[:log] or a,b,c."),
        alpha: str = typer.Option("0:0.2:10", "--alpha", help="α grid: start:stop:count or a,b,c."),
        theta: Optional[str] = typer.Option(
            None, "--theta", help="θ grid (default: the stored θ and 5–95 % quantiles of the stored l_k)."),
        run: Optional[int] = typer.Option(None, "--run", help="Stored curation run to compare with (default: latest)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Also write the table (CSV) and heat map (PNG) into DIR."),
        force: bool = typer.Option(False, "--force", help="Replace an earlier sweep in DIR (any other non-empty DIR is refused)."),
    ) -> None:
        """Curation sensitivity: sweep θ, α, γ; Jaccard with the stored run, size, balance, P/N flips."""
        from workbench.studies import sensitivity

        context = app_context(ctx)
        if out is not None:
            from workbench.studies.figures import check_sensitivity_target

            check_sensitivity_target(out, force=force)  # refuse at once, not after the sweep
        inputs, scores = sensitivity.load_sweep_inputs(context.store(), run)
        gammas = sensitivity.parse_grid(gamma, "gamma")
        alphas = sensitivity.parse_grid(alpha, "alpha")
        thetas = sensitivity.parse_grid(theta, "theta") if theta else sensitivity.default_thetas(
            scores, inputs.base.theta)
        say(f"sweeping {len(gammas)} γ × {len(alphas)} α × {len(thetas)} θ over {len(inputs.clips)} clips ...")
        result = run_task("sensitivity sweep", lambda task: sensitivity.sweep(
            inputs, gammas, alphas, thetas, task=task)).value
        files: list[str] = []
        if out is not None:
            from workbench.studies.figures import write_sensitivity

            files = write_sensitivity(out, result, force=force)
        if context.json:
            emit_json({**result.to_dict(), "files": files})
            return
        ref = result.reference
        stored_selection = (f"the stored selection (id {ref['selection_id']}) holds {ref['n_stored_selection']} clips"
                            if ref.get("n_stored_selection") is not None
                            else "no selection stored from this run (aglw select)")
        show(f"stored run: γ = {ref['gamma_km']:g} km, α = {ref['alpha']:g}, θ = {ref['theta']:g}: "
             f"{ref['n_candidates']} of {ref['n_clips']} clips are candidates (l > θ); {stored_selection}")
        table = result.table
        show(f"Jaccard with the stored run's candidates over {len(table)} settings: min {table['jaccard'].min():.3f}, "
             f"median {table['jaccard'].median():.3f}, max {table['jaccard'].max():.3f}; "
             f"size {int(table['n_selected'].min())}–{int(table['n_selected'].max())}; "
             f"categories flipping P/N: up to {int(table['n_flipped'].max())}")
        for path in files:
            show(f"wrote {path}")

    @study.command("error-mode")
    def error_mode_cmd(
        ctx: typer.Context,
        clip: str = typer.Option(..., "--clip", help="Clip key of the ALM answer."),
        alm: str = typer.Option(..., "--alm", help="The ALM (model name of its run) that gave the answer."),
        modes: Optional[str] = typer.Option(
            None, "--modes", help=f"Comma-separated modes ({', '.join(MODES)}), or 'none' to clear."),
        note: Optional[str] = typer.Option(None, "--note", help="What went wrong (required with 'other')."),
        expect_version: Optional[int] = typer.Option(None, "--expect-version", min=0,
                                                     help="Only write if the stored row still has this version."),
        force: bool = typer.Option(False, "--force", help=f"Tag an answer within {RIGHT_RADIUS_KM:,.0f} km of the truth anyway."),
    ) -> None:
        """Tag an ALM answer with error modes (AGL1K's taxonomy); kept in the label history."""
        from workbench.labels import UNSET, LabelService
        from workbench.studies.error_modes import ErrorModeService, describe, split_modes

        if modes is None and note is None:
            raise usage_error("give --modes and/or --note", "--modes / --note")
        context = app_context(ctx)
        store = context.store()
        labels = LabelService(store)
        annotator = labels.ensure_annotator(context.annotator_name())
        service = ErrorModeService(store)
        clip_id = labels.clip_id_for_key(clip)
        alm_run_id = service.alm_run_id(alm)
        chosen = UNSET if modes is None else (None if modes.strip().lower() == "none" else modes)
        change = service.set_error_modes(annotator.id, clip_id, alm_run_id, modes=chosen,
                                         note=UNSET if note is None else note, expected_version=expect_version,
                                         force=force)
        if context.json:
            emit_json({"ok": True, "clip": clip, "clip_id": clip_id, "alm": alm, "alm_run_id": alm_run_id,
                       "old": change.old, "new": change.new, "version": change.version,
                       "command_id": change.command_id})
        else:
            shown = describe(split_modes(change.new.get("modes"))) if "modes" in change.new else "note"
            show(f"saved: {annotator.name}: {clip} · {alm}: {shown} (version {change.version})")

    @study.command("error-modes")
    def error_modes_cmd(
        ctx: typer.Context,
        alm: Optional[str] = typer.Option(None, "--alm", help="Only this ALM."),
        kind: str = typer.Option("expert", "--kind", help="expert | judge: whose tags the shares count."),
    ) -> None:
        """Error-mode shares per ALM (overall, by continent, by speech) and the agreement on each mode."""
        from workbench.agreement.units import load_ratings
        from workbench.studies import error_modes

        context = app_context(ctx)
        from cli.context import check_choice

        check_choice(kind, ("expert", "judge"), "--kind")
        store = context.store()
        table = error_modes.error_mode_table(store)
        if alm is not None:
            error_modes.ErrorModeService(store).alm_run_id(alm)  # a one-line error for an unknown ALM
            table = table[table["alm"] == alm]
        clips = load_ratings(store).clips
        shares = error_modes.error_mode_shares(table, clips, kind)
        agreement = error_modes.error_mode_agreement(table)
        if context.json:
            emit_json({"kind": kind, "shares": shares.to_dict(orient="records"),
                       "agreement": agreement.to_dict(orient="records"),
                       "n_answers": int(table[["alm", "clip_id"]].drop_duplicates().shape[0])})
            return
        from workbench.studies.figures import SMALL_N

        overall = shares[shares["breakdown"] == "all"]
        if overall.empty:
            show("no error modes tagged yet (aglw study error-mode --clip KEY --alm NAME --modes ...)")
            return
        for (name, part) in overall.groupby("alm", sort=True):
            cells = ", ".join(f"{error_modes.TAXONOMY[m][0]} {v:.0%}" for m, v in zip(part["mode"], part["share"])
                              if v > 0)
            n = int(part["n_answers"].max())
            few = f"; fewer than {SMALL_N} answers: shares say little" if n < SMALL_N else ""
            show(f"{name} (n = {n} answers{few}): {cells or 'no mode chosen'}")
        alphas = agreement[agreement["coefficient"] == "krippendorff_alpha"]
        for row in alphas.itertuples():
            value = f"not reported ({row.reason})" if row.value != row.value else f"{row.value:.3f}"
            show(f"agreement on {error_modes.TAXONOMY[row.mode][0]}: Krippendorff α = {value} ({row.n_units} answers)")


    @study.command("report")
    def report_cmd(
        ctx: typer.Context,
        out: Path = typer.Option(..., "--out", help="A new or empty folder for report.html, tables/*.csv, tables/*.tex."),
        epsilon: float = typer.Option(0.2, "--epsilon", help="Alt-test cost-benefit margin ε."),
        alpha: float = typer.Option(0.05, "--alpha", help="Alt-test FDR level (Benjamini–Yekutieli)."),
        bootstrap: int = typer.Option(1000, "--bootstrap", help="Cluster-bootstrap resamples over clips (B)."),
        seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
        min_items: int = typer.Option(30, "--min-items", help="Units an expert must share to be tested."),
        alm: Optional[str] = typer.Option(None, "--alm", help="ALM whose judged reasoning is studied (default: latest)."),
        force: bool = typer.Option(False, "--force", help="Replace an earlier study report in DIR."),
    ) -> None:
        """The study as a self-contained HTML report plus the CSV and LaTeX tables behind it."""
        from workbench.studies.report import REPORT, write_report

        context = app_context(ctx)
        if bootstrap < 0:
            raise usage_error(f"{bootstrap}: the number of resamples cannot be negative", "--bootstrap")
        say(f"study report: alt-test ε = {epsilon}, α = {alpha}; cluster bootstrap B = {bootstrap}, seed = {seed} ...")
        store = context.store()
        report = run_task("study report", lambda task: write_report(
            store, out, epsilon=epsilon, alpha=alpha, bootstrap=bootstrap, seed=seed, min_items=min_items,
            alm_model=alm, replace=force, task=task)).value
        if context.json:
            emit_json(report.to_dict())
        else:
            show(f"wrote {out / REPORT} ({report.n_figures} figures) and {len(report.tables)} tables")


    @study.command("judge-error-modes")
    def judge_error_modes_cmd(
        ctx: typer.Context,
        alm: str = typer.Option(..., "--alm", help="The ALM whose wrong or refused answers are judged."),
        judges: Optional[str] = typer.Option(None, "--judges", help="Comma-separated judge names (default: the trio)."),
        gamma: float = typer.Option(RIGHT_RADIUS_KM, "--gamma", help="An answer at least this far off (km) is wrong."),
        limit: Optional[int] = typer.Option(None, "--limit", min=0, help="At most this many answers."),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="Another API endpoint (proxy or test server)."),
    ) -> None:
        """Ask the LLM judges for the error modes of the ALM's wrong answers (prompt error-modes-v1)."""
        from workbench.attribution.config import load_judges
        from workbench.studies.error_judges import judge_error_modes

        context = app_context(ctx)
        config = load_judges()
        names = [n.strip() for n in judges.split(",") if n.strip()] if judges else None
        chosen = config.select(names)
        store = context.store()
        # Ctrl-C stops after the answer in flight (stored), exit 130; a re-run asks only the rest.
        report = run_task("judge error modes", lambda task: judge_error_modes(
            store, chosen, alm, base_url=base_url, gamma_km=gamma, limit=limit, task=task)).value
        if context.json:
            emit_json(report.to_dict())
        else:
            show(f"{report.n_answers} wrong or refused answers of {alm} (prompt {report.prompt_version})")
            for j in report.judges:
                show(f"  {j['judge']}: {j['ok']} ok, {j['failed']} failed, {j['cached']} already answered")
                for failure in j["failures"][:5]:
                    say(f"  {j['judge']} · {failure['clip']}: {failure['reason']}")
        if any(j["failed"] for j in report.judges):
            raise typer.Exit(1)


    @study.command("plan")
    def plan_cmd(
        ctx: typer.Context,
        name: str = typer.Option(..., "--name", help="Name of the plan."),
        annotators: str = typer.Option(..., "--annotators", help="Comma-separated annotator names."),
        overlap: int = typer.Option(2, "--overlap", help="How many annotators see each clip."),
        clips: Optional[str] = typer.Option(None, "--clips", help="Comma-separated clip keys (default: every clip)."),
        seed: int = typer.Option(0, "--seed", help="Seed of the order inside each stratum."),
        blind: bool = typer.Option(True, "--blind/--no-blind", help="Hide judges and other labels until labelled."),
    ) -> None:
        """Plan a study: clips to annotators with overlap, balanced over continents and speech/non-speech."""
        from workbench.studies.planning import create_plan

        context = app_context(ctx)
        names = [n.strip() for n in annotators.split(",") if n.strip()]
        keys = [k.strip() for k in clips.split(",") if k.strip()] if clips else None
        summary = create_plan(context.store(), name, names, overlap=overlap, clip_keys=keys, blind=blind, seed=seed)
        if context.json:
            emit_json(summary.to_dict())
        else:
            show(f"plan {summary.name}: {summary.n_clips} clips, each seen by {summary.overlap} annotators"
                 f"{', blind' if summary.blind else ''}")
            for a in summary.annotators:
                show(f"  {a['annotator']}: {a['assigned']} clips")

    @study.command("progress")
    def progress_cmd(
        ctx: typer.Context,
        plan: Optional[str] = typer.Option(None, "--plan", help="Plan name (default: the latest)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Also write the plan with progress as CSV."),
        force: bool = typer.Option(False, "--force", help="Replace the CSV if it exists."),
    ) -> None:
        """Each annotator's progress in a study plan; --out exports the plan with the data."""
        from workbench.studies.planning import plan_table, progress

        from workbench.outputs import check_file_target, write_text

        context = app_context(ctx)
        if out is not None:
            check_file_target(out, force=force)  # refuse at once (a link is never written through)
        store = context.store()
        summary = progress(store, plan)
        if out is not None:
            _, table = plan_table(store, summary.name)
            write_text(out, table.drop(columns=["annotator_id"]).to_csv(index=False), force=force)
        if context.json:
            emit_json({**summary.to_dict(), "out": None if out is None else str(out)})
        else:
            for a in summary.annotators:
                nxt = f", next {a['next_clip']}" if a["next_clip"] else ""
                show(f"{a['annotator']}: {a['done']} of {a['assigned']} done ({a['share_done']:.0%}){nxt}")

    @study.command("guess")
    def guess_cmd(
        ctx: typer.Context,
        clip: str = typer.Option(..., "--clip", help="Clip key."),
        # text, parsed strictly by the guess service (ASCII decimal: "٣" or "1_0" is no latitude)
        lat: Optional[str] = typer.Option(None, "--lat", help="Guessed latitude (degrees)."),
        lon: Optional[str] = typer.Option(None, "--lon", help="Guessed longitude (degrees)."),
        confidence: Optional[str] = typer.Option(None, "--confidence", help="How sure, 0..1."),
        country: Optional[str] = typer.Option(None, "--country", help="Guessed country (optional)."),
        city: Optional[str] = typer.Option(None, "--city", help="Guessed city (optional)."),
    ) -> None:
        """Record a blind guess of where a clip was recorded (humans as localizers)."""
        from workbench.labels import LabelService
        from workbench.studies.localizers import GuessService, check_guess

        context = app_context(ctx)
        store = context.store()
        labels = LabelService(store)
        values = {k: v for k, v in (("latitude", lat), ("longitude", lon), ("confidence", confidence),
                                    ("country", country), ("city", city)) if v is not None}
        check_guess(values)  # before a new annotator is added: a refused guess stores nothing at all
        clip_id = labels.clip_id_for_key(clip)
        annotator = labels.ensure_annotator(context.annotator_name())
        change = GuessService(store).set_guess(annotator.id, clip_id, **values)
        if context.json:
            emit_json({"ok": True, "clip": clip, "old": change.old, "new": change.new, "version": change.version,
                       "command_id": change.command_id})
        else:
            show(f"saved: {annotator.name}: guess for {clip} (version {change.version})")

    @study.command("localizers")
    def localizers_cmd(
        ctx: typer.Context,
        profile: str = typer.Option("agl1k", "--profile", help="agl1k | iso (as the leaderboard)."),
    ) -> None:
        """Human localizers scored with the leaderboard's metrics: one row per annotator and one pooled."""
        from cli.context import check_choice
        from workbench.metrics.keys import PROFILES
        from workbench.studies.localizers import human_leaderboard

        check_choice(profile, PROFILES, "--profile")
        context = app_context(ctx)
        from workbench.country_aliases import alias_table

        rows = human_leaderboard(context.store(), profile, aliases=alias_table())  # as the leaderboard scores them
        if context.json:
            emit_json({"profile": profile, "rows": rows})
            return
        if not rows:
            show("no location guesses yet (aglw study guess --clip KEY --lat .. --lon .. --confidence ..)")
        from workbench.formatting import count, km, probability, score

        for r in rows:
            show(f"{r['model']}: n = {count(r['n'])}, mean distance {km(r['distance_error_km'])}, "
                 f"GeoScore {score(r['geoscore_mean'])}, mean confidence {probability(r['mean_confidence'])}")

    from cli.study_web import register as register_web

    register_web(study)  # study web / invite / participants: their own module (cli/study_web.py)


def _print_result(r: dict) -> None:
    from workbench.formatting import formatted

    head = f"{r['label']} · " if r.get("label") else ""
    verdict = "PASSED" if r["passed"] else "FAILED"
    show(f"{head}{r['llm']} [{verdict}] winning rate {r['winning_rate']:.2f}, advantage probability "
         f"{r['advantage_probability']:.2f} (metric {r['metric']}, ε = {r['epsilon']}, α = {r['alpha']}, "
         f"{r['n_units']} units, {r['n_humans']} annotators)")
    for a in r["annotators"]:
        if a["skipped"]:
            show(f"  {a['annotator']}: not tested — {a['skipped']}")
        else:
            p = formatted(a["p_value"], "p_value", missing="n/a")
            show(f"  {a['annotator']}: {a['n_units']} units, p = {p}, "
                 f"{'beaten by the LLM' if a['rejected'] else 'not beaten'}")
    for note in r.get("notes", []):
        say(note)
