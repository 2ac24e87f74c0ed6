"""The studies' figures (matplotlib, Agg): each returns a PNG as bytes, so the HTML report can embed it
and the bundle can write it; nothing here reads the store."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.agreement.names import coefficient_name, pair_name, rater_name
from workbench.escaping import plain_figure_text
from workbench.figure_layout import MIN_AXES_SHARE, fit_canvas  # noqa: F401  (fit_canvas: the figures' layout)
from workbench.outputs import check_folder_target, output_folder
from workbench.studies.error_modes import MODES, TAXONOMY
from workbench.studies.sensitivity import SweepResult

DPI = 110
# A share from fewer answers than this is marked as such (hatched, "fewer than 5 answers").
SMALL_N = 5


def new_figure(width: float = 6.4, height: float = 4.4, layout: str | None = None):
    """A figure of the studies (Agg, no pyplot: nothing global, safe in a worker thread)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout=layout)


def png_bytes(fig) -> bytes:  # type: ignore[no-untyped-def]
    """``fig`` laid out with all its text on the canvas (:func:`fit_canvas`) and saved as PNG bytes."""
    buffer = io.BytesIO()
    fit_canvas(fig)
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


_figure, _png = new_figure, png_bytes  # the earlier private names, for callers not yet moved


def safe_name(name: str) -> str:
    """A file-name-safe version of ``name``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "figure"


@plain_figure_text()  # a name with $ is text, never mathtext
def sensitivity_heatmaps(result: SweepResult) -> bytes:
    """Jaccard with the stored selection over γ × α, one panel per θ (up to 3: lowest, stored, highest)."""
    table = result.table
    thetas = sorted(result.thetas)
    stored = result.reference["theta"]
    nearest = min(thetas, key=lambda t: abs(t - stored))
    panels = list(dict.fromkeys([thetas[0], nearest, thetas[-1]]))
    fig = new_figure(3.6 * len(panels) + 1.2, 4.0, layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    image = None
    for ax, theta in zip(axes, panels):
        part = table[np.isclose(table["theta"], theta)]
        grid = part.pivot_table(index="alpha", columns="gamma_km", values="jaccard")
        image = ax.imshow(grid.to_numpy(), origin="lower", aspect="auto", vmin=0, vmax=1, cmap="viridis")
        ax.set_xticks(range(grid.shape[1]), [f"{g:.0f}" for g in grid.columns], rotation=60, fontsize=7)
        ax.set_yticks(range(grid.shape[0]), [f"{a:.3g}" for a in grid.index], fontsize=7)
        ax.set_xlabel("γ (km)")
        ax.set_ylabel("α")
        mark = " (stored)" if theta == nearest else ""
        ax.set_title(f"θ = {theta:.3g}{mark}", fontsize=9)
        rows, cols = list(grid.index), list(grid.columns)
        ref = result.reference
        if ref["gamma_km"] in cols and ref["alpha"] in rows:
            ax.plot(cols.index(ref["gamma_km"]), rows.index(ref["alpha"]), "r+", markersize=10)
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.8, label="Jaccard with the stored selection")
    fig.suptitle("Selection stability over γ, α, θ", fontsize=10)
    return png_bytes(fig)  # constrained layout places the shared colour bar


SENSITIVITY_FILES = ("sensitivity.csv", "sensitivity_heatmap.png")


def _holds_earlier_sweep(out: Path) -> bool:
    return all(p.name in SENSITIVITY_FILES for p in out.iterdir())


def check_sensitivity_target(out: Path, *, force: bool) -> None:
    """Refuse ``out`` before the sweep runs (the rules of :mod:`workbench.outputs`)."""
    check_folder_target(out, force=force, earlier=_holds_earlier_sweep, what="sensitivity sweep")


def write_sensitivity(out: Path, result: SweepResult, *, force: bool = False) -> list[str]:
    """Write ``sensitivity.csv`` and ``sensitivity_heatmap.png`` as the folder ``out``; returns their paths.

    ``out`` is new or empty, or (with ``force``) holds an earlier sweep and nothing else.
    """
    out = Path(out)
    picture = sensitivity_heatmaps(result)
    with output_folder(out, force=force, earlier=_holds_earlier_sweep, what="sensitivity sweep") as staging:
        result.table.to_csv(staging / SENSITIVITY_FILES[0], index=False)
        (staging / SENSITIVITY_FILES[1]).write_bytes(picture)
    return [str(out / name) for name in SENSITIVITY_FILES]


@plain_figure_text()  # a name with $ is text, never mathtext
def error_mode_bars(shares: pd.DataFrame, breakdown: str = "all") -> bytes:
    """Error-mode shares per ALM (the paper's figure), or per group of a breakdown."""
    part = shares[shares["breakdown"] == breakdown]
    fig = new_figure(7.0, 4.2)
    ax = fig.add_subplot()
    if part.empty:
        ax.text(0.5, 0.5, "no error modes tagged", ha="center", va="center")
        ax.set_axis_off()
        return png_bytes(fig)
    key = ["alm"] if breakdown == "all" else ["alm", "group"]
    series = part.assign(series=part[key].astype(str).agg(" · ".join, axis=1))
    wide = series.pivot_table(index="series", columns="mode", values="share", fill_value=0.0)
    wide = wide.reindex(columns=[m for m in MODES if m in wide.columns])
    # Every bar says how many answers its share counts; fewer than SMALL_N are hatched and
    # marked, since a share of 1.0 from one answer says little.
    n_of = series.groupby("series")["n_answers"].max()
    x = np.arange(len(wide.columns))
    width = 0.8 / max(len(wide), 1)
    for i, (name, row) in enumerate(wide.iterrows()):
        n = int(n_of.get(name, 0))
        few = n < SMALL_N
        label = f"{name} (n = {n}" + (f"; fewer than {SMALL_N} answers)" if few else ")")
        ax.bar(x + i * width - 0.4 + width / 2, row.to_numpy(), width, label=label,
               hatch="//" if few else None, alpha=0.55 if few else 1.0)
    ax.set_xticks(x, [TAXONOMY[m][0] for m in wide.columns], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("share of tagged wrong answers (n per bar in the legend)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars, never on them
    ax.set_title("Error modes per ALM" + ("" if breakdown == "all" else f" by {breakdown}"), fontsize=10)
    return png_bytes(fig)


@plain_figure_text()  # a name with $ is text, never mathtext
def baseline_forest(baseline: pd.DataFrame, label: str) -> bytes:
    """Each rater pair's headline coefficient with its cluster-bootstrap interval, grouped by section."""
    part = baseline[baseline["label"] == label].reset_index(drop=True)
    fig = new_figure(9.0, max(2.4, 0.22 * len(part) + 1.2))
    ax = fig.add_subplot()
    colours = {"expert-expert": "tab:green", "expert-judge": "tab:blue", "judge-judge": "tab:orange",
               "test-retest": "tab:purple"}
    y = np.arange(len(part))[::-1]
    lows = part["ci_low"].where(part["ci_low"].notna(), part["value"]).dropna()
    x_low = max(-1.0, (float(lows.min()) if len(lows) else 0.0) - 0.1)
    ax.set_xlim(x_low, 1.02)
    ax.axvline(0, color="grey", linewidth=0.5)
    for yi, row in zip(y, part.itertuples()):
        colour = colours.get(row.section, "grey")
        if row.value == row.value:
            # a percentile interval need not contain the estimate (few resamples): whiskers never go negative
            low = max(row.value - row.ci_low, 0.0) if row.ci_low == row.ci_low else 0.0
            high = max(row.ci_high - row.value, 0.0) if row.ci_high == row.ci_high else 0.0
            ax.errorbar(row.value, yi, xerr=[[low], [high]], fmt="o", color=colour, capsize=3)
        else:  # beside the zero line, never across it
            ax.annotate(f"not reported: {row.reason}", (max(0.0, x_low), yi), xytext=(4, 0),
                        textcoords="offset points", va="center", fontsize=7, color="dimgrey")
    ax.set_yticks(y, [pair_name(r.rater_a, r.rater_b) for r in part.itertuples()], fontsize=7)
    coefficient = part["coefficient"].iloc[0] if len(part) else ""
    ax.set_xlabel(f"{coefficient_name(coefficient)} (95 % cluster-bootstrap CI)")
    handles = [ax.plot([], [], "o", color=c, label=s)[0] for s, c in colours.items() if s in set(part["section"])]
    if handles:
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(f"{label}: experts, judges and their re-runs, pair by pair", fontsize=10)
    return png_bytes(fig)


@plain_figure_text()  # a name with $ is text, never mathtext
def alt_test_bars(rows: list[dict]) -> bytes:
    """Winning rate and advantage probability of each tested candidate, per label; 0.5 marks a pass."""
    tested = [r for r in rows if not r.get("refused")]
    fig = new_figure(6.8, max(2.4, 0.35 * len(tested) + 1.2))
    ax = fig.add_subplot()
    if not tested:
        ax.text(0.5, 0.5, "no candidate could be tested", ha="center", va="center")
        ax.set_axis_off()
        return png_bytes(fig)
    y = np.arange(len(tested))[::-1]
    ax.barh(y + 0.18, [r["winning_rate"] for r in tested], 0.36, label="winning rate ω", color="tab:blue")
    ax.barh(y - 0.18, [r["advantage_probability"] for r in tested], 0.36, label="advantage probability ρ",
            color="tab:grey")
    ax.axvline(0.5, color="red", linestyle="--", linewidth=1)
    ax.set_yticks(y, [f"{r['label']} · {rater_name(r['llm'])}" for r in tested], fontsize=7)
    ax.set_xlim(0, 1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title("Alternative Annotator Test (pass: ω ≥ 0.5)", fontsize=10)
    return png_bytes(fig)


@plain_figure_text()  # a name with $ is text, never mathtext
def confusion(table: pd.DataFrame, title: str) -> bytes:
    """A small confusion matrix with counts."""
    fig = new_figure(3.6, 3.2)
    ax = fig.add_subplot()
    ax.imshow(table.to_numpy(), cmap="Blues")
    ax.set_xticks(range(table.shape[1]), list(table.columns), rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(table.shape[0]), list(table.index), fontsize=7)
    for (i, j), count in np.ndenumerate(table.to_numpy()):
        ax.text(j, i, str(count), ha="center", va="center", fontsize=8)
    ax.set_xlabel(rater_name("judge_majority"), fontsize=8)
    ax.set_ylabel("experts", fontsize=8)
    ax.set_title(title, fontsize=8)
    return png_bytes(fig)
