"""Studies on a project: the alt-test per judge and label, the sensitivity sweep, error modes, the HTML report."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlmodel import select

from cli.main import main
from storage.models import CategoryLabel, JudgeRun, Judgment, LabelHistory
from tests.cli_helpers import run_json
from tests.core.test_studies_alt_test import reference_alt_test
from tests.storage.studies_project import ALM, populate


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from storage import open_store

    base = tmp_path_factory.mktemp("studies")
    store = open_store(base / "project.sqlite")
    populate(store)
    yield store, str(base / "project.sqlite"), base
    store.dispose()


def _expert_and_judge_annotations(store, label: str, judge: str):  # type: ignore[no-untyped-def]
    """Straight from the tables: experts by annotator id, the judge's latest run (one re-run exists)."""
    with store.session() as s:
        labels = s.exec(select(CategoryLabel)).all()
        runs = s.exec(select(JudgeRun).where(JudgeRun.judge_name == judge).order_by(JudgeRun.id)).all()
        judged = s.exec(select(Judgment).where(Judgment.judge_run_id == runs[-1].id)).all()
    humans: dict = {}
    for lab in labels:
        value = lab.contribution if label == "contribution" else lab.effect
        humans.setdefault(lab.annotator_id, {})[(lab.clip_id, lab.category_id)] = (
            float(value) if label == "contribution" else value)
    llm = {(j.clip_id, j.category_id): (float(j.contribution) if label == "contribution" else j.effect)
           for j in judged}
    return llm, humans


@pytest.mark.parametrize("label,judge,metric", [("effect", "opus", "accuracy"), ("contribution", "haiku", "neg_rmse"),
                                               ("effect", "sonnet", "accuracy")])
def test_project_alt_test_per_judge_and_label_matches_the_reference(project, capsys, label, judge, metric) -> None:  # type: ignore[no-untyped-def]
    store, db, _ = project
    out = run_json(capsys, "--db", db, "study", "alt-test", "--epsilon", "0.15", "--json")
    assert out["epsilon"] == 0.15 and out["alm"] == ALM
    row = next(r for r in out["tests"] if r["label"] == label and r["llm"] == f"judge:{judge}")
    llm, humans = _expert_and_judge_annotations(store, label, judge)
    want = reference_alt_test(llm, humans, metric, 0.15, 0.05)
    assert row["metric"] == metric and row["refused"] is None
    assert row["winning_rate"] == pytest.approx(want["winning_rate"])
    assert row["advantage_probability"] == pytest.approx(want["advantage"], abs=1e-9)
    assert sorted(a["p_value"] for a in row["annotators"]) == pytest.approx(sorted(want["p"].values()), abs=1e-6)
    # the three judges differ, so the test discriminates: one passes and one fails somewhere
    verdicts = {r["passed"] for r in out["tests"] if not r["refused"]}
    assert verdicts == {True, False}


def test_project_alt_test_refuses_too_few_shared_units_per_candidate(project, capsys) -> None:  # type: ignore[no-untyped-def]
    _, db, _ = project
    capsys.readouterr()
    # every requested test refused: the JSON says why per test, and the run exits 1 (nothing could run)
    assert main(["--db", db, "study", "alt-test", "--min-items", "200", "--json"]) == 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["tests"] and all("shares at least 200 units" in r["refused"] for r in out["tests"])
    assert "no requested alt-test could run" in captured.err
    assert main(["--db", db, "study", "alt-test", "--min-items", "200"]) == 1
    captured = capsys.readouterr()
    assert "not tested" in captured.out and "no requested alt-test could run" in captured.err
    capsys.readouterr()
    assert main(["--db", db, "study", "alt-test", "--llm", "judge:gpt"]) == 1
    assert "no judge of that name" in capsys.readouterr().err


