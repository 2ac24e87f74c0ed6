"""The study report counts what was studied (issue [N]): its methods paragraph's numbers equal an
independent count from the store, and a section without data says what is missing instead of an
empty table or "ALM studied: None"."""

from __future__ import annotations

import json
import re

from sqlalchemy import func, select

from cli.main import main
from storage import open_store
from storage.models import CategoryLabel, Clip, JudgeRun, Judgment
from tests.storage import studies_project


def test_the_methods_paragraph_counts_what_was_studied(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "s.sqlite"
    store = open_store(db)
    studies_project.populate(store)
    with store.session() as s:
        # Independent counts, straight from the tables the ratings come from.
        expert_clips = set(s.execute(select(CategoryLabel.clip_id).distinct()).scalars())
        judge_clips = set(s.execute(select(Judgment.clip_id).where(Judgment.status == "ok").distinct()).scalars())
        n_experts = s.execute(select(func.count(func.distinct(CategoryLabel.annotator_id)))).scalar_one()
        n_judges = s.execute(select(func.count(func.distinct(JudgeRun.judge_name)))).scalar_one()
    store.dispose()
    out = tmp_path / "report"
    assert main(["--db", str(db), "--json", "study", "report", "--out", str(out), "--bootstrap", "20",
                 "--min-items", "5"]) == 0
    capsys.readouterr()
    methods = json.loads((out / "report.json").read_text(encoding="utf-8"))["methods"]
    first = re.match(r"We compared (\d+) LLM judge\(s\) with (\d+) human expert\(s\) on the (\d+) clip\(s\) both rated "
                     r"\(experts labelled (\d+) clip\(s\), judges rated (\d+)\)\.", methods)
    assert first is not None, methods
    assert [int(g) for g in first.groups()] == [n_judges, n_experts, len(expert_clips & judge_clips),
                                                len(expert_clips), len(judge_clips)]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "ALM studied: alm-x" in html
    assert "No ALM answer was tagged with error modes." in methods
    assert "No error modes tagged yet" in html  # instead of an empty figure


def test_a_thin_project_says_what_is_missing(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """One expert, no judges, no error modes: each section says why it has no result."""
    db = tmp_path / "thin.sqlite"
    studies_project.thin_project(db)
    out = tmp_path / "report"
    assert main(["--db", str(db), "study", "report", "--out", str(out), "--bootstrap", "0"]) == 0
    capsys.readouterr()
    html = (out / "report.html").read_text(encoding="utf-8")
    methods = json.loads((out / "report.json").read_text(encoding="utf-8"))["methods"]
    assert "ALM studied: None" not in html and "We compared 0" not in methods
    assert methods.startswith("1 human expert(s) labelled 3 clip(s); no LLM judge rated any")
    assert "The Alternative Annotator Test was not run: no LLM judge has rated the clips yet" in methods
    assert "Not run: no LLM judge has rated the clips yet" in html
    assert "No agreement coefficient: agreement needs two raters of a clip" in html
    assert "No error modes tagged yet" in html


def test_error_mode_bars_carry_their_n_and_mark_fewer_than_five(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd

    from workbench.studies import figures

    shares = pd.DataFrame([
        {"alm": "few", "breakdown": "all", "group": "all", "mode": "refusal", "share": 1.0, "n_answers": 1},
        {"alm": "many", "breakdown": "all", "group": "all", "mode": "refusal", "share": 0.4, "n_answers": 12},
    ])
    labels: list[tuple] = []
    import matplotlib.axes

    original = matplotlib.axes.Axes.bar

    def bar(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        labels.append((kwargs.get("label"), kwargs.get("hatch")))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "bar", bar)
    figures.error_mode_bars(shares, "all")
    assert labels == [("few (n = 1; fewer than 5 answers)", "//"), ("many (n = 12)", None)]


def test_sensitivity_counts_the_stored_selection_apart_from_the_candidates(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from storage.models import CurationClipResult, CurationRun, Selection
    from tests.cli_helpers import run_json

    db = tmp_path / "s.sqlite"
    store = open_store(db)
    studies_project.populate(store)
    with store.write() as s:
        run_id = s.execute(select(func.max(CurationRun.id))).scalar_one()
        candidates = s.execute(select(func.count()).select_from(CurationClipResult).where(
            CurationClipResult.run_id == run_id, CurationClipResult.candidate.is_(True))).scalar_one()
        clip_ids = list(s.execute(select(Clip.id).order_by(Clip.id).limit(3)).scalars())
        selection = Selection(run_id=run_id, size=3, clip_ids=clip_ids)
        s.add(selection)
        s.flush()
        selection_id = selection.id
    store.dispose()
    grid = ["--gamma", "500,1000", "--alpha", "0.05", "--theta", "0.1"]
    ref = run_json(capsys, "--db", str(db), "--json", "study", "sensitivity", *grid)["reference"]
    assert (ref["n_candidates"], ref["n_stored_selection"], ref["selection_id"]) == (candidates, 3, selection_id)
    assert main(["--db", str(db), "study", "sensitivity", *grid]) == 0
    text = capsys.readouterr().out
    assert f"{candidates} of 40 clips are candidates" in text
    assert f"the stored selection (id {selection_id}) holds 3 clips" in text and "clips selected" not in text
