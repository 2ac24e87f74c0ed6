"""The study as a self-contained HTML report plus the CSV and LaTeX tables behind it.

``write_report`` gathers every study of a project (the alt-test per judge and label, the
human–human baseline beside human–LLM and LLM–LLM with cluster-bootstrap intervals, per-item
difficulty, per-category confusion matrices, judge test–retest, error-mode shares and their
agreement, curation sensitivity) and writes ``report.html`` (figures embedded as base64 PNG, no
external file or network request), ``tables/*.csv``, ``tables/*.tex`` and ``report.json``.  The
methods paragraph is generated from the numbers, so every n, coefficient, interval, ε and α in
it is the one in the tables.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench.agreement.names import coefficient_name, pair_name, rater_name
from workbench.errors import AglwError, InputError
from workbench.studies.report_counts import (
    StudyCounts,
    agreement_missing,
    alt_test_missing,
    comparison_sentence,
    error_modes_missing,
    study_counts,
)
from workbench.outputs import check_folder_target, output_folder
from workbench.studies.report_html import CSS, figure_html, fmt, latex_table, missing_html, table_html

if TYPE_CHECKING:
    from storage import Store
    from workbench.tasks import TaskContext

REPORT = "report.html"


@dataclass
class StudyReport:
    """What the report holds (also ``report.json``)."""

    out: str
    created_at: str
    alm_model: str | None
    epsilon: float
    alpha: float
    bootstrap: int
    seed: int
    n_figures: int
    tables: list[str] = field(default_factory=list)
    methods: str = ""
    alt_tests: list[dict] = field(default_factory=list)
    crowd: list[dict] = field(default_factory=list)  # per web study: its flow and the crowd vs the models

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None (report.json stays valid JSON)."""
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _alt_frame(rows: list[dict]) -> pd.DataFrame:
    out = []
    for r in rows:
        if r.get("refused"):
            out.append({"label": r["label"], "candidate": r["llm"], "metric": r["metric"], "n_units": None,
                        "n_tested": None, "winning_rate": None, "advantage_probability": None, "passed": None,
                        "note": r["refused"]})
        else:
            out.append({"label": r["label"], "candidate": r["llm"], "metric": r["metric"], "n_units": r["n_units"],
                        "n_tested": r["n_tested"], "winning_rate": r["winning_rate"],
                        "advantage_probability": r["advantage_probability"], "passed": r["passed"],
                        "note": "; ".join(r.get("notes", []))})
    return pd.DataFrame(out, columns=["label", "candidate", "metric", "n_units", "n_tested", "winning_rate",
                                      "advantage_probability", "passed", "note"])


