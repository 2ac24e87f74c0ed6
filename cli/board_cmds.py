"""`aglw metrics`, `aglw leaderboard` and `aglw compare`: the metrics of the stored answers as tables.

The rows come from their owners (:func:`workbench.studies.board.leaderboard_board`,
:func:`workbench.studies.crowd.compare_rows`); this module only lays them out for a terminal or JSON.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from cli.context import app_context, emit_json, say, show
from workbench.metrics.keys import METRIC_KEYS, PROFILES

# Imports of the store and pandas happen inside the commands: `aglw --help` must not load them.

# Only these differ between the agl1k and iso profiles.
_PROFILE_DEPENDENT = ("continent_acc", "country_acc")
_SHARED_COLUMNS = tuple(k for k in METRIC_KEYS if k not in ("model", "profile", *_PROFILE_DEPENDENT))
# Where a country alias table applies: of a row's n answers, how many it turned correct.
_ALIAS_COUNTS = ("country_alias_n", "continent_alias_n")
_ALIASES_HELP = ("Country alias table (TOML; default: country_aliases.toml in the configuration folder, if there): "
                 "an answer naming the country a clip's position lies in counts as correct where the table accepts "
                 "the stated country covering it, as `check locations` reads it. Template: "
                 "resources/country_aliases.toml.")



def _format(key: str, value: Any) -> str:
    """A metric as a reader sees it: the house's format of its kind (workbench.formatting), escaped for rich."""
    from workbench.formatting import MISSING, metric_cell

    return escape(metric_cell(key, value, missing=MISSING))


def _alias_lines(rows: list[dict[str, Any]], summary: dict[str, Any] | None,
                 subset: Any = lambda row: ("", "")) -> list[str]:
    """What the alias table changed, each count with its n and subset: one line per metric and
    row it changed, else one line saying it changed nothing. ``subset(row)`` -> the words after
    the metric (the profile) and after "answers" (the model and group); none for `aglw metrics`,
    whose table title names them."""
    if summary is None:
        return []
    from workbench.formatting import count

    named = "; ".join(summary["aliases"])
    lines = [f"alias table {summary['file']}: {named}"]
    for row in rows:
        for key in _ALIAS_COUNTS:
            changed = row.get(key)
            if isinstance(changed, (int, float)) and not math.isnan(changed) and changed > 0:
                profile, whose = subset(row)
                lines.append(f"{key.split('_')[0]}{profile}: {count(changed)} of {count(row['n'])} answers{whose} "
                             f"counted correct under the alias table ({named})")
    if len(lines) == 1:
        lines.append("no answer counted differently under the alias table")
    return [escape(line) for line in lines]



def _check_choice(value: str | None, allowed: tuple[str, ...], option: str) -> None:
    from cli.context import check_choice

    if value is not None:
        check_choice(value, allowed, option)  # a usage error: exit 2


def metrics_cmd(
    ctx: typer.Context,
    model: str = typer.Option(..., "--model", help="A model imported with `import predictions`."),
    profile: Optional[str] = typer.Option(
        None, "--profile", help="Metric profile: agl1k or iso (default: agl1k when the dataset has AGL1K continent "
        "labels, else iso)."
    ),
    aliases: Optional[str] = typer.Option(None, "--aliases", help=_ALIASES_HELP),
) -> None:
    """Leaderboard metrics for one model.

    With a country alias table (country_aliases.toml in the configuration folder, or --aliases),
    an answer naming the country a clip's position lies in counts as correct where the table
    accepts the stated country covering it; the output says how many answers that changed.
    """
    _check_choice(profile, PROFILES, "--profile")
    app = app_context(ctx)
    from workbench.country_aliases import alias_table
    from workbench.metrics.service import model_metrics

    table = alias_table(aliases)

    chosen = profile is None
    if profile is None:
        from workbench.metrics.profile_choice import default_profile

        profile = default_profile(app.store(), model)
    result = model_metrics(app.store(), model, profile, aliases=table)  # type: ignore[arg-type]
    # Said once the model is known to have answers: an unknown model gets its error alone.
    if chosen and profile == "iso":
        say("profile iso: the dataset has no AGL1K continent labels (pass --profile agl1k to score them anyway)")
    if app.json:
        emit_json(result)
        return
    shown = Table(title=f"{escape(model)} ({profile} profile)")
    shown.add_column("metric")
    shown.add_column("value", justify="right")
    from workbench.formatting import metric_title

    for key, value in result.items():
        if key not in ("model", "profile", "alias_table", *_ALIAS_COUNTS) and not key.startswith("n_"):
            # the reader's title; --json has the key. A metric computed on fewer answers than n says on how many.
            counted = f" (n = {result[f'n_{key}']:,})" if f"n_{key}" in result else ""
            shown.add_row(metric_title(key), _format(key, value) + counted)
    show(shown)
    unreadable = result.get("n_unreadable", 0)
    if unreadable:
        show(f"{unreadable:,} of the {result['n']:,} answers {'is' if unreadable == 1 else 'are'} unreadable (a "
             "position that is no number): left out of the mean distance and GeoScore, a miss within every k km")
    for line in _alias_lines([result], result.get("alias_table")):
        show(line)


