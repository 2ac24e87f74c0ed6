"""The agreement bundle: tables (CSV, Parquet, Markdown, LaTeX), PNG figures, manifest.json."""

from __future__ import annotations

import hashlib
import logging
import json
import platform
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

import workbench
from workbench.agreement import minimums
from workbench.agreement.names import category_name, coefficient_name, pair_name, rater_name, readable
from workbench.agreement.units import CODING_DECISIONS, LABELS, RATING_COLUMNS, RatingData
from workbench import escaping
from workbench.figure_layout import fit_canvas
from workbench.formatting import titled
from workbench.outputs import check_folder_target, output_folder

TOOL = "agl-workbench aglw agreement"
MANIFEST = "manifest.json"
FIGURE_SIZE_IN = (6.4, 4.8)
FIGURE_DPI = 100
SUMMARY_COEFFICIENTS = {
    "cohen_kappa", "weighted_kappa_quadratic", "gwet_ac1", "percent_agreement", "spearman", "mae",
    "krippendorff_alpha_nominal", "krippendorff_alpha_ordinal", "fleiss_kappa", "balanced_accuracy",
}


@dataclass
class Manifest:
    """What an agreement export wrote and how (saved as ``manifest.json``)."""

    tool: str
    version: str
    created_at: str
    parameters: dict
    coding_decisions: list[str]
    data_fingerprint: str
    n_ratings: int
    n_units: dict
    raters: list[dict]
    judge_runs: list[dict]
    files: dict = field(default_factory=dict)
    minimums: dict = field(default_factory=minimums.describe)

    def to_dict(self) -> dict:
        return asdict(self)


log = logging.getLogger(__name__)


def _value_text(value: object) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)


def long_table(ratings: pd.DataFrame) -> pd.DataFrame:
    """The exported long table: one row per rating, values as text, in a stable order."""
    table = ratings[RATING_COLUMNS].copy()
    table["value"] = table["value"].map(_value_text)
    table["category_id"] = table["category_id"].map(lambda c: "" if c is None or pd.isna(c) else str(c))
    table = table.rename(columns={"label": "label_type"})
    return table.sort_values(["label_type", "unit", "rater"], kind="stable").reset_index(drop=True)


