"""The crowd section's figures (matplotlib, Agg): the participant flow (CONSORT style) and humans vs
models by continent and speech. Each returns a PNG as bytes; the ``*_figure`` functions return the
figure itself (tests measure where its text landed). Nothing here reads the store."""

from __future__ import annotations

from typing import Any

import pandas as pd

from workbench.escaping import plain_figure_text
from workbench.studies.figures import SMALL_N, new_figure, png_bytes

MAIN_X, SIDE_X = 0.27, 0.755  # centres of the main column and the side column (axes fraction)
BOX_WIDTH_CHARS = 44  # the lines below are written to fit this; the test checks nothing overlaps
RULE_LINES = {"headphones_failed": "failed the headphone check",
              "max_attention_missed": "missed attention checks",
              "min_median_listen_s": "median listening time too short"}


def flow_boxes(counts: dict[str, int], details: dict[str, Any]) -> tuple[list[str], list[str | None]]:
    """The main column's boxes (top to bottom) and the side box leaving after each (None: none)."""
    check = details.get("headphone_check", "record")
    main = [
        f"Invitations sent: {counts['invited']}\nEntered by the open (panel) link: {details['open_link']}",
        f"Entered the study: {counts['started']}",
        f"Consented: {counts['consented']}",
        (f"Headphone check ({check}): passed {counts['passed_headphones']}, failed {details['failed_headphones']}"
         if check != "off" else f"No headphone check: {counts['passed_headphones']} go on"),
        f"Finished: {counts['finished']}",
        f"Analyzed: {counts['analyzed']}\n({details['analyzed_rule']})",
    ]
    by_rule = details.get("excluded_by", {})
    rules = [f"{RULE_LINES.get(rule, rule)}: {n}" for rule, n in by_rule.items()]  # 0s too: every count
    if check == "screen":
        after_check = f"Screened out (failed, screen mode): {details['screened_out']}"
    elif check == "record":
        after_check = f"Failed the check, went on (record mode): {details['failed_headphones']}"
    else:
        after_check = None
    excluded = f"Excluded: {counts['excluded']} of the finished"
    if rules:
        excluded += "\n" + "\n".join(rules)
        if sum(by_rule.values()) > counts["excluded"]:
            excluded += "\n(one participant may meet several rules)"
    side = [
        f"Invitation never opened: {details['not_started']}",
        f"Did not consent: {details['no_consent']}",
        (f"Headphone check not taken yet: {details['headphones_pending']}" if check != "off" else None),
        after_check,
        excluded,
    ]
    side[-2] = (side[-2] + f"\nNot finished (in progress or left): {details['in_progress']}" if side[-2]
                else f"Not finished (in progress or left): {details['in_progress']}")
    return main, side


@plain_figure_text()
def participant_flow_figure(study: str, mode: str, counts: dict[str, int], details: dict[str, Any]):  # type: ignore[no-untyped-def]
    """The CONSORT-style diagram of one study's participant flow (every count in a box)."""
    main, side = flow_boxes(counts, details)
    fig = new_figure(8.6, 7.4)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_axis_off()
    ax.text(0.5, 0.975, f"Participant flow of web study {study} ({mode} mode)", ha="center", va="top",
            fontsize=11, fontweight="bold")
    top, bottom = 0.88, 0.07
    step = (top - bottom) / (len(main) - 1)
    ys = [top - i * step for i in range(len(main))]
    box = {"boxstyle": "round,pad=0.45", "facecolor": "#f4f6fa", "edgecolor": "#34495e"}
    side_box = {"boxstyle": "round,pad=0.45", "facecolor": "#fbf3ee", "edgecolor": "#a0522d"}
    for y, text in zip(ys, main):
        ax.text(MAIN_X, y, text, ha="center", va="center", fontsize=8.5, bbox=box, multialignment="center")
    for i in range(len(main) - 1):
        ax.annotate("", xy=(MAIN_X, ys[i + 1] + 0.035), xytext=(MAIN_X, ys[i] - 0.035),
                    arrowprops={"arrowstyle": "-|>", "color": "#34495e", "linewidth": 1})
        if side[i] is None:
            continue
        middle = (ys[i] + ys[i + 1]) / 2
        ax.annotate("", xy=(SIDE_X - 0.2, middle), xytext=(MAIN_X, middle),
                    arrowprops={"arrowstyle": "-|>", "color": "#a0522d", "linewidth": 1})
        ax.text(SIDE_X, middle, side[i], ha="center", va="center", fontsize=8, bbox=side_box,
                multialignment="left")
    return fig


def participant_flow(study: str, mode: str, counts: dict[str, int], details: dict[str, Any]) -> bytes:
    """:func:`participant_flow_figure` as PNG bytes (placed by hand; a long study name widens the canvas)."""
    with plain_figure_text():
        return png_bytes(participant_flow_figure(study, mode, counts, details))


@plain_figure_text()
def crowd_vs_models_figure(frame: pd.DataFrame, study: str, breakdown: str):  # type: ignore[no-untyped-def]
    """Mean distance error of the crowd and of each model on the clips both answered, per group.

    ``frame``: the crowd section's comparison table (columns ``model``, ``breakdown``, ``group``,
    ``crowd_n``, ``crowd_distance_error_km``, ``model_n``, ``model_distance_error_km``), one panel
    per model; every bar carries its n (guesses for the crowd, answers for the model), a bar from
    fewer than 5 is hatched.
    """
    part = frame[frame["breakdown"] == breakdown]
    models = list(dict.fromkeys(part["model"]))
    fig = new_figure(7.6, 2.6 * max(1, len(models)) + 0.6)
    if not models:
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, "no clip answered by both the crowd and a model", ha="center", va="center")
        ax.set_axis_off()
        return fig
    axes = fig.subplots(len(models), 1, squeeze=False)[:, 0]
    for ax, model in zip(axes, models):
        rows = part[part["model"] == model].reset_index(drop=True)
        x = range(len(rows))
        width = 0.38
        for offset, who, colour in ((-width / 2, "crowd", "tab:green"), (width / 2, "model", "tab:blue")):
            values = rows[f"{who}_distance_error_km"].astype(float).fillna(0.0)
            counts = rows[f"{who}_n"].fillna(0).astype(int)
            bars = ax.bar([i + offset for i in x], values, width, color=colour,
                          label=f"human ({study})" if who == "crowd" else str(model))
            for bar, n in zip(bars, counts):
                if n < SMALL_N:
                    bar.set_hatch("//")
                ax.annotate(f"n={n}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                            va="bottom", fontsize=6.5, xytext=(0, 1), textcoords="offset points")
        ax.set_xticks(list(x), [f"{g}\n({c} clips)" for g, c in zip(rows["group"], rows["n_clips"])], fontsize=7)
        ax.set_ylabel("mean distance error (km)", fontsize=7)
        top = float(pd.concat([rows["crowd_distance_error_km"], rows["model_distance_error_km"]]).astype(float).max())
        ax.set_ylim(0, (top if top == top and top > 0 else 1.0) * 1.25)
        ax.tick_params(axis="y", labelsize=7)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        ax.set_title(f"human ({study}) vs {model}, by {breakdown}, on the clips both answered", fontsize=8)
    return fig


def crowd_vs_models(frame: pd.DataFrame, study: str, breakdown: str) -> bytes:
    """:func:`crowd_vs_models_figure` as PNG bytes (hatched: fewer than 5 answers)."""
    with plain_figure_text():
        return png_bytes(crowd_vs_models_figure(frame, study, breakdown))