_Rows = tuple[list[str], list[dict[str, Any]]]  # a table's columns and its rows (no pandas: `aglw` starts faster)


def _side_by_side(columns: list[str], rows: list[dict[str, Any]], group: bool) -> _Rows:
    """One row per model (and group) with the profile-dependent accuracies (and their
    intervals) per profile, the others as in the first profile's row (missing, NaN, when
    only another profile has the row); rows in the order of their (group and) model names."""
    index = ["group", "model"] if group else ["model"]
    dependent = [c for c in columns if c.startswith(_PROFILE_DEPENDENT)]
    shared_columns = [c for c in columns if c not in (*index, "profile", *dependent)]
    joined: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        if row["profile"] not in PROFILES:
            continue
        out = joined.setdefault(tuple(row[c] for c in index), {c: row[c] for c in index})
        if row["profile"] == PROFILES[0]:
            out.update((c, row[c]) for c in shared_columns)
        out.update((_per_profile(c, row["profile"]), row[c]) for c in dependent)
    first = ["n", "n_dataset", "distance_error_km", "distance_error_km_ci"]
    ordered = [
        *index,
        *(c for c in first if c in shared_columns),
        *(_per_profile(c, p) for c in dependent for p in PROFILES),
        *(c for c in shared_columns if c not in first),
    ]
    return ordered, [{c: out.get(c, math.nan) for c in ordered} for _, out in sorted(joined.items())]


def _per_profile(column: str, profile: str) -> str:
    """``country_acc`` -> ``country_acc_iso``; an interval keeps its ``_ci`` last."""
    return f"{column[:-3]}_{profile}_ci" if column.endswith("_ci") else f"{column}_{profile}"


def _with_coverage(columns: list[str], rows: list[dict[str, Any]]) -> _Rows:
    """``n`` and ``n_dataset`` shown as one coverage column (in the place of ``n``): answered / in dataset."""
    if "n_dataset" not in columns:
        return columns, rows
    from workbench.formatting import count

    position = columns.index("n")
    shown = [*(c for c in columns[:position] if c != "n_dataset"), "coverage",
             *(c for c in columns[position:] if c not in ("n", "n_dataset"))]
    return shown, [{c: f"{count(row['n'])} / {count(row['n_dataset'])}" if c == "coverage" else row[c] for c in shown}
                   for row in rows]


def _missing(value: Any) -> bool:
    return value is None or value != value


def _cell(column: str, value: Any, record: dict[str, Any]) -> str:
    """A cell: the number, and below it its interval when ``--ci`` gave one, one bound a line (a
    number never parted from its unit: "0.0 % [0.0" / "%, 0.0 %]")."""
    text = _format(column, value) if column != "coverage" else escape(str(value))
    interval = record.get(f"{column}_ci") if not column.endswith("_ci") else None
    if isinstance(interval, (list, tuple)) and len(interval) == 2:
        text += f"\n[{_format(column, interval[0])},\n{_format(column, interval[1])}]"
    return text