def wide_table(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (label type, unit), one column per rater."""
    wide = long.pivot(index=["label_type", "unit", "clip_key", "category_id"], columns="rater", values="value")
    wide.columns = [str(c) for c in wide.columns]
    return wide.reset_index()


def _fmt(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and not np.isfinite(value)) else f"{value:.3f}"


def summary_table(coefficients: pd.DataFrame) -> pd.DataFrame:
    """The headline rows (all units) with values and intervals rounded to 3 decimals as text (the
    reader's; ``coefficients.csv`` has them in full), keys as in the CSV (:func:`readable` names them).

    Each row carries its n (units and raters); an empty value comes with its reason.
    """
    head = coefficients[(coefficients["subset_kind"] == "all") & coefficients["coefficient"].isin(SUMMARY_COEFFICIENTS)]
    table = head[["section", "label", "rater_a", "rater_b", "coefficient", "n_units", "n_raters"]].copy()
    table["value"] = head["value"].map(_fmt)
    table["ci_95"] = [
        "" if not np.isfinite(lo) else f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(head["ci_low"].fillna(np.nan), head["ci_high"].fillna(np.nan))
    ]
    table["reason"] = head["reason"].map(lambda r: "" if r is None or pd.isna(r) else str(r))
    return table.reset_index(drop=True)


def _write_tables(out: Path, long: pd.DataFrame, coefficients: pd.DataFrame) -> list[str]:
    from workbench import extras

    written = []
    wide = wide_table(long)
    parquet = extras.has("pyarrow")
    if not parquet:  # the CSVs hold the same tables; say what is missing and how to get it
        log.info("agreement bundle without Parquet copies: %s", extras.missing_extra_message("pyarrow"))
    for name, table in (("ratings_long", long), ("ratings_wide", wide), ("coefficients", coefficients)):
        table.to_csv(out / f"{name}.csv", index=False)
        written.append(f"{name}.csv")
        if parquet:
            table.to_parquet(out / f"{name}.parquet", index=False)
            written.append(f"{name}.parquet")
    summary = titled(readable(summary_table(coefficients)))  # names and titles a reader knows, 3 decimals
    markdown = ["# Agreement summary (all units; 95 % cluster-bootstrap percentile intervals)", "",
                minimums.describe_text(), ""]
    for label, part in summary.groupby("label", sort=True):
        cells = part.drop(columns="label").map(escaping.markdown)
        cells.columns = [escaping.markdown(c) for c in cells.columns]
        markdown += [f"## {escaping.markdown(label)}", "", cells.to_markdown(index=False, disable_numparse=True), ""]  # "0.390" stays 3 decimals
    (out / "tables.md").write_text("\n".join(markdown), encoding="utf-8")
    latex = escaping.latex_table(summary, "Agreement (all units); 95 % cluster-bootstrap intervals", "tab:agreement")
    (out / "tables.tex").write_text(latex, encoding="utf-8")
    return written + ["tables.md", "tables.tex"]


def _figure():
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    return Figure(figsize=FIGURE_SIZE_IN, dpi=FIGURE_DPI)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def _expert_reference(part: pd.DataFrame) -> str | None:
    """expert_consensus when there is one, else the only expert, else None."""
    raters = set(part["rater"])
    if "expert_consensus" in raters:
        return "expert_consensus"
    experts = sorted(part.loc[part["rater_kind"] == "expert", "rater"].unique())
    return experts[0] if experts else None


def _confusion_figures(out: Path, ratings: pd.DataFrame) -> list[str]:
    written = []
    for label in ("effect", "contribution"):
        part = ratings[ratings["label"] == label]
        reference = _expert_reference(part)
        if reference is None:
            continue
        consensus = part[part["rater"] == reference].set_index("unit")["value"]
        for judge in sorted(part.loc[part["rater_kind"] == "judge", "rater"].unique()):
            judged = part[part["rater"] == judge].set_index("unit")["value"]
            common = judged.index.intersection(consensus.index)
            if common.empty:
                continue
            table = pd.crosstab(judged.loc[common].map(_value_text), consensus.loc[common].map(_value_text))
            domain = [str(v) for v in (LABELS[label][1] or ())]
            order = lambda values: sorted(values, key=lambda v: (domain.index(v) if v in domain else len(domain), v))  # noqa: E731
            table = table.loc[order(table.index), order(table.columns)]
            fig = _figure()
            ax = fig.add_subplot()
            ax.imshow(table.to_numpy(), cmap="Blues")
            ax.set_xticks(range(table.shape[1]), table.columns, rotation=45, ha="right")
            ax.set_yticks(range(table.shape[0]), table.index)
            for (i, j), count in np.ndenumerate(table.to_numpy()):
                ax.text(j, i, str(count), ha="center", va="center")
            ax.set_xlabel(rater_name(reference))
            ax.set_ylabel(rater_name(judge))
            ax.set_title(f"{label}: {pair_name(judge, reference)} (n = {len(common)})")
            fit_canvas(fig)  # every label on the canvas (long rater and category names)
            name = f"figures/confusion_{_safe(judge)}_{label}.png"
            fig.savefig(out / name, dpi=FIGURE_DPI)
            written.append(name)
    return written


def _per_category_figure(out: Path, coefficients: pd.DataFrame, categories: dict[str, str] | None = None) -> list[str]:
    """α per category with its interval; a category below the minimum is listed with its reason
    instead of a point, so the figure never hides that a category had too few units."""
    written = []
    for label, coefficient in (("effect", "krippendorff_alpha_nominal"), ("contribution", "krippendorff_alpha_ordinal")):
        rows = coefficients[(coefficients["label"] == label) & (coefficients["subset_kind"] == "category")
                            & (coefficients["coefficient"] == coefficient)].reset_index(drop=True)
        if rows.empty:
            continue
        fig = _figure()
        ax = fig.add_subplot()
        y = np.arange(len(rows))
        shown = rows["value"].notna().to_numpy()
        if shown.any():
            part = rows[shown]
            low = (part["value"] - part["ci_low"].fillna(part["value"])).clip(lower=0)
            high = (part["ci_high"].fillna(part["value"]) - part["value"]).clip(lower=0)
            ax.errorbar(part["value"], y[shown], xerr=[low, high], fmt="o", capsize=3)
        ax.axvline(0, color="grey", linewidth=0.8)
        # a category without a value says why in its label, in grey: nothing is written over the data
        ax.set_yticks(y, [f"{category_name(c, categories)} (n = {n})"
                          + ("" if ok else f"\nnot reported: {reason}")
                          for c, n, ok, reason in zip(rows["subset"], rows["n_units"], shown, rows["reason"])])
        for tick, ok in zip(ax.get_yticklabels(), shown):
            if not ok:
                tick.set_color("dimgrey")
                tick.set_fontsize(8)
        ax.set_ylim(-0.5, len(rows) - 0.5)
        ax.set_xlabel(f"{coefficient_name(coefficient)} (95 % cluster-bootstrap interval)")
        ax.set_title(f"{label}: agreement per category")
        fit_canvas(fig)  # every label on the canvas (long rater and category names)
        name = f"figures/per_category_{label}.png"
        fig.savefig(out / name, dpi=FIGURE_DPI)
        written.append(name)
    return written


def _bland_altman_figure(out: Path, ratings: pd.DataFrame) -> list[str]:
    part = ratings[ratings["label"] == "contribution"]
    reference = _expert_reference(part)
    if reference is None:
        return []
    expert = part[part["rater"] == reference].set_index("unit")["value"].astype(float)
    judge = part[part["rater"] == "judge_mean"].set_index("unit")["value"].astype(float)
    common = expert.index.intersection(judge.index)
    if common.size < 2:
        return []
    mean = (expert.loc[common] + judge.loc[common]) / 2
    diff = judge.loc[common] - expert.loc[common]
    bias, spread = float(diff.mean()), float(diff.std(ddof=1))
    fig = _figure()
    ax = fig.add_subplot()
    rng = np.random.default_rng(0)  # jitter only separates overlapping integer points visually
    ax.scatter(mean + rng.uniform(-0.05, 0.05, mean.size), diff + rng.uniform(-0.05, 0.05, diff.size), s=6, alpha=0.4)
    ax.axhline(bias, color="black", label=f"bias {bias:.3f}")
    for sign in (-1, 1):
        ax.axhline(bias + sign * 1.96 * spread, color="grey", linestyle="--")
    ax.set_xlabel(f"mean of {rater_name('judge_mean')} and {rater_name(reference)} (contribution)")
    ax.set_ylabel(f"{rater_name('judge_mean')} − {rater_name(reference)}")
    ax.set_title(f"Bland–Altman, contribution (n = {common.size})")
    ax.legend(loc="upper right")
    fit_canvas(fig)  # every label on the canvas (long rater and category names)
    name = "figures/bland_altman_contribution.png"
    fig.savefig(out / name, dpi=FIGURE_DPI)
    return [name]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_bundle(
    out: Path,
    data: RatingData,
    coefficients: pd.DataFrame,
    *,
    bootstrap: int,
    seed: int,
    reveal_annotators: bool,
    root_breakdown: bool,
    extra_tables: dict[str, pd.DataFrame] | None = None,
    categories: dict[str, str] | None = None,
) -> Manifest:
    """Write every bundle file and ``manifest.json`` into ``out``; return the manifest.

    ``extra_tables`` (name → table) are written as ``<name>.csv`` and listed in the manifest
    (the studies' agreement on error modes); ``categories`` (id → name) names the categories in the figures.
    """
    (out / "figures").mkdir(parents=True, exist_ok=True)
    long = long_table(data.ratings)
    files = _write_tables(out, long, coefficients)
    for name, table in (extra_tables or {}).items():
        table.to_csv(out / f"{name}.csv", index=False)
        files.append(f"{name}.csv")
    retest_long = long_table(data.retest.drop(columns="judge_run_id").assign(
        rater=data.retest["rater"] + "@run" + data.retest["judge_run_id"].astype(str))) if not data.retest.empty else None
    if retest_long is not None:
        retest_long.to_csv(out / "ratings_retest.csv", index=False)
        files.append("ratings_retest.csv")
    with escaping.plain_figure_text():  # names with $ are text, not mathtext
        files += _confusion_figures(out, data.ratings)
        files += _per_category_figure(out, coefficients, categories)
        files += _bland_altman_figure(out, data.ratings)
    raters = (data.ratings.drop_duplicates("rater")[["rater", "rater_kind"]]
              .sort_values("rater").to_dict(orient="records"))
    if reveal_annotators:
        for entry in raters:
            match = next((a for a in data.annotators if a["rater"] == entry["rater"]), None)
            if match is not None:
                entry["pseudonym"] = match["pseudonym"]
    manifest = Manifest(
        tool=TOOL,
        version=workbench.__version__,
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        parameters={
            "bootstrap": bootstrap,
            "seed": seed,
            "interval": "percentile, 95 %, cluster bootstrap over clips",
            "reveal_annotators": reveal_annotators,
            "alm_model": data.alm_model,
            "curation_run_id": data.curation_run_id,
            "root_breakdown": root_breakdown,
            "python": platform.python_version(),
        },
        coding_decisions=list(CODING_DECISIONS) + [minimums.describe_text()]
        + ([] if reveal_annotators else ["Experts are named by their pseudonym (Annotator.pseudonym)."]),
        data_fingerprint=hashlib.sha256((out / "ratings_long.csv").read_bytes()).hexdigest(),
        n_ratings=int(len(long)),
        n_units={str(k): int(v) for k, v in long.groupby("label_type")["unit"].nunique().items()},
        raters=raters,
        judge_runs=data.judge_runs,
        files={name: _sha256(out / name) for name in files},
    )
    (out / MANIFEST).write_text(json.dumps(manifest.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


# --------------------------------------------------------------------------- where a bundle may go


def _earlier_bundle(out: Path) -> list[Path] | None:
    """The files of an earlier agreement bundle in ``out``, or None when ``out`` holds anything else.

    A folder is an earlier bundle when its manifest.json names this tool and every file in it is
    the manifest or one the manifest lists (so --force never deletes a file the user put there).
    """
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("tool") != TOOL or not isinstance(manifest.get("files"), dict):
        return None
    listed = {MANIFEST, *(str(name) for name in manifest["files"])}
    found = [p for p in out.rglob("*") if not p.is_dir()]
    if any(p.relative_to(out).as_posix() not in listed for p in found):
        return None
    return found


def _holds_earlier_bundle(out: Path) -> bool:
    return _earlier_bundle(out) is not None


def check_bundle_target(out: Path, *, replace: bool) -> None:
    """Refuse a target that would lose data (the rules of :mod:`workbench.outputs`).

    The bundle goes into a new or empty folder.  A folder holding an earlier agreement bundle
    (and nothing else) is replaced only with ``replace`` (``--force``); any other non-empty
    folder, a file and a dangling link are refused even then; a link is never written through.
    """
    check_folder_target(out, force=replace, earlier=_holds_earlier_bundle, what="agreement bundle")


def write_bundle_into(out: Path, write, *, replace: bool) -> Manifest:
    """Run ``write(folder)`` (which writes a bundle and returns its manifest) so that ``out`` ends
    up holding exactly the new bundle.

    The bundle is written into a staging folder beside ``out`` first and swapped in whole: if
    writing fails (a full disk: one line), ``out`` is untouched.
    """
    with output_folder(out, force=replace, earlier=_holds_earlier_bundle, what="agreement bundle") as staging:
        manifest = write(staging)
    return manifest