def test_sensitivity_sweep_agrees_with_a_refit_of_each_setting(project, capsys) -> None:  # type: ignore[no-untyped-def]
    from workbench.curation import runs, service
    from workbench.curation.model import FitParameters

    store, db, base = project
    out = run_json(capsys, "--db", db, "study", "sensitivity", "--gamma", "500,1000,3000", "--alpha", "0,0.05,0.3",
                   "--theta", "-0.5,0,0.2,0.6", "--out", str(base / "sweep"), "--json")
    assert len(out["settings"]) == 3 * 3 * 4
    assert (base / "sweep" / "sensitivity.csv").exists() and (base / "sweep" / "sensitivity_heatmap.png").exists()
    ref = out["reference"]
    stored = {c.clip_id for c in runs.stored_fit(store).clips if c.candidate}
    assert ref["n_selected"] == len(stored)
    by_setting = {(r["gamma_km"], r["alpha"], r["theta"]): r for r in out["settings"]}
    assert by_setting[(1000.0, 0.05, 0.0)]["jaccard"] == 1.0  # the stored setting reproduces the stored run
    for gamma, alpha, theta in [(500.0, 0.0, 0.2), (3000.0, 0.3, -0.5), (1000.0, 0.3, 0.6)]:
        preview = service.fit(store, FitParameters(n_min=1, gamma_km=gamma, alpha=alpha, theta=theta), preview=True)
        chosen = {c.clip_id for c in preview.clips if c.candidate}
        row = by_setting[(gamma, alpha, theta)]
        assert row["n_selected"] == len(chosen)
        assert row["jaccard"] == pytest.approx(len(chosen & stored) / len(chosen | stored))
        before = {c.id: c.polarity for c in runs.stored_fit(store).categories}
        flips = sorted(c.id for c in preview.categories
                       if {before.get(c.id), c.polarity} == {"P", "N"})
        assert row["flipped"].split() == flips
    assert any(r["jaccard"] < 1 for r in out["settings"])  # the sweep moves the selection
    capsys.readouterr()
    assert main(["--db", db, "study", "sensitivity", "--alpha", "0:x"]) == 1
    assert "start:stop:count" in capsys.readouterr().err


def test_error_modes_cli_history_and_undo(project, capsys) -> None:  # type: ignore[no-untyped-def]
    from workbench.commands import CommandStack, SetErrorModes
    from workbench.labels import LabelService
    from workbench.studies.error_modes import ErrorModeService

    store, db, _ = project
    saved = run_json(capsys, "--db", db, "--annotator", "ada", "study", "error-mode", "--clip", "clip000", "--alm", ALM,
                     "--modes", "Bird Bias,over-commitment", "--json")
    assert saved["new"] == {"modes": "over_commitment,bird_bias"} and saved["version"] == 1
    run_json(capsys, "--db", db, "--annotator", "bea", "study", "error-mode", "--clip", "clip000", "--alm", ALM,
             "--modes", "bird_bias", "--json")
    for argv, message in [
        (["--modes", "other"], "needs a note"),
        (["--modes", "bird_song"], "not in the taxonomy"),
    ]:
        capsys.readouterr()
        assert main(["--db", db, "--annotator", "ada", "study", "error-mode", "--clip", "clip004", "--alm", ALM, *argv]) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert main(["--db", db, "--annotator", "ada", "study", "error-mode", "--clip", "clip004", "--alm", "alm-y",
                 "--modes", "refusal"]) == 1
    assert "no ALM run of that name" in capsys.readouterr().err
    with store.session() as s:
        rows = s.exec(select(LabelHistory).where(LabelHistory.entity == "error_mode_label")).all()
    assert len(rows) == 2 and all(r.category_id.startswith("alm_run:") for r in rows)

    service = ErrorModeService(store)
    labels = LabelService(store)
    ada = labels.find_annotator("ada")
    clip_id = labels.clip_id_for_key("clip005")  # a refused answer
    alm_run_id = service.alm_run_id(ALM)
    stack = CommandStack()
    stack.push(SetErrorModes(service, ada.id, clip_id, alm_run_id, base_version=0, modes=["refusal", "other"],
                             note="no place named"))
    assert [v.modes for v in service.labels(clip_id=clip_id)] == [("refusal", "other")]
    stack.undo()
    assert service.labels(clip_id=clip_id) == []
    stack.redo()
    assert service.labels(clip_id=clip_id)[0].note == "no place named"
    stack.undo()

    shares = run_json(capsys, "--db", db, "study", "error-modes", "--json")
    overall = {r["mode"]: r["share"] for r in shares["shares"] if r["breakdown"] == "all"}
    assert overall["bird_bias"] == 1.0 and overall["over_commitment"] == 0.5 and overall["refusal"] == 0.0
    assert shares["n_answers"] == 1