def leaderboard_cmd(
    ctx: typer.Context,
    profile: str = typer.Option("both", "--profile", help="agl1k, iso, or both side by side."),
    by: Optional[str] = typer.Option(None, "--by", help="Group by continent or speech."),
    common: bool = typer.Option(False, "--common", help="Rank every listed model on the clips all of them answered."),
    ci: bool = typer.Option(False, "--ci", help="Add 95 % bootstrap intervals (clips resampled with replacement)."),
    bootstrap: int = typer.Option(2000, "--bootstrap", min=1, help="Bootstrap resamples B (with --ci)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap (with --ci)."),
    models: Optional[str] = typer.Option(
        None, "--models", help="Only these rows: A,B,... — models and human rows as printed (default: all)."),
    humans: str = typer.Option("pooled", "--humans",
                               help="Web studies: pooled (a row per study and its consensus) or each (also a row "
                                    "per participant)."),
    aliases: Optional[str] = typer.Option(None, "--aliases", help=_ALIASES_HELP),
) -> None:
    """Table for all imported models, the human localizers and the web studies' crowds.

    With a country alias table (country_aliases.toml in the configuration folder, or --aliases),
    an answer naming the country a clip's position lies in counts as correct where the table
    accepts the stated country covering it; the output says how many answers that changed.
    """
    _check_choice(profile, (*PROFILES, "both"), "--profile")
    from workbench.metrics.service import GROUP_BY_OPTIONS

    _check_choice(by, GROUP_BY_OPTIONS, "--by")
    _check_choice(humans, ("pooled", "each"), "--humans")
    app = app_context(ctx)
    from workbench.country_aliases import alias_table
    from workbench.studies.board import leaderboard_board

    table = alias_table(aliases)
    store = app.store()
    listed = [m.strip() for m in models.split(",") if m.strip()] if models else None
    # models, the desktop's human localizers and the web studies' crowds, scored alike
    found = leaderboard_board(store, profile, by, common=common, listed=listed, each=humans == "each", ci=ci,
                              bootstrap=bootstrap, seed=seed, aliases=table)
    columns, rows = found.columns, found.rows
    n_common, summary = found.n_common, found.alias_table
    for note in found.notes:
        say(note)
    if app.json:
        out = {"profile": profile, "common": common, "n_common": n_common, "alias_table": summary, "rows": rows}
        if found.crowds:
            out["crowds"] = found.crowds
        emit_json(out)
        return
    if not rows and common:
        from workbench.metrics.service import model_names

        if listed or model_names(store):
            say("no clip was answered by every listed row, so --common ranks none"
                + (": name the rows to rank with --models" if listed is None else ""))
            return
    if not rows:
        say("no predictions imported yet: use `aglw import predictions --model NAME FILE`")
        return
    alias_notes = _alias_lines(rows, summary, lambda row: (
        f" ({row['profile']})", f" of {row['model']}" + (f" in {row['group']}" if by else "")))
    columns = [c for c in columns if c not in _ALIAS_COUNTS]  # said below the table
    if profile == "both":
        columns, rows = _side_by_side(columns, rows, by is not None)
    else:
        columns = [c for c in columns if c != "profile"]
    if "n_clips" in columns:
        # A crowd answers a clip several times: its coverage counts the clips it answered, and its
        # answers (n) are a column of their own.
        columns = ["n_answers" if c == "n_clips" else c for c in columns]
        rows = [{**row, "n_answers": row["n"], "n": row["n"] if _missing(row["n_clips"]) else row["n_clips"]}
                for row in rows]
    columns, rows = _with_coverage(columns, rows)
    from workbench.formatting import count

    title = "leaderboard" + (f" by {by}" if by else "") + f" ({profile} profile{'s' if profile == 'both' else ''})"
    if common:
        title += f", on the {count(n_common)} clips every listed {'row' if 'n_answers' in columns else 'model'} answered"
    if ci:
        title += f"; [95 % bootstrap interval, B = {count(bootstrap)}, seed {seed}]"
    from workbench.formatting import metric_title as header
    from workbench.metrics.keys import DISTANCE_HEADER

    caption = (f"{DISTANCE_HEADER[0].upper()}{DISTANCE_HEADER[1:]}: the mean over answers with a defined distance; "
               "coverage: answers counted / clips in the model's dataset.")
    if "n_answers" in columns:
        caption += " A human row's coverage counts the clips it answered; answers: its guesses."
    board = Table(title=title, caption=caption)
    visible = [c for c in columns if not c.endswith("_ci")]
    cells = [[_cell(column, record[column], record) for column in visible] for record in rows]
    widths = []
    for at, column in enumerate(visible):
        # A row's name is never cut nor folded (`compare --models` takes it as printed); a title or
        # a cell folds between words, never inside one ("contine…").
        words = [len(str(r["model"])) for r in rows] if column == "model" else [
            *(len(word) for word in header(column).split()), *(len(line) for row in cells for line in
                                                               row[at].splitlines())]
        widths.append(max(words, default=0))
        board.add_column(header(column), justify="left" if column in ("model", "group") else "right",
                         no_wrap=column == "model", min_width=widths[-1])
    for row in cells:
        board.add_row(*row)
    # 200 columns at least (a pipe), wider only where the names and words need it: never cut
    show(board, min_width=max(200, sum(widths) + 3 * len(widths) + 1))
    for line in alias_notes:
        show(line)
    from workbench.studies.board import crowd_line

    for crowd in found.crowds:
        show(escape(crowd_line(crowd)))


