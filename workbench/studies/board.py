"""`aglw leaderboard` with every human row: the models, the desktop localizers and the web crowds.

The models' rows come from :func:`workbench.metrics.service.leaderboard_rows`; the desktop's
``human:<pseudonym>`` and ``human (pooled)`` rows as they always did
(:func:`workbench.studies.localizers.human_rows`, only without ``--by``); the web studies' rows
from :mod:`workbench.studies.crowd` (with ``--by``, ``--ci`` and both profiles too).

``--common`` ranks every listed row on the clips all of them answered: by default the models and
the pooled human rows (``human (pooled)``, each study's ``human (<study>)`` and its consensus);
a per-person row (``human:<pseudonym>``, ``human:<study>/<pseudonym>``) takes part when
``--models`` names it (one person guessed a few clips: listed by default, she would empty the
common set). On the common clips a human row's clip score is the mean over its answers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from storage import Store
from workbench.errors import AglwError

if TYPE_CHECKING:
    from workbench.country_aliases import AliasTable

CROWD_KEYS = ("n_clips", "n_participants")


@dataclass(frozen=True)
class Board:
    """The leaderboard's columns and rows, the common clips' count, the alias table's summary,
    the notes for stderr and each web study's exclusions (``{study, analyzed, rule, excluded:
    [{participant, reason}]}``)."""

    columns: list[str]
    rows: list[dict[str, Any]]
    n_common: int | None
    alias_table: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    crowds: list[dict[str, Any]] = field(default_factory=list)


def _per_person(name: str, pooled: set[str]) -> bool:
    return name.startswith("human:") and name not in pooled


def crowd_exclusions(store: Store) -> list[dict[str, Any]]:
    """Per web study: how many participants are analyzed, by which rule, and every excluded
    participant with the reason (:func:`workbench.studies.web_flow.participant_flow`)."""
    from workbench.studies.web_flow import ANALYZED_RULE, participant_flow
    from workbench.studies.web_study import study_names

    out = []
    for study in study_names(store):
        flow = participant_flow(store, study)
        out.append({"study": study, "analyzed": sum(1 for p in flow.participants if p.analyzed),
                    "rule": ANALYZED_RULE,
                    "excluded": [{"participant": p.participant, "reason": p.reason}
                                 for p in flow.participants if p.excluded]})
    return out


def crowd_line(crowd: dict[str, Any]) -> str:
    """The sentence under a leaderboard (the CLI's table, the desktop's) on one web study's crowd
    (an item of :attr:`Board.crowds`): how many participants its rows count, by which rule, and
    who is left out and why."""
    from workbench.formatting import count

    excluded = "; ".join(f"{x['participant']} ({x['reason']})" for x in crowd["excluded"])
    return (f"human ({crowd['study']}): {count(crowd['analyzed'])} participant(s) analyzed ({crowd['rule']}); "
            f"{count(len(crowd['excluded']))} excluded" + (f": {excluded}" if excluded else ""))


def leaderboard_board(store: Store, profile: str, by: str | None = None, *, common: bool = False,
                      listed: list[str] | None = None, each: bool = False, ci: bool = False,
                      bootstrap: int = 2000, seed: int = 0, aliases: AliasTable | None = None) -> Board:
    """The leaderboard of `aglw leaderboard`: models and human rows (see the module's docstring).

    ``listed``: the rows named by ``--models`` (models and human rows; None: every model and
    human row); ``each``: a row per web participant too (``--humans each``).
    """
    from workbench.metrics.service import leaderboard_rows, model_names, sort_rows
    from workbench.studies import crowd

    models = set(model_names(store))
    wanted_humans = None if listed is None else [n for n in listed if n not in models and n.startswith("human")]
    sets = crowd.answer_sets(store, each=each or bool(wanted_humans), desktop=common or bool(wanted_humans))
    pooled = {name for name in sets if not name.startswith("human:")}
    if wanted_humans:
        unknown = [n for n in wanted_humans if n not in sets]
        if unknown:
            known = ", ".join([*sorted(models), *crowd.human_row_names(store)]) or "none yet"
            raise AglwError(f"no answers for row(s) {', '.join(map(repr, unknown))} (rows: {known})")
        chosen = {n: sets[n] for n in wanted_humans}
    elif listed is not None:
        chosen = {}
    elif common:
        chosen = {n: records for n, records in sets.items() if n in pooled}
    else:
        chosen = {n: records for n, records in sets.items() if n != crowd.DESKTOP_POOLED and
                  not (n.startswith("human:") and "/" not in n)}  # the desktop rows come below, as before
    notes = []
    if common and listed is None and any(_per_person(n, pooled) for n in sets):
        notes.append("per-person rows are ranked with --common only when --models names them: each person "
                     "guessed a few clips; the pooled rows stand for them")
    answered = [{r["question_id"] for r in records} for records in chosen.values()] if common else []
    found = leaderboard_rows(store, profile, by, common=common,  # type: ignore[arg-type]
                             models=None if listed is None else [n for n in listed if n not in wanted_humans],
                             ci=ci, bootstrap=bootstrap, seed=seed, aliases=aliases, answered_too=answered)
    columns, rows = list(found.columns), list(found.rows)
    if by is None and not common and listed is None:
        from workbench.studies.localizers import human_rows

        # people who guessed blind at the desktop, scored alike (their rows as they always were)
        rows += human_rows(store, profile, columns, ci=ci, bootstrap=bootstrap, seed=seed, aliases=aliases)
    humans = crowd.scored_rows(store, chosen, profile, by=by, clips=found.common_keys if common else None,
                               ci=ci, bootstrap=bootstrap, seed=seed, aliases=aliases, columns=columns)
    if humans:
        at = columns.index("n_dataset") + 1 if "n_dataset" in columns else len(columns)
        columns[at:at] = list(CROWD_KEYS)
        rows = [{c: row.get(c) if c in CROWD_KEYS else row.get(c, math.nan) for c in columns}
                for row in [*rows, *humans]]
        if common:
            keys = (["group"] if by is not None else []) + ["profile", "distance_error_km", "model"]
            rows = sort_rows(rows, keys)
        elif by is not None:
            rows = sorted(rows, key=lambda row: (row["group"], row["profile"]))  # models first in each group
    web = [n for n in chosen if n != crowd.DESKTOP_POOLED and (not n.startswith("human:") or "/" in n)]
    crowds = crowd_exclusions(store) if web else []
    return Board(columns, rows, found.n_common, found.alias_table, notes, crowds)
