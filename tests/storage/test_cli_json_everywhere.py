"""Every `aglw` subcommand, with --json before and after the subcommand: stdout is exactly one
JSON value (cli.md). A command added without an entry here fails the coverage check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from tests.core.test_tagging_model import calibrated_model
from tests.core.test_tagging_ontology import write_small_ontology
from tests.support.fake_anthropic import FakeAnthropicAPI
from tests.support.fake_http import serve_folder
from cli.main import main
from tests.cli_helpers import command_tree

KEY = "sk-ant-json-everywhere-0123456789"
# screenshot renders the window offscreen, where Qt says this once per window
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

# Commands this test does not run, with the reason.
NOT_RUN = {"gui": "opens an interactive window (covered by the pytest-qt tests)",
           "serve": "serves until stopped; its --json ready line is one object (tests/web/test_serve_cli.py)"}


def leaf_commands() -> set[str]:
    """Every runnable command path of the CLI (a group with its own callback counts too)."""
    found: set[str] = set()

    def walk(command, path: list[str]) -> None:  # type: ignore[no-untyped-def]
        subcommands = getattr(command, "commands", None)
        if subcommands:
            if getattr(command, "invoke_without_command", False) and path:
                found.add(" ".join(path))
            for name, sub in subcommands.items():
                walk(sub, [*path, name])
        else:
            found.add(" ".join(path))

    walk(command_tree(), [])  # the root loads a command's module on use
    return found


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from workbench.demo import create_demo_project

    root = tmp_path_factory.mktemp("everywhere")
    demo = create_demo_project(root / "demo")
    # DEMO-0001 clips (an absolute flag to overrule: the demo's pool of 4 raises no low_complexity)
    from sqlalchemy import update
    from sqlmodel import select

    from storage import open_store
    from storage.models import Clip, ClipQuality

    store = open_store(demo.db_path)
    try:
        with store.write() as s:
            clip_id = s.exec(select(Clip.id).where(Clip.key == "DEMO-0001")).one()
            s.execute(update(ClipQuality).where(ClipQuality.clip_id == clip_id).values(clipping_ratio=0.01))
    finally:
        store.dispose()
    models = root / "models"
    models.mkdir()
    torch.save(calibrated_model("mn01", seed=3).state_dict(), models / "mn01_as.pt")
    ontology, _ = write_small_ontology(root / "onto")
    source = root / "source"  # what fetch-audio downloads from (a local HTTP server, no network)
    for wav in (demo.db_path.parent / "media").glob("*.wav"):
        (source / wav.stem).mkdir(parents=True)
        shutil.copy(wav, source / wav.stem / wav.name)
    ratings = root / "ratings.csv"
    ratings.write_text("unit,rater,value\n" + "".join(f"u{u},r{r},{(u + r) % 3}\n" for u in range(8) for r in range(3)))
    tone = root / "tone.wav"
    t = np.arange(32_000) / 32_000
    sf.write(tone, np.stack([np.sin(2 * np.pi * 440 * t), np.sin(2 * np.pi * 440 * t + 0.3)], axis=1), 32_000)
    return {"root": root, "db": demo.db_path, "models": models, "ontology": ontology, "source": source,
            "ratings": ratings, "tone": tone}


def commands(w: dict, run: str, api_url: str) -> dict[str, list[str]]:
    """Arguments per command; ``run`` keeps the two runs' output files apart."""
    out = w["root"] / run
    out.mkdir(exist_ok=True)
    return {
        "import dataset": ["--format", "agl1k", str(_agl1k_csv(out)), "--name", f"extra-{run}"],
        "import predictions": ["--model", f"alm-{run}", str(_predictions(out))],
        "metrics": ["--model", "DEMO-ALM (synthetic reasoning)"],
        "leaderboard": [],
        "compare": ["--models", f"DEMO-ALM (synthetic reasoning),alm-{run}", "--bootstrap", "100"],
        "fetch-audio": ["--clips", "DEMO-0001", "--to", str(out / "downloads"),
                        "--url-template", f"{w['source_url']}/{{key}}/{{mp3name}}"],
        "analyze": [str(w["tone"])],
        "analyze-pool": ["--force", "--clips", "DEMO-0002,DEMO-0003"],  # not DEMO-0001: its clipping flag is set by hand
        "direction": [str(w["tone"]), "--layout", "binaural"],
        "tag": ["--model", "mn01_as", "--clips", "DEMO-0001"],
        "tag-file": [str(w["tone"]), "--model", "mn01_as", "--top", "2"],
        "judge": ["--dry-run", "--alm", "DEMO-ALM (synthetic reasoning)"],
        "judge models": ["--base-url", api_url],
        "label set": ["--clip", "DEMO-0001", "--category", _a_category(w), "--contribution", "2"],
        "label clip": ["--clip", "DEMO-0001", "--rating", "4"],
        "label polarity": ["--category", _a_category(w), "--polarity", "N"],
        "label history": [],
        "fit": ["--preview"],
        "select": ["--size", "2"],
        "export selection": [str(out / "selection.csv")],
        "export dataset": [str(out / "hf-export"), "--selection", "latest"],
        "agreement": ["--ratings", str(w["ratings"]), "--level", "nominal"],
        "screenshot": ["--clip", "DEMO-0002", "--out", str(out / "shot.png"), "--size", "800x600"],
        "demo": ["--no-gui", "--dir", str(out / "demo")],
        "clips list": ["--limit", "2"],
        "clips show": ["DEMO-0002"],
        "media link": ["--dry-run"],
        "judgments show": ["--clip", "DEMO-0002"],
        "check locations": [],
        "alm run": ["--model", f"alm-run-{run}", "--provider", "openai-compatible", "--base-url", api_url,
                    "--api-model", "fake-audio-model", "--clips", "DEMO-0001", "--dry-run"],
        "export predictions": [str(out / "predictions.jsonl"), "--model", "DEMO-ALM (synthetic reasoning)"],
        **_events_commands(out),
        **_study_commands(out, api_url),
        # DEMO-0001 clips (the workspace fixture)
        "quality overrule": ["--clip", "DEMO-0001", "--flag", "clipping", "--note", "kept"],
        "quality restore": ["--clip", "DEMO-0001", "--flag", "clipping"],
    }