def methods_paragraph(*, n_clips: int, experts: int, judges: int, alt_rows: list[dict], baseline: pd.DataFrame,
                      epsilon: float, alpha: float, bootstrap: int, seed: int, sweep: dict | None,
                      n_error_answers: int, min_items: int = 30, counts: StudyCounts | None = None) -> str:
    """The methods text, every figure filled in from the computed results; ``counts`` (see
    :func:`workbench.studies.report_counts.study_counts`) says what was actually compared."""
    if counts is None:
        counts = StudyCounts(experts, judges, n_clips, n_clips, n_clips, n_error_answers)
    parts = [comparison_sentence(counts)]
    if not baseline.empty and baseline["value"].notna().any():
        parts.append(
            f"Agreement coefficients carry 95 % percentile intervals from a cluster bootstrap over clips "
            f"(B = {bootstrap}, seed {seed}; clips resampled with replacement with all their units and raters).")
    for label in ("effect", "contribution", "polarity"):
        part = baseline[baseline["label"] == label]
        if part.empty:
            continue
        sentences = []
        for section in ("expert-expert", "expert-judge", "judge-judge", "test-retest"):
            rows = part[(part["section"] == section) & part["value"].notna()]
            if rows.empty:
                continue
            coefficient = coefficient_name(rows["coefficient"].iloc[0])
            if len(rows) == 1:
                row = rows.iloc[0]
                sentences.append(
                    f"{section} {coefficient} = {row['value']:.3f} [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}] "
                    f"({pair_name(row['rater_a'], row['rater_b'])}, n = {int(row['n_units'])} units)")
            else:
                low, high = rows.loc[rows["value"].idxmin()], rows.loc[rows["value"].idxmax()]
                sentences.append(
                    f"{section} {coefficient} from {low['value']:.3f} [{fmt(low['ci_low'])}, {fmt(low['ci_high'])}] "
                    f"({pair_name(low['rater_a'], low['rater_b'])}, n = {int(low['n_units'])}) to {high['value']:.3f} "
                    f"[{fmt(high['ci_low'])}, {fmt(high['ci_high'])}] ({pair_name(high['rater_a'], high['rater_b'])}, "
                    f"n = {int(high['n_units'])}) over {len(rows)} pairs")
        if sentences:
            parts.append(f"For {label}: " + "; ".join(sentences) + ".")
    tested = [r for r in alt_rows if not r.get("refused")]
    missing = alt_test_missing(counts, alt_rows)
    if missing is not None:
        parts.append(f"The Alternative Annotator Test was not run: {missing}.")
    else:
        parts.append(
            f"The Alternative Annotator Test (Calderon, Reichart & Dror, ACL 2025) was run with ε = {epsilon} and a "
            f"Benjamini–Yekutieli correction at α = {alpha} (a one-sided one-sample t-test per held-out expert; "
            f"experts with fewer than {min_items} shared units are left out; the LLM passes at a winning rate ω ≥ 0.5).")
    for r in tested:
        parts.append(
            f"{rater_name(r['llm'])} on {r['label']} ({r['metric']}): ω = {r['winning_rate']:.2f} over {r['n_tested']} expert(s), "
            f"ρ = {r['advantage_probability']:.3f}, n = {r['n_units']} units — "
            f"{'passed' if r['passed'] else 'failed'}.")
    refused = [r for r in alt_rows if r.get("refused")]
    if refused and missing is None:
        parts.append(f"{len(refused)} candidate/label combination(s) could not be tested "
                     f"(e.g. {rater_name(refused[0]['llm'])} on {refused[0]['label']}: {refused[0]['refused']}).")
    if counts.n_error_answers:
        parts.append(f"Experts tagged {counts.n_error_answers} wrong or refused ALM answer(s) with AGL1K's error-mode "
                     "taxonomy; shares count each answer once, and a share from fewer than 5 answers is marked.")
    else:
        parts.append("No ALM answer was tagged with error modes.")
    if sweep is not None:
        parts.append(
            f"Sensitivity: {sweep['n_settings']} settings ({sweep['n_gamma']} γ × {sweep['n_alpha']} α × "
            f"{sweep['n_theta']} θ) were refitted; the Jaccard overlap of the candidate set with the stored run "
            f"(γ = {sweep['gamma_km']:g} km, α = {sweep['alpha']:g}, θ = {sweep['theta']:g}, "
            f"{sweep['n_selected']} candidate clips) ranged from {sweep['jaccard_min']:.3f} to {sweep['jaccard_max']:.3f} "
            f"(median {sweep['jaccard_median']:.3f}); "
            + (f"up to {sweep['max_flipped']} categories flipped between P and N." if sweep["max_flipped"]
               else "no category flipped between P and N."))
    return " ".join(parts)


def _holds_earlier_report(out: Path) -> bool:
    """Whether ``out`` holds an earlier study report and nothing else (so --force may replace it)."""
    ours = {REPORT, "report.json", "tables"}
    return (out / REPORT).exists() and all(p.name in ours for p in out.iterdir())


def _check_target(out: Path, replace: bool) -> None:
    check_folder_target(out, force=replace, earlier=_holds_earlier_report, what="study report")


def _within(task: TaskContext | None) -> TaskContext | None:
    """The context of a step's own loop (the sweep): the report's cancel, checked between its
    refits, and no progress of its own (the report counts steps, the sweep is one of them)."""
    if task is None:
        return None
    from workbench.tasks import TaskContext

    outer: TaskContext = task

    class Within(TaskContext):
        def check_cancel(self) -> None:
            outer.check_cancel()

        @property
        def cancelled(self) -> bool:
            return outer.cancelled

        def set_total(self, total: int) -> None:
            pass

        def advance(self, units: int = 1) -> None:
            pass

    return Within()