def find_browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def rendered_image_widths(browser: str, page: Path, tmp: Path) -> list[int]:
    """Open ``page`` in headless Chromium and return every image's naturalWidth after load."""
    probe = tmp / "probe.html"
    text = page.read_text(encoding="utf-8")
    script = ("<script>window.addEventListener('load',function(){var w=[];for(var i=0;i<document.images.length;i++)"
              "{w.push(document.images[i].naturalWidth)}var p=document.createElement('pre');p.id='widths';"
              "p.textContent=JSON.stringify(w);document.body.appendChild(p);});</script>")
    probe.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    result = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000", "--dump-dom",
         probe.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="widths">(.*?)</pre>', result.stdout)
    assert found, result.stderr[-2000:]
    return json.loads(found.group(1))


def test_report_renders_every_figure_in_a_headless_browser(project, capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store, db, base = project
    out = base / "report"
    report = run_json(capsys, "--db", db, "study", "report", "--out", str(out), "--bootstrap", "50", "--epsilon", "0.15",
                      "--alpha", "0.1", "--json")
    page = out / "report.html"
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text and "src='data:image/png;base64," in text
    assert report["n_figures"] == text.count("<img ") and report["n_figures"] >= 5
    for name in ("alt_test.csv", "alt_test.tex", "baseline.csv", "baseline.tex", "sensitivity.csv",
                 "difficulty_effect.csv", "error_mode_shares.csv"):
        assert (out / "tables" / name).exists(), name
    methods = report["methods"]
    assert "ε = 0.15" in methods and "α = 0.1" in methods and "B = 50" in methods
    # names a reader knows (issue 39): the coefficient and the raters as in the figures, never the keys
    assert "Cohen's κ" in methods and "weighted κ (quadratic)" in methods and "mean of the judges" in methods
    assert "judge:" not in methods and "kappa" not in methods and "expert_consensus" not in methods
    alt = [r for r in report["alt_tests"] if not r["refused"]]
    assert alt and all(f"ω = {r['winning_rate']:.2f}" in methods for r in alt)
    capsys.readouterr()
    assert main(["--db", db, "study", "report", "--out", str(out)]) == 1  # an earlier report needs --force
    assert "--force" in capsys.readouterr().err
    browser = find_browser()
    if browser is None:
        pytest.skip("no Chromium found (install the distribution's chromium package) to check the figures render")
    widths = rendered_image_widths(browser, page, tmp_path)
    assert len(widths) == report["n_figures"] and all(w > 0 for w in widths), widths


def test_alt_test_with_one_expert_and_no_judges_says_why_and_exits_1(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tests.storage.studies_project import thin_project

    thin_project(tmp_path / "one.sqlite")
    capsys.readouterr()
    assert main(["--db", str(tmp_path / "one.sqlite"), "study", "alt-test"]) == 1
    err = capsys.readouterr().err.strip()
    assert "no alt-test could run" in err and "1 expert" in err and len(err.splitlines()) == 1


def test_error_modes_are_checked_against_the_answer(project, capsys) -> None:  # type: ignore[no-untyped-def]
    _, db, _ = project

    def tag(key: str, modes: str, *extra: str) -> tuple[int, str]:
        capsys.readouterr()
        rc = main(["--db", db, "--annotator", "ada", "study", "error-mode", "--clip", key, "--alm", ALM,
                   "--modes", modes, *extra])
        return rc, capsys.readouterr().err.strip()

    # clip001: a right answer (about 70 km off); clip004: wrong (thousands of km); clip005: refused
    rc, err = tag("clip001", "refusal")
    assert rc == 1 and "Refusal is only for an answer without a location" in err and len(err.splitlines()) == 1
    rc, err = tag("clip004", "refusal")
    assert rc == 1 and "Refusal is only" in err
    rc, err = tag("clip001", "bird_bias")
    assert rc == 1 and "within the 1,000 km" in err and "--force" in err
    assert tag("clip001", "bird_bias", "--force")[0] == 0
    assert tag("clip001", "refusal", "--force")[0] == 1  # --force never makes a place a refusal
    assert tag("clip004", "bird_bias")[0] == 0
    assert tag("clip005", "refusal")[0] == 0