def _study_commands(out: Path, api_url: str) -> dict[str, list[str]]:
    """The `study` group (issue 18) on the demo project."""
    alm = "DEMO-ALM (synthetic reasoning)"
    # the demo has one expert: on its own labels every alt-test is refused (exit 1); a file with
    # four raters runs one
    ratings = out / "alt.csv"
    ratings.write_text("unit,rater,value\n" + "".join(f"u{u},r{r},{(u + r * (u % 2)) % 3}\n"
                                                      for u in range(8) for r in range(4)))
    return {
        "study alt-test": ["--ratings", str(ratings), "--llm", "r0", "--min-items", "5"],
        "study sensitivity": ["--gamma", "500,1000", "--alpha", "0,0.05", "--theta", "0,0.5"],
        "study error-mode": ["--clip", "DEMO-0004", "--alm", alm, "--modes", "bird_bias"],  # a wrong answer
        "study error-modes": [],
        "study judge-error-modes": ["--alm", alm, "--limit", "1", "--judges", "opus", "--base-url", api_url],
        "study report": ["--out", str(out / "study-report"), "--bootstrap", "5"],
        "study plan": ["--name", f"plan-{out.name}", "--annotators", "ana,ben", "--overlap", "1"],
        "study progress": ["--out", str(out / "plan.csv")],
        "study guess": ["--clip", "DEMO-0002", "--lat", "48.2", "--lon", "16.4", "--confidence", "0.5"],
        "study localizers": [],
        "study web": [f"crowd-{out.name}", "--clips", "all", "--per-participant", "2"],
        "study invite": [f"crowd-{out.name}", "--n", "2"],
        "study participants": [f"crowd-{out.name}"],
    }