def write_report(
    store: Store,
    out: str | Path,
    *,
    epsilon: float = 0.2,
    alpha: float = 0.05,
    bootstrap: int = 1000,
    seed: int = 0,
    min_items: int = 30,
    alm_model: str | None = None,
    sweep_grid: tuple[list[float], list[float], list[float] | None] | None = None,
    replace: bool = False,
    task: TaskContext | None = None,
) -> StudyReport:
    """Compute every study of the project and write the report into ``out`` (a new or empty folder).

    Parameters
    ----------
    store
        The project.
    out
        The folder; one holding an earlier report is replaced only with ``replace``.
    epsilon, alpha, min_items
        The alt-test's ε, FDR level and minimum shared units per expert.
    bootstrap, seed
        Cluster-bootstrap resamples and seed of the agreement intervals.
    alm_model
        The ALM whose judged reasoning is studied (default: that of the latest judge run).
    sweep_grid
        (γ values, α values, θ values or None for the default θ) of the sensitivity sweep;
        None: 10 × 10 × 10 default grid.  The sweep is skipped without a stored curation run.
    task
        Progress and cancellation (:mod:`workbench.tasks`).
    """
    from workbench.agreement.analysis import compute_coefficients
    from workbench.agreement.names import category_name, readable
    from workbench.agreement.units import load_ratings
    from workbench.project import category_names
    from workbench.studies import error_modes, figures, judges, sensitivity

    out = Path(out)
    _check_target(out, replace)
    steps = ["ratings", "coefficients", "alt-test", "error modes", "sensitivity", "write"]
    if task is not None:
        task.set_total(len(steps))

    def step(name: str) -> None:
        if task is not None:
            task.check_cancel()
            task.note(name)

    step("ratings")
    data = load_ratings(store, alm_model=alm_model)
    if data.ratings.empty:
        from workbench.studies import report_crowd

        crowd = report_crowd.crowd_parts(store)
        if not crowd:
            raise InputError("the project has no judge or expert ratings and no web study yet; run `aglw judge`, "
                             "record labels or collect a crowd baseline (`aglw study web`) first")
        # a crowd baseline needs no judge: its report holds the crowd and the human localizers only
        return _crowd_only_report(store, out, crowd, replace=replace, epsilon=epsilon, alpha=alpha,
                                  bootstrap=bootstrap, seed=seed, task=task)
    ratings = data.ratings
    if task is not None:
        task.advance()
    step("coefficients")
    coefficients = compute_coefficients(ratings, data.clips, bootstrap=bootstrap, seed=seed, retest=data.retest,
                                        breakdowns=False)
    baseline = judges.baseline_table(coefficients)
    if task is not None:
        task.advance()
    step("alt-test")
    alt_rows = judges.project_alt_tests(ratings, epsilon=epsilon, alpha=alpha, min_items=min_items)
    if task is not None:
        task.advance()
    step("error modes")
    mode_table = error_modes.error_mode_table(store)
    shares = error_modes.error_mode_shares(mode_table, data.clips, "expert")
    mode_agreement = error_modes.error_mode_agreement(mode_table)
    if task is not None:
        task.advance()
    step("sensitivity")
    sweep_summary = None
    sweep_result = None
    try:
        inputs, scores = sensitivity.load_sweep_inputs(store)
    except (InputError, AglwError):
        inputs = None
    if inputs is not None:
        import numpy as np

        gammas, alphas, thetas = sweep_grid or (list(np.geomspace(250, 4000, 10)), list(np.linspace(0, 0.2, 10)), None)
        thetas = thetas or sensitivity.default_thetas(scores, inputs.base.theta)
        sweep_result = sensitivity.sweep(inputs, gammas, alphas, thetas, task=_within(task))
        t = sweep_result.table
        sweep_summary = {
            "n_settings": len(t), "n_gamma": len(gammas), "n_alpha": len(alphas), "n_theta": len(thetas),
            **{k: sweep_result.reference[k] for k in ("gamma_km", "alpha", "theta", "n_selected")},
            "jaccard_min": float(t["jaccard"].min()), "jaccard_max": float(t["jaccard"].max()),
            "jaccard_median": float(t["jaccard"].median()), "max_flipped": int(t["n_flipped"].max()),
        }
    if task is not None:
        task.advance()

    step("write")
    # Built in a staging folder and swapped in whole (workbench/outputs.py): a failure (a figure,
    # a full disk: one line) leaves the earlier report as it was and nothing half-written beside it.
    with output_folder(out, force=replace, earlier=_holds_earlier_report, what="study report") as staging:
        (staging / "tables").mkdir(parents=True)
        tables: dict[str, tuple[pd.DataFrame, str]] = {
            "alt_test": (_alt_frame(alt_rows), "Alternative Annotator Test per candidate and label"),
            "alt_test_annotators": (pd.DataFrame([
                {"label": r["label"], "candidate": r["llm"], **a} for r in alt_rows if not r.get("refused")
                for a in r["annotators"]], columns=["label", "candidate", "annotator", "n_units", "p_value", "rejected",
                                                    "llm_advantage", "human_advantage", "skipped"]),
                "Alt-test per held-out expert"),
            "baseline": (baseline, "Human–human beside human–LLM, LLM–LLM and test–retest (all units)"),
            "coefficients": (coefficients, "Every agreement coefficient (all units)"),
            "error_mode_shares": (shares, "Error-mode shares per ALM"),
            "error_mode_agreement": (mode_agreement, "Agreement on each error mode"),
        }
        from workbench.studies import localizers, planning

        humans = pd.DataFrame(localizers.human_leaderboard(store))
        if not humans.empty:
            tables["human_localizers"] = (humans, "Humans as localizers (leaderboard metrics)")
        from workbench.studies import report_crowd

        crowd = report_crowd.crowd_parts(store)  # every web study: its flow, the crowd vs the models
        if crowd:
            tables["crowd_flow"] = (report_crowd.flow_frame(crowd), "Web studies: every count of the participant flow")
            tables["crowd_participants"] = (report_crowd.participants_frame(crowd),
                                            "Web studies: every participant (pseudonyms), status and exclusion")
            tables["crowd_vs_models"] = (report_crowd.comparison_frame(crowd),
                                         "Web studies: the crowd vs each model on the clips both answered")
        try:
            plan, plan_frame = planning.plan_table(store)
        except InputError:
            plan, plan_frame = None, None
        if plan_frame is not None:
            tables["plan"] = (plan_frame.drop(columns=["annotator_id", "annotator"]),
                              f"Study plan {plan.name} (overlap {plan.overlap}, {'blind' if plan.blind else 'not blind'})")
        difficulty = {label: judges.item_difficulty(ratings, label) for label in ("effect", "contribution")}
        for label, frame in difficulty.items():
            tables[f"difficulty_{label}"] = (frame, f"Per-item difficulty ({label})")
        if sweep_result is not None:
            tables["sensitivity"] = (sweep_result.table, "Curation sensitivity sweep")
        written = []
        for name, (frame, caption) in tables.items():
            frame.to_csv(staging / "tables" / f"{name}.csv", index=False)
            written.append(f"tables/{name}.csv")
        for name in ("alt_test", "baseline", "error_mode_shares"):
            frame, caption = tables[name]  # names a reader knows; the CSV keeps the keys
            (staging / "tables" / f"{name}.tex").write_text(latex_table(readable(frame), caption, f"tab:{name}"),
                                                            encoding="utf-8")
            written.append(f"tables/{name}.tex")

        study_n = study_counts(ratings, mode_table)
        n_experts, n_judges = study_n.n_experts, study_n.n_judges
        methods = methods_paragraph(
            n_clips=int(ratings["clip_id"].nunique()), experts=n_experts, judges=n_judges, alt_rows=alt_rows,
            baseline=baseline, epsilon=epsilon, alpha=alpha, bootstrap=bootstrap, seed=seed, sweep=sweep_summary,
            n_error_answers=study_n.n_error_answers, min_items=min_items, counts=study_n)

        studied = (html.escape(str(data.alm_model)) if data.alm_model is not None
                   else "none (no judge has rated an ALM's reasoning yet)")
        sections = [f"<h1>AGL Workbench study report</h1><p>ALM studied: {studied}; "
                    f"{n_experts} expert(s), {n_judges} judge(s); written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.</p>",
                    f"<h2>Methods</h2><p class='methods'>{html.escape(methods)}</p>"]
        n_figures = 0
        missing = alt_test_missing(study_n, alt_rows)
        if missing is None:
            body = [table_html(readable(tables["alt_test"][0]), tables["alt_test"][1]), figure_html(
                figures.alt_test_bars(alt_rows), "Winning rate ω and advantage probability ρ per candidate")]
            n_figures += 1
        else:
            body = [missing_html(f"Not run: {missing}.")]
        sections.append("<h2>May the LLM judge replace a person?</h2>" + "".join(body))
        missing = agreement_missing(study_n, baseline)
        body = [table_html(readable(baseline), tables["baseline"][1])] if missing is None else [missing_html(
            f"No agreement coefficient: {missing}.")]
        for label in sorted(set(baseline["label"])) if missing is None else ():
            body.append(figure_html(figures.baseline_forest(baseline, label), f"{label}: pairwise agreement with CIs"))
            n_figures += 1
        sections.append("<h2>Human–human baseline, human–LLM, LLM–LLM, test–retest</h2>" + "".join(body))
        body = []
        for label, frame in difficulty.items():
            if frame.empty:
                body.append(f"<p>{label}: no unit rated by two or more experts.</p>")
                continue
            counts = frame["kind"].value_counts().rename_axis("kind").reset_index(name="units")
            body.append(table_html(counts, f"{label}: where people disagree vs where only the LLM deviates"))
            body.append(table_html(frame.sort_values("expert_agreement"), f"{label}: hardest units first", limit=15))
        sections.append("<h2>Per-item difficulty</h2>" + "".join(body))
        confusions = judges.category_confusions(ratings, "effect")
        names = category_names(store)
        body = []
        for category, table in list(confusions.items())[:12]:
            named = category_name(category, names)
            body.append(figure_html(figures.confusion(table, f"effect · {named}"), f"effect confusion, {named}"))
            n_figures += 1
        sections.append("<h2>Per-category confusion matrices (effect)</h2>" + (
            f"<div class='grid'>{''.join(body)}</div>" if body else "<p>No unit with both experts and judges.</p>"))
        missing = error_modes_missing(study_n) if shares.empty else None
        body = [missing_html(f"{missing[0].upper()}{missing[1:]}.")] if missing else [figure_html(
            figures.error_mode_bars(shares, "all"), "Error-mode shares per ALM (n answers per bar; fewer than 5 marked)")]
        n_figures += 0 if missing else 1
        for breakdown in ("continent", "speech"):
            if not shares[shares["breakdown"] == breakdown].empty:
                body.append(figure_html(figures.error_mode_bars(shares, breakdown), f"Error-mode shares by {breakdown}"))
                n_figures += 1
        if not mode_agreement.empty:
            overall = mode_agreement[mode_agreement["coefficient"] == "krippendorff_alpha"]
            body.append(table_html(readable(overall), "Agreement on each error mode: Krippendorff's α over experts and judges "
                                    "(every pair's κ in tables/error_mode_agreement.csv)"))
        sections.append("<h2>Error modes of the ALM</h2>" + "".join(body))
        if "human_localizers" in tables:
            shown = humans[[c for c in ("model", "n", "distance_error_km", "geoscore_mean", "country_acc",
                                        "continent_acc", "mean_confidence") if c in humans.columns]]
            sections.append("<h2>Humans as localizers</h2>" + table_html(shown, tables["human_localizers"][1]))
        crowd_section, crowd_figures = report_crowd.crowd_html(crowd, table_html, figure_html, missing_html)
        sections.append(crowd_section)
        n_figures += crowd_figures
        if plan_frame is not None:
            done = plan_frame.groupby("pseudonym")["done"].agg(["size", "sum"]).reset_index()
            done.columns = ["annotator", "assigned", "done"]
            sections.append("<h2>Study plan</h2>" + table_html(done, tables["plan"][1]))
        if sweep_result is not None:
            summary = pd.DataFrame([sweep_summary])
            sections.append("<h2>How stable is the selection?</h2>" + table_html(summary, "Sweep summary") + figure_html(
                figures.sensitivity_heatmaps(sweep_result), "Jaccard with the stored selection over γ × α") +
                table_html(sweep_result.table.sort_values("jaccard"), "Least stable settings first", limit=15))
            n_figures += 1
        else:
            sections.append("<h2>How stable is the selection?</h2><p>No stored curation run: run `aglw fit` first.</p>")
        document = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>AGL Workbench study report</title>"
                    f"<style>{CSS}</style></head><body>{''.join(sections)}</body></html>")
        (staging / REPORT).write_text(document, encoding="utf-8")
        report = StudyReport(out=str(out), created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                             alm_model=data.alm_model, epsilon=epsilon, alpha=alpha, bootstrap=bootstrap, seed=seed,
                             n_figures=n_figures, tables=written, methods=methods, alt_tests=alt_rows,
                             crowd=[part.to_dict() for part in crowd])
        (staging / "report.json").write_text(json.dumps(_finite(report.to_dict()), indent=2, default=str,
                                                        ensure_ascii=False, allow_nan=False), encoding="utf-8")
    if task is not None:
        task.advance()
    return report