def compare_cmd(
    ctx: typer.Context,
    models: str = typer.Option(..., "--models", help="The two rows: A,B — models or human rows, as the leaderboard "
                                                     "prints them."),
    profile: str = typer.Option("agl1k", "--profile", help="Metric profile: agl1k or iso."),
    metric: Optional[str] = typer.Option(
        None, "--metric", help="Only these metrics (comma list of metric keys; default: every one)."),
    bootstrap: int = typer.Option(2000, "--bootstrap", min=1, help="Paired bootstrap resamples B."),
    seed: int = typer.Option(0, "--seed", help="Seed of the paired bootstrap."),
    aliases: Optional[str] = typer.Option(None, "--aliases", help=_ALIASES_HELP),
) -> None:
    """Paired comparison of two models (or any two leaderboard rows) on the clips both answered.

    A row with several answers per clip (a pooled human row) scores a clip by the mean over its
    answers, and every metric is then tested by the paired bootstrap over clips.

    With a country alias table (country_aliases.toml in the configuration folder, or --aliases),
    an answer naming the country a clip's position lies in counts as correct where the table
    accepts the stated country covering it; the output says how many answers that changed.
    """
    _check_choice(profile, PROFILES, "--profile")
    names = [m.strip() for m in models.split(",") if m.strip()]
    if len(names) != 2:
        raise typer.BadParameter(f"{models!r}: name exactly two models, A,B", param_hint="--models")
    from workbench.metrics.compare import COMPARED_KEYS

    chosen = [m.strip() for m in metric.split(",") if m.strip()] if metric else None
    for name in chosen or ():
        _check_choice(name, COMPARED_KEYS, "--metric")
    app = app_context(ctx)
    from workbench.country_aliases import alias_table
    from workbench.studies.crowd import compare_rows

    result = compare_rows(app.store(), names[0], names[1], profile=profile, metrics=chosen, bootstrap=bootstrap,
                          seed=seed, aliases=alias_table(aliases))
    if app.json:
        emit_json(result)
        return
    from workbench.formatting import count, formatted, metric_difference
    from workbench.formatting import metric_title as header

    a, b = (escape(n) for n in result["models"])
    table = Table(title=f"{a} vs {b} on the {count(result['n_common'])} clips both answered ({profile} profile); "
                        f"p-values Holm-corrected over the {len(result['metrics'])} metrics",
                  caption=f"{a} − {b}: the difference with the paired bootstrap's 95 % interval (clips resampled, "
                          f"B = {count(bootstrap)}); rates in percentage points (pp).")
    for column in ("metric", "n", a, b, f"{a} − {b}", "test", "p", "p (Holm)"):
        table.add_column(column, justify="left" if column in ("metric", "test") else "right")
    for row in result["metrics"]:
        p, p_holm = formatted(row["p_value"], "p_value"), formatted(row["p_holm"], "p_value")
        difference = escape(metric_difference(row["metric"], row["difference"]))
        if row.get("ci") and row["ci"][0] is not None:
            low, high = (escape(metric_difference(row["metric"], v)) for v in row["ci"])
            difference += f" [{low}, {high}]"
        test = "McNemar exact" if row["test"] == "mcnemar_exact" else f"paired bootstrap (B = {count(bootstrap)})"
        table.add_row(header(row["metric"]), count(row["n"]), _format(row["metric"], row["a"]),
                      _format(row["metric"], row["b"]), difference, test, p, p_holm)
    show(table, min_width=160)
    if "n_answers" in result and max(result["n_answers"]) > result["n_common"]:
        (name_a, name_b), (n_a, n_b) = result["models"], result["n_answers"]
        show(escape(f"answers on those clips: {name_a} {count(n_a)}, {name_b} {count(n_b)}; a clip's score is the "
                    "mean over its answers"))
    summary = result.get("alias_table")
    if summary is not None:
        rows = [{"model": name, "n": result["n_common"], "country_alias_n": summary["country_alias_n"][i],
                 "continent_alias_n": summary["continent_alias_n"][i]} for i, name in enumerate(result["models"])]
        for line in _alias_lines(rows, summary, lambda row: ("", f" of {row['model']}")):
            show(line)




def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("metrics")(metrics_cmd)
    app.command("leaderboard")(leaderboard_cmd)
    app.command("compare")(compare_cmd)