def _events_commands(out: Path) -> dict[str, list[str]]:
    """The `events` group on the demo's FOA clip (the import replaces the run before's)."""
    events_csv = out / "DEMO-0004.csv"
    events_csv.write_text("0,1,0,30,0\n1,1,0,32,0\n5,7,0,-90,10\n")
    ref, pred = out / "seld_ref", out / "seld_pred"
    ref.mkdir(exist_ok=True)
    pred.mkdir(exist_ok=True)
    (ref / "a.csv").write_text("0,1,0,30,0\n1,1,0,32,0\n12,1,0,32,0\n")
    (pred / "a.csv").write_text("0,1,0,35,0\n1,1,0,30,0\n")
    answers = out / "answers.jsonl"
    answers.write_text("")
    return {
        "events import": [str(events_csv), "--replace"],
        "events export": [str(out / "events_out.csv"), "--clip", "DEMO-0004"],
        "events eval": ["--ref", str(ref), "--pred", str(pred)],
        "events qa": ["--out", str(out / "qa.jsonl"), "--clips", "DEMO-0004"],
        "events score-qa": ["--questions", str(out / "qa.jsonl"), "--answers", str(answers)],
    }


def _a_category(w: dict) -> str:
    from storage import open_store
    from storage.models import Tag

    store = open_store(w["db"])
    with store.session() as s:
        category = s.exec(__import__("sqlmodel").select(Tag.audioset_id)).first()
    store.dispose()
    return str(category)


def _agl1k_csv(folder: Path) -> Path:
    from tests.storage.test_import_dataset import clip_row, write_csv

    return write_csv(folder / "extra.csv", [clip_row(1), clip_row(2)])


def _predictions(folder: Path) -> Path:
    from tests.storage.test_import_predictions import HAND_RECORDS, write_jsonl

    # Answers on two demo clips, so that `compare` has clips both models answered.
    return write_jsonl(folder / "alm.jsonl", [dict(r, question_id=f"DEMO-{i:04d}") for i, r in
                                              enumerate(HAND_RECORDS[:2], start=1)])


def test_every_command_is_listed_here() -> None:
    assert _names() | set(NOT_RUN) == leaf_commands()


def _names() -> set[str]:
    return {
        "import dataset", "import predictions", "metrics", "leaderboard", "compare", "fetch-audio", "analyze", "analyze-pool", "direction",
        "tag", "tag-file", "judge", "judge models", "label set", "label clip", "label polarity", "label history",
        "fit", "select", "export selection", "export dataset", "agreement", "screenshot", "demo", "clips list", "clips show",
        "media link", "judgments show", "check locations", "alm run", "export predictions",
        "events import", "events export", "events eval", "events qa", "events score-qa",
        "study alt-test", "study sensitivity", "study error-mode", "study error-modes", "study judge-error-modes",
        "study report", "study plan", "study progress", "study guess", "study localizers",
        "study web", "study invite", "study participants",
        "quality overrule", "quality restore",
    }


@pytest.mark.slow
def test_json_before_and_after_the_subcommand_prints_one_json_value(workspace, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AGLW_EFFICIENTAT_DIR", str(workspace["models"]))
    monkeypatch.setenv("AGLW_ONTOLOGY", str(workspace["ontology"]))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.chdir(workspace["root"])
    db = str(workspace["db"])
    with serve_folder(workspace["source"]) as url:
        workspace["source_url"] = url
        _run_all(workspace, db, capsys)


def _run_all(workspace: dict, db: str, capsys) -> None:  # type: ignore[no-untyped-def]
    with FakeAnthropicAPI(expected_key=KEY) as api:
        for run, placement in (("before", "before"), ("after", "after")):
            table = commands(workspace, run, api.base_url)
            assert set(table) == _names()
            for name, args in table.items():
                path = name.split()
                argv = (["--json", "--db", db, "--annotator", "ana", *path, *args] if placement == "before"
                        else [*path, *args, "--db", db, "--json", "--annotator", "ana"])
                capsys.readouterr()
                rc = main(argv)
                captured = capsys.readouterr()
                assert rc == 0, f"aglw {' '.join(argv)}: exit {rc}: {captured.err}"
                try:
                    json.loads(captured.out)
                except json.JSONDecodeError as exc:
                    pytest.fail(f"aglw {' '.join(argv)}: stdout is not one JSON value ({exc}): {captured.out[:300]!r}")