def _crowd_only_report(store: Any, out: Path, crowd: list, *, replace: bool, epsilon: float, alpha: float,
                       bootstrap: int, seed: int, task: Any) -> StudyReport:
    """The report of a project with web studies and no judge or expert rating: the crowd sections
    (flow, exclusions, the crowd vs the models) and the desktop localizers; the sections that need
    ratings say they are left out and why."""
    from workbench.studies import localizers, report_crowd

    with output_folder(out, force=replace, earlier=_holds_earlier_report, what="study report") as staging:
        (staging / "tables").mkdir(parents=True)
        tables = {"crowd_flow": report_crowd.flow_frame(crowd), "crowd_participants": report_crowd.participants_frame(crowd),
                  "crowd_vs_models": report_crowd.comparison_frame(crowd)}
        humans = pd.DataFrame(localizers.human_leaderboard(store))
        if not humans.empty:
            tables["human_localizers"] = humans
        for name, frame in tables.items():
            frame.to_csv(staging / "tables" / f"{name}.csv", index=False)
        sections = ["<h1>AGL Workbench study report</h1>"
                    f"<p>Written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.</p>",
                    missing_html("No judge or expert ratings yet: the agreement, alt-test, error-mode and "
                                  "sensitivity sections are left out (run `aglw judge` or record labels).")]
        if not humans.empty:
            shown = humans[[c for c in ("model", "n", "distance_error_km", "geoscore_mean", "country_acc",
                                        "continent_acc", "mean_confidence") if c in humans.columns]]
            sections.append("<h2>Humans as localizers</h2>" + table_html(shown, "Humans as localizers"))
        crowd_section, n_figures = report_crowd.crowd_html(crowd, table_html, figure_html, missing_html)
        sections.append(crowd_section)
        (staging / REPORT).write_text(f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>AGL "
                                      f"Workbench study report</title><style>{CSS}</style></head><body>"
                                      f"{''.join(sections)}</body></html>", encoding="utf-8")
        report = StudyReport(out=str(out), created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                             alm_model=None, epsilon=epsilon, alpha=alpha, bootstrap=bootstrap, seed=seed,
                             n_figures=n_figures, tables=[f"tables/{name}.csv" for name in tables],
                             crowd=[part.to_dict() for part in crowd])
        (staging / "report.json").write_text(json.dumps(_finite(report.to_dict()), indent=2, default=str,
                                                        ensure_ascii=False, allow_nan=False), encoding="utf-8")
    if task is not None:
        task.set_total(1)
        task.advance()
    return report
