"""The study report's crowd section (issue 38): one part per web study, the participant flow as a
CONSORT diagram with every count, and the crowd against the model on the clips both answered."""

from __future__ import annotations

import csv
import json
import re
from itertools import combinations

import pytest
from sqlalchemy import select

from cli.main import main
from storage import tables as T
from tests.storage.studies_project import ALM, N_CLIPS, link_audio, populate
from tests.storage.test_studies_project import find_browser, rendered_image_widths
from tests.storage.test_web_study_cli import _check, _play
from workbench.formatting import formatted
from workbench.studies import web_flow, web_session, web_study

N_AUDIO = N_CLIPS - 4


@pytest.fixture
def project(tmp_path):  # type: ignore[no-untyped-def]
    from storage import open_store

    db = tmp_path / "project.sqlite"
    store = open_store(db)
    populate(store)
    link_audio(store, tmp_path / "media", [f"clip{i:03d}" for i in range(N_AUDIO)])
    yield store, str(db)
    store.dispose()


def _crowd(store) -> None:  # type: ignore[no-untyped-def]
    """crowd-1: 6 invited; one never comes, one fails the check (excluded), one leaves half-way,
    three finish well. crowd-2: nobody yet."""
    study, _ = web_study.create_study(store, "crowd-1", per_participant=4, headphone_check="record",
                                      attention=["clip000"], seed=1)
    study, nonces = web_study.invite(store, "crowd-1", 6)
    deaf, halfway, *good = (web_session.enter_by_invite(store, study, n) for n in nonces[1:])  # one never comes
    _check(store, study, deaf, passed=False)
    _play(store, study, deaf)
    _check(store, study, halfway)
    _play(store, study, halfway, stop_after=2)
    for pid in good:
        _check(store, study, pid)
        _play(store, study, pid)
    web_study.create_study(store, "crowd-2", per_participant=2, headphone_check="off")


def _truth_in_the_records(store) -> None:  # type: ignore[no-untyped-def]
    """The ALM's records carry their clip's continent, as an AGL1K result file does (the leaderboard
    groups a model's answers by its records' own truth)."""
    from sqlalchemy import update

    pr, c = T.prediction.c, T.clip.c
    with store.write() as s:
        for clip_id, continent in s.execute(select(c.id, c.continent)).all():
            s.execute(update(T.prediction).where(pr.clip_id == clip_id).values(true_continent=continent))


