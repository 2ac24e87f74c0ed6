"""The study report's crowd section: one part per web study of the project (design/web-study.md).

Each part has the participant flow as a CONSORT-style diagram with every count
(:func:`workbench.studies.web_flow.participant_flow`, the one owner of the flow and the
exclusions), the excluded participants with their rule, and the crowd against each model by
continent and by speech, on the clips both answered. The crowd's and the models' numbers are the
leaderboard's own rows (:func:`workbench.studies.board.leaderboard_board` with ``--common`` and
``--models 'human (<study>)',MODEL``): nothing here scores an answer.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from storage import Store

PROFILE = "agl1k"
BREAKDOWNS = ("all", "continent", "speech")
METRICS = ("distance_error_km", "geoscore_mean", "continent_acc", "country_acc", "reject_rate")
COMPARISON_COLUMNS = ["study", "model", "breakdown", "group", "n_clips",
                      "crowd_n", "crowd_participants", *(f"crowd_{m}" for m in METRICS),
                      "model_n", *(f"model_{m}" for m in METRICS)]


@dataclass
class CrowdPart:
    """One web study's part of the report."""

    study: str
    mode: str
    counts: dict[str, int]
    details: dict[str, Any]
    participants: pd.DataFrame
    comparison: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"study": self.study, "mode": self.mode, "flow": dict(self.counts),
                "details": {k: v for k, v in self.details.items()}, "notes": list(self.notes),
                "comparison": self.comparison.to_dict(orient="records")}


def _pair_rows(store: Store, study: str, model: str, notes: list[str]) -> list[dict[str, Any]]:
    """The crowd and ``model`` on the clips both answered: overall, by continent, by speech (a group
    only one side has a row for, e.g. model records without the true continent, goes to ``notes``)."""
    from workbench.studies.board import leaderboard_board
    from workbench.studies.crowd import pooled_name

    crowd = pooled_name(study)
    out = []
    for breakdown in BREAKDOWNS:
        board = leaderboard_board(store, PROFILE, None if breakdown == "all" else breakdown, common=True,
                                  listed=[model, crowd])
        by_group: dict[Any, dict[str, dict[str, Any]]] = {}
        for row in board.rows:
            by_group.setdefault(row.get("group", "all"), {})[str(row["model"])] = row
        for group, rows in sorted(by_group.items(), key=lambda item: str(item[0])):
            human, machine = rows.get(crowd), rows.get(model)
            if human is None or machine is None:
                side, row = ("the crowd", human) if machine is None else (model, machine)
                notes.append(f"{model} by {breakdown}: group {group} has only {side}'s answers "
                             f"(n = {row.get('n') if row else 0}); the leaderboard groups each side by its own "
                             "records' true fields")
                continue
            out.append({"study": study, "model": model, "breakdown": breakdown, "group": str(group),
                        "n_clips": human.get("n_clips"), "crowd_n": human.get("n"),
                        "crowd_participants": human.get("n_participants"),
                        **{f"crowd_{m}": human.get(m) for m in METRICS}, "model_n": machine.get("n"),
                        **{f"model_{m}": machine.get(m) for m in METRICS}})
    return out


def crowd_part(store: Store, study: str) -> CrowdPart:
    """The report's part of one web study."""
    from workbench.metrics.service import model_names
    from workbench.studies.crowd import answer_sets, pooled_name
    from workbench.studies.web_flow import participant_flow

    flow = participant_flow(store, study)
    participants = pd.DataFrame([p.to_dict() for p in flow.participants],
                                columns=["participant", "status", "n_guesses", "excluded", "reason"])
    notes = []
    if flow.study.mode == "game":
        notes.append("game mode: participants saw the truth and the models' answers after each guess; "
                     "a demo, not a blind baseline")
    rows: list[dict[str, Any]] = []
    if pooled_name(study) not in answer_sets(store, studies=[study]):
        notes.append("no analyzed guess yet: nothing to compare with the models")
    else:
        for model in model_names(store):
            found = _pair_rows(store, study, model, notes)
            if not found:
                notes.append(f"{model}: no clip answered by both the crowd and the model")
            rows += found
    comparison = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    return CrowdPart(study, flow.study.mode, dict(flow.counts), dict(flow.details), participants, comparison, notes)


