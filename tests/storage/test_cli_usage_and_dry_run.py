"""Usage errors exit 2 on every subcommand, and every --dry-run writes nothing (cli.md, issue [N]).

Both tables are checked against the command tree (:mod:`cli.registry` loads every module): a
new command needs an entry here, so the contract cannot be skipped by adding one.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cli.main import main
from tests.storage.test_cli_json_everywhere import leaf_commands
from tests.cli_helpers import command_tree

ALM = "DEMO-ALM (synthetic reasoning)"
# screenshot renders the window offscreen, where Qt says this once per window
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from workbench.demo import create_demo_project

    root = tmp_path_factory.mktemp("usage")
    project = create_demo_project(root / "demo")
    tone = root / "tone.wav"
    t = np.arange(16_000) / 16_000
    sf.write(tone, np.stack([np.sin(2 * np.pi * 440 * t)] * 2, axis=1), 16_000)
    ratings = root / "ratings.csv"
    ratings.write_text("unit,rater,value\n" + "".join(f"u{u},r{r},{(u + r) % 3}\n" for u in range(8) for r in range(3)))
    events = root / "DEMO-0004.csv"
    events.write_text("0,1,0,30,0\n1,1,0,32,0\n")
    return {"root": root, "db": project.db_path, "tone": tone, "ratings": ratings, "events": events}


def bad_choices(d: dict[str, Path]) -> dict[str, list[str] | None]:
    """Per command: its required arguments plus one option given a value outside its fixed set
    (None: the command has no option with a fixed set of values)."""
    out = d["root"] / "out"
    return {
        "metrics": ["--model", ALM, "--profile", "bogus"],
        "leaderboard": ["--by", "country"],
        "compare": ["--models", f"{ALM},{ALM}", "--profile", "bogus"],
        "export dataset": [str(out / "hf"), "--format", "bogus"],
        "analyze": [str(d["tone"]), "--layout", "bogus"],
        "direction": [str(d["tone"]), "--layout", "bogus"],
        "analyze-pool": ["--engine", "bogus"],
        "tag": ["--device", "bogus"],
        "tag-file": [str(d["tone"]), "--device", "bogus"],
        "fit": ["--rollup", "bogus"],
        "agreement": ["--ratings", str(d["ratings"]), "--level", "bogus"],
        "screenshot": ["--clip", "DEMO-0002", "--out", str(out / "shot.png"), "--view", "bogus"],
        "label set": ["--clip", "DEMO-0001", "--category", "/m/09x0r", "--effect", "bogus"],
        "label clip": ["--clip", "DEMO-0001", "--decision", "bogus"],
        "label polarity": ["--category", "/m/09x0r", "--polarity", "bogus"],
        "judge": ["--mode", "bogus"],
        "alm run": ["--model", "m", "--provider", "bogus"],
        "study alt-test": ["--ratings", str(d["ratings"]), "--llm", "r0", "--metric", "bogus"],
        "study error-modes": ["--kind", "bogus"],
        "study localizers": ["--profile", "bogus"],
        "study web": ["crowd-u", "--clips", "all", "--mode", "bogus"],
        "events import": [str(d["events"]), "--clip", "DEMO-0004", "--format", "bogus"],
        "events export": [str(out / "ev.csv"), "--clip", "DEMO-0004", "--format", "bogus"],
        "quality overrule": ["--clip", "DEMO-0001", "--flag", "bogus"],
        "quality restore": ["--clip", "DEMO-0001", "--flag", "bogus"],
        "import dataset": [str(d["root"] / "ds.csv"), "--format", "bogus"],
        "export selection": [str(out / "sel.csv"), "--format", "bogus"],
        **dict.fromkeys([
            "import predictions", "fetch-audio", "select", "export predictions",
            "check locations", "gui", "demo", "clips list", "clips show", "media link", "judgments show",
            "label history", "judge models", "study sensitivity", "study error-mode", "study report",
            "study judge-error-modes", "study plan", "study progress", "study guess", "events eval", "events qa",
            "events score-qa", "study invite", "study participants", "serve"]),
    }


def _run(db: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["--db", str(db), "--annotator", "ana", *argv])
    return rc, capsys.readouterr().err


def test_every_command_has_a_usage_entry(demo) -> None:  # type: ignore[no-untyped-def]
    assert set(bad_choices(demo)) >= leaf_commands() - {"quality overrule", "quality restore"}
    assert set(bad_choices(demo)) <= leaf_commands() | {"quality overrule", "quality restore"}


def test_an_unknown_option_exits_2_on_every_command(demo, capsys) -> None:  # type: ignore[no-untyped-def]
    wrong = {}
    for command in sorted(leaf_commands()):
        rc, err = _run(demo["db"], [*command.split(), "--no-such-option"], capsys)
        if rc != 2 or "--no-such-option" not in err:
            wrong[command] = (rc, err.strip()[-200:])
    assert not wrong, "\n".join(f"{c}: exit {rc}: {e}" for c, (rc, e) in wrong.items())


def test_a_value_outside_an_options_choices_exits_2(demo, capsys) -> None:  # type: ignore[no-untyped-def]
    (demo["root"] / "out").mkdir(exist_ok=True)
    wrong = {}
    for command, argv in sorted(bad_choices(demo).items()):
        if argv is None or command not in leaf_commands():
            continue
        rc, err = _run(demo["db"], [*command.split(), *argv], capsys)
        option = argv[argv.index("bogus") - 1] if "bogus" in argv else argv[-2]
        if rc != 2 or option not in err:
            wrong[command] = (rc, err.strip()[-300:])
    assert not wrong, "\n".join(f"{c}: exit {rc}: {e}" for c, (rc, e) in wrong.items())


def malformed_values(d: dict[str, Path]) -> list[tuple[list[str], str]]:
    """An option's value that is malformed or out of range, or options that do not go together,
    with the word the one-line error must name (issue 40: these exited 1)."""
    out, tone = d["root"] / "out", str(d["tone"])
    shot = ["screenshot", "--clip", "DEMO-0002", "--out", str(out / "shot.png")]
    return [
        (["import", "dataset", str(d["root"] / "ds.csv"), "--format", "agl1"], "--format"),
        (["import", "dataset", str(d["root"] / "ds.csv"), "--mapping", str(d["ratings"])], "--mapping"),
        ([*shot, "--size", "12x"], "--size"),
        ([*shot, "--size", "100x100"], "--size"),
        (["fit", "--what-if", "bogus"], "--what-if"),
        (["fit", "--what-if", "/m/09x0r=N"], "--preview"),
        (["fit", "--gamma", "-1"], "gamma"),
        (["agreement"], "--ratings"),
        (["agreement", "--out", str(out / "bundle"), "--ratings", str(d["ratings"])], "--ratings"),
        (["fetch-audio", "--clips", "all,DEMO-0001"], "--clips"),
        (["tag-file", tone, "--model", "mn10_as", "--checkpoint", tone, "--arch", "mn10"], "--checkpoint"),
        (["tag-file", tone, "--checkpoint", tone], "--arch"),
        (["tag-file", tone, "--arch", "mn10"], "--arch"),
        (["alm", "run", "--model", " ", "--provider", "openai-compatible"], "--model"),
        (["study", "alt-test", "--ratings", str(d["ratings"])], "--llm"),
        (["study", "error-mode", "--clip", "DEMO-0001", "--alm", ALM], "--modes"),
        (["study", "report", "--out", str(out / "report"), "--bootstrap", "-1"], "--bootstrap"),
        # checked where the option's value is used (workbench.errors.UsageError)
        (["alm", "run", "--model", "m", "--provider", "openai", "--mode", "batch"], "--mode batch"),
        (["alm", "run", "--model", "m", "--provider", "openai-compatible"], "--base-url"),
        (["alm", "run", "--model", "m", "--provider", "openai", "--engine", "ray"], "--engine"),
        (["agreement", "--out", str(out / "bundle"), "--bootstrap", "-1"], "--bootstrap"),
        (["study", "alt-test", "--ratings", str(d["ratings"]), "--llm", "r0", "--epsilon", "2"], "--epsilon"),
        (["study", "alt-test", "--ratings", str(d["ratings"]), "--llm", "r0", "--alpha", "0"], "--alpha"),
        (["analyze-pool", "--folder", str(d["root"]), "--clips", "DEMO-0001"], "--clips"),
        (["export", "dataset", str(out / "hf"), "--clips", "DEMO-0001", "--selection", "latest"], "--selection"),
        (["compare", "--models", f"{ALM},{ALM}"], "--models"),
    ]


def test_a_malformed_option_value_or_combination_exits_2(demo, capsys) -> None:  # type: ignore[no-untyped-def]
    (demo["root"] / "out").mkdir(exist_ok=True)
    before = hashlib.sha256(demo["db"].read_bytes()).hexdigest()
    wrong = {}
    for argv, word in malformed_values(demo):
        rc, err = _run(demo["db"], argv, capsys)
        if rc != 2 or word not in err or len(err.strip().splitlines()) != 1:
            wrong[" ".join(argv)] = (rc, err.strip()[-300:])
    assert not wrong, "\n".join(f"{c}: exit {rc}: {e}" for c, (rc, e) in wrong.items())
    assert hashlib.sha256(demo["db"].read_bytes()).hexdigest() == before
    assert not list((demo["root"] / "out").iterdir())


# ------------------------------------------------------------------------------- dry runs


def _tree(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` with a digest of its bytes (a missing folder is empty)."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def dry_runs(d: dict[str, Path]) -> dict[str, list[str]]:
    from tests.storage.test_import_dataset import clip_row, write_csv
    from tests.storage.test_import_predictions import HAND_RECORDS, write_jsonl

    folder = d["root"] / "dry"
    folder.mkdir(exist_ok=True)
    return {
        "import dataset": ["--format", "agl1k", str(write_csv(folder / "extra.csv", [clip_row(1), clip_row(2)])),
                           "--name", "extra", "--media-root", str(folder)],
        "import predictions": ["--model", "alm-dry", str(write_jsonl(folder / "alm.jsonl", HAND_RECORDS[:2]))],
        "media link": ["--root", str(folder)],
        "judge": ["--alm", ALM],
        "alm run": ["--model", "alm-dry-run", "--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1",
                    "--api-model", "fake-audio-model", "--clips", "DEMO-0001"],
        "events import": [str(d["events"]), "--clip", "DEMO-0004"],
    }


def _with_dry_run() -> set[str]:
    found: set[str] = set()

    def walk(command, path: list[str]) -> None:  # type: ignore[no-untyped-def]
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])
        if any("--dry-run" in getattr(p, "opts", ()) for p in getattr(command, "params", ())):
            found.add(" ".join(path))

    walk(command_tree(), [])
    return found


def test_every_dry_run_leaves_config_cache_and_project_unchanged(demo, capsys) -> None:  # type: ignore[no-untyped-def]
    table = dry_runs(demo)
    assert set(table) == _with_dry_run()
    config, cache = Path(os.environ["AGLW_CONFIG_DIR"]), Path(os.environ["AGLW_CACHE_DIR"])
    for command, argv in table.items():
        before = (_tree(config), _tree(cache), hashlib.sha256(demo["db"].read_bytes()).hexdigest())
        rc, err = _run(demo["db"], [*command.split(), *argv, "--dry-run"], capsys)
        assert rc == 0, f"{command}: {err}"
        after = (_tree(config), _tree(cache), hashlib.sha256(demo["db"].read_bytes()).hexdigest())
        assert after == before, f"aglw {command} --dry-run wrote something"