def _rows(path) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_the_report_has_a_crowd_part_per_web_study_with_every_count(project, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    store, db = project
    _crowd(store)
    _truth_in_the_records(store)
    flows = {name: web_flow.participant_flow(store, name) for name in ("crowd-1", "crowd-2")}
    analyzed = web_flow.analyzed_participants(store, "crowd-1")
    g, a, pr, run, c = T.web_guess.c, T.web_assignment.c, T.prediction.c, T.alm_run.c, T.clip.c
    with store.read() as connection:
        guessed = [k for k, pid in connection.execute(
            select(c.key, g.participant_id).join(T.web_assignment, a.id == g.assignment_id)
            .join(T.clip, c.id == g.clip_id).where(a.kind == "item")) if pid in analyzed]
        answered = {q for (q,) in connection.execute(select(pr.question_id).join(T.alm_run, run.id == pr.alm_run_id)
                                                     .where(run.model == ALM))}
    out = tmp_path / "report"
    assert main(["--db", db, "--json", "study", "report", "--out", str(out), "--bootstrap", "5",
                 "--min-items", "5"]) == 0
    capsys.readouterr()

    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert [part["study"] for part in report["crowd"]] == ["crowd-1", "crowd-2"]
    for part in report["crowd"]:
        assert part["flow"] == flows[part["study"]].counts
    assert flows["crowd-1"].counts == {"invited": 6, "started": 5, "consented": 5, "passed_headphones": 4,
                                       "finished": 4, "excluded": 1, "analyzed": 3}
    flow_csv = {(r["study"], r["stage"]): int(r["n"]) for r in _rows(out / "tables" / "crowd_flow.csv")}
    for stage, n in flows["crowd-1"].counts.items():
        assert flow_csv[("crowd-1", stage)] == n
    assert flow_csv[("crowd-1", "excluded_by_headphones_failed")] == 1
    assert flow_csv[("crowd-1", "in_progress")] == 1

    versus = [r for r in _rows(out / "tables" / "crowd_vs_models.csv") if r["study"] == "crowd-1"]
    overall = [r for r in versus if r["breakdown"] == "all"]
    assert len(overall) == 1 and overall[0]["model"] == ALM
    # the crowd's n: the analyzed participants' guesses on scored items the model answered too
    common = [k for k in guessed if k in answered]
    assert int(overall[0]["crowd_n"]) == len(common) == 3 * 4
    assert int(overall[0]["n_clips"]) == int(overall[0]["model_n"]) == len(set(common))
    assert int(overall[0]["crowd_participants"]) == 3
    for breakdown in ("continent", "speech"):
        parts = [r for r in versus if r["breakdown"] == breakdown]
        assert parts and sum(int(r["crowd_n"]) for r in parts) == len(common)
        assert sum(int(r["n_clips"]) for r in parts) == len(set(common))
    assert {r["group"] for r in versus if r["breakdown"] == "continent"} <= {"Europe", "Asia", "Africa"}

    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Crowd baseline" in page
    assert "Participant flow of crowd-1" in page and "Participant flow of crowd-2" in page
    assert ("6 invitation(s) sent and 0 participant(s) entered by the open link; 5 entered, 5 consented, "
            "4 passed the headphone check (record mode; 1 failed), 4 finished, 1 of them excluded") in page
    assert "No analyzed guess yet" in page
    excluded = [p.participant for p in flows["crowd-1"].participants if p.excluded]
    assert len(excluded) == 1 and excluded[0] in page
    # the crowd vs the model as a reader reads it: titled columns, km and percentages (the CSV keeps the numbers)
    import html as html_module

    heads = [html_module.unescape(h) for h in re.findall(r"<th>(.*?)</th>", page)]
    assert "crowd: mean distance error (km; a refusal counts 10,000 km)" in heads and "model: country acc." in heads
    distance = float(overall[0]["crowd_distance_error_km"])
    assert f"<td>{html_module.escape(formatted(distance, 'km'))}</td>" in page
    assert re.search(r"<td>\d+(\.\d)? %</td>", page)
    assert report["n_figures"] >= 4  # two flows and the crowd-1 comparisons by continent and speech
    assert report["n_figures"] == page.count("<img ") and "http://" not in page and "https://" not in page
    browser = find_browser()
    if browser is None:
        pytest.skip("no Chromium found (install the distribution's chromium package) to check the figures render")
    widths = rendered_image_widths(browser, out / "report.html", tmp_path)
    assert len(widths) == report["n_figures"] and all(w > 0 for w in widths), widths


def _text_boxes(fig):  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = []
    for text in fig.findobj(lambda artist: hasattr(artist, "get_text") and hasattr(artist, "get_bbox_patch")):
        if not text.get_text():
            continue
        patch = text.get_bbox_patch()
        extent = patch.get_window_extent(renderer) if patch is not None else text.get_window_extent(renderer)
        boxes.append((text.get_text(), extent))
    return boxes


@pytest.mark.parametrize("check", ["record", "screen", "off"])
def test_the_flow_diagram_has_every_count_inside_the_figure_and_no_text_overlaps(check) -> None:  # type: ignore[no-untyped-def]
    from workbench.studies.figures_crowd import participant_flow_figure

    counts = {"invited": 12345, "started": 11111, "consented": 10987, "passed_headphones": 9876,
              "finished": 8765, "excluded": 1234, "analyzed": 7531}
    details = {"open_link": 4321, "not_started": 1234, "no_consent": 124, "failed_headphones": 1111,
               "headphones_pending": 12, "screened_out": 1111 if check == "screen" else 0, "in_progress": 99,
               "excluded_by": {"headphones_failed": 1000, "max_attention_missed": 200, "min_median_listen_s": 100},
               "analyzed_rule": web_flow.ANALYZED_RULE, "headphone_check": check}
    fig = participant_flow_figure("crowd-with-a-long-name_2026.11", "study", counts, details)
    boxes = _text_boxes(fig)
    shown = " ".join(text for text, _ in boxes)
    for n in (*counts.values(), 4321, 1234, 124, 99, 1000, 200, 100):
        assert str(n) in shown
    width, height = fig.canvas.get_width_height()
    for text, box in boxes:
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, f"{text!r} leaves the figure"
    for (first, a), (second, b) in combinations(boxes, 2):
        assert not a.overlaps(b), f"{first!r} overlaps {second!r}"


def test_a_crowd_baseline_without_judges_gets_its_report(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A project with a web study and a model but no judge or expert rating: the report holds the
    crowd sections and says what it leaves out; a project with neither is refused in one line."""
    from storage import open_store
    from tests.web import synthetic_project

    store = open_store(tmp_path / "crowd.sqlite")
    try:
        synthetic_project.build(store, tmp_path, "crowd-only", n_clips=4, per_participant=2, target_per_clip=1,
                                seconds=1.0)
        study = web_study.load_study(store, "crowd-only")
        study, nonces = web_study.invite(store, "crowd-only", 2)
        for nonce in nonces:
            pid = web_session.enter_by_invite(store, study, nonce)
            _check(store, study, pid)
            _play(store, study, pid)
    finally:
        store.dispose()
    db = str(tmp_path / "crowd.sqlite")
    capsys.readouterr()
    assert main(["--db", db, "--json", "study", "report", "--out", str(tmp_path / "report")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [part["study"] for part in report["crowd"]] == ["crowd-only"]
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "No judge or expert ratings yet" in page and "crowd-only" in page
    with open(tmp_path / "report" / "tables" / "crowd_flow.csv", newline="", encoding="utf-8") as handle:
        assert any("crowd-only" in ",".join(row) for row in csv.reader(handle))
    empty = open_store(tmp_path / "empty.sqlite")
    empty.dispose()
    assert main(["--db", str(tmp_path / "empty.sqlite"), "study", "report", "--out", str(tmp_path / "r2")]) == 1
    assert "no judge or expert ratings and no web study" in capsys.readouterr().err