def crowd_parts(store: Store) -> list[CrowdPart]:
    """One part per web study of the project, by name."""
    from workbench.studies.web_study import study_names

    return [crowd_part(store, name) for name in study_names(store)]


def flow_frame(parts: list[CrowdPart]) -> pd.DataFrame:
    """Every count of every study's flow, long format (``tables/crowd_flow.csv``)."""
    rows = []
    for part in parts:
        for stage, n in part.counts.items():
            rows.append({"study": part.study, "stage": stage, "n": n})
        for stage, n in part.details.items():
            if stage == "excluded_by":
                rows += [{"study": part.study, "stage": f"excluded_by_{rule}", "n": k} for rule, k in n.items()]
            elif isinstance(n, int):
                rows.append({"study": part.study, "stage": stage, "n": n})
    return pd.DataFrame(rows, columns=["study", "stage", "n"])


def participants_frame(parts: list[CrowdPart]) -> pd.DataFrame:
    """Every participant of every study (``tables/crowd_participants.csv``; pseudonyms only)."""
    rows = [{"study": part.study, **row} for part in parts for row in part.participants.to_dict(orient="records")]
    return pd.DataFrame(rows, columns=["study", "participant", "status", "n_guesses", "excluded", "reason"])


def comparison_frame(parts: list[CrowdPart]) -> pd.DataFrame:
    """Every study's crowd vs each model (``tables/crowd_vs_models.csv``)."""
    rows = [row for part in parts for row in part.comparison.to_dict(orient="records")]
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def flow_sentence(part: CrowdPart) -> str:
    """The flow in one sentence, every count with its stage."""
    c, d = part.counts, part.details
    check = d.get("headphone_check")
    checked = (f"{c['passed_headphones']} passed the headphone check ({check} mode; {d['failed_headphones']} failed"
               + (f", {d['screened_out']} screened out)" if check == "screen" else ")")
               if check != "off" else "no headphone check")
    return (f"Web study {part.study} ({part.mode} mode): {c['invited']} invitation(s) sent and "
            f"{d['open_link']} participant(s) entered by the open link; {c['started']} entered, {c['consented']} "
            f"consented, {checked}, {c['finished']} finished, {c['excluded']} of them excluded by the study's rules "
            f"fixed before it started, {c['analyzed']} analyzed ({d['analyzed_rule']}). The crowd's row pools every "
            f"analyzed guess; paired with a model on the clips both answered, a clip's score is the mean over its "
            f"guesses (the leaderboard's --common).")


def crowd_html(parts: list[CrowdPart], table_html: Any, figure_html: Any, missing_html: Any) -> tuple[str, int]:
    """The report's crowd section and how many figures it holds (the report's own table and figure
    writers are passed in, so the section looks like the others)."""
    from workbench.studies import figures_crowd

    if not parts:
        return "", 0
    body = ["<h2>Crowd baseline: humans in the browser vs the models</h2>"]
    n_figures = 0
    for part in parts:
        body.append(f"<h3>Web study {html.escape(part.study)}</h3><p>{html.escape(flow_sentence(part))}</p>")
        for note in part.notes:
            body.append(missing_html(note[0].upper() + note[1:] + "."))
        body.append(figure_html(figures_crowd.participant_flow(part.study, part.mode, part.counts, part.details),
                                f"Participant flow of {part.study} (CONSORT style; n per box)"))
        n_figures += 1
        excluded = part.participants[part.participants["excluded"].astype(bool)]
        if len(excluded):
            body.append(table_html(excluded[["participant", "status", "n_guesses", "reason"]],
                                   f"{part.study}: excluded participants and the rule (n = {len(excluded)})"))
        if len(part.comparison):
            shown = part.comparison.drop(columns=["study"])
            body.append(table_html(shown, f"{part.study}: the crowd vs each model on the clips both answered "
                                          "(n: guesses of the crowd, answers of the model)"))
            for breakdown in ("continent", "speech"):
                body.append(figure_html(figures_crowd.crowd_vs_models(part.comparison, part.study, breakdown),
                                        f"{part.study} vs the models by {breakdown}: mean distance error, n per bar "
                                        "(hatched: fewer than 5 answers)"))
                n_figures += 1
    return "".join(body), n_figures
