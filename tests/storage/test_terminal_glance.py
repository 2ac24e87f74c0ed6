"""The terminal, publishable at a glance (issue 39): differences in percentage points with a paired
interval for every metric, every number of a text output through workbench/formatting.py, names
never cut at any width, quiet stderr on success."""

from __future__ import annotations

import re

import pytest

from cli.main import main
from tests.cli_helpers import run_json
from tests.storage.test_leaderboard_counting import CLIPS, PARIS, make_project
from workbench import formatting


@pytest.fixture
def db(sqlite_path, tmp_path):  # type: ignore[no-untyped-def]
    return make_project(sqlite_path, tmp_path)


def test_a_difference_reads_in_its_kind_with_a_sign() -> None:
    assert formatting.difference(0.151, "accuracy") == "+15.1 pp"
    assert formatting.difference(-0.02, "accuracy") == "-2.0 pp"
    assert formatting.difference(0.0, "accuracy") == "0.0 pp"
    assert formatting.difference(-1e-9, "accuracy") == "0.0 pp"  # never "-0.0 pp"
    assert formatting.difference(-2733.4, "km") == "-2,733 km"
    assert formatting.difference(1245.2, "score") == "+1,245"
    assert formatting.difference(None, "accuracy") == formatting.MISSING
    assert formatting.metric_difference("city_acc", 0.151) == "+15.1 pp"
    assert formatting.metric_difference("within_10km", -0.5) == "-50.0 pp"
    assert formatting.metric_difference("distance_error_km", 412.0) == "+412 km"
    assert formatting.coordinate(41.40338888888889) == "41.4034"
    assert formatting.coordinate(-0.22) == "-0.2200"
    assert formatting.coordinate(None) == formatting.MISSING


def test_compare_gives_binary_metrics_a_paired_interval(db, capsys) -> None:  # type: ignore[no-untyped-def]
    out = run_json(capsys, "--db", db, "--json", "compare", "--models", "A,B", "--bootstrap", "1000", "--seed", "1")
    metrics = {m["metric"]: m for m in out["metrics"]}
    # city: A right on c0 only, B right on c1 only: per-clip differences +1 and -1; a resample's
    # mean is -1, 0 or +1 with chances 1/4, 1/2, 1/4, so the percentile interval is [-1, +1]
    city = metrics["city_acc"]
    assert city["test"] == "mcnemar_exact" and city["p_value"] == 1.0  # the test stays McNemar's
    assert city["ci"] == pytest.approx([-1.0, 1.0])
    assert metrics["country_acc"]["ci"] == [0.0, 0.0]  # both right on both clips
    for row in out["metrics"]:
        assert len(row["ci"]) == 2 and row["ci"][0] <= row["difference"] <= row["ci"][1], row["metric"]
    assert set(metrics["distance_error_km"]) == {"metric", "n", "a", "b", "difference", "test", "p_value", "p_holm",
                                                 "ci"}


def test_compare_writes_rate_differences_in_percentage_points(db, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "200")
    capsys.readouterr()
    assert main(["--db", db, "compare", "--models", "A,B", "--metric", "city_acc,distance_error_km",
                 "--bootstrap", "1000", "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert "0.0 pp [-100.0 pp, +100.0 pp]" in text
    assert "percentage points" in text
    row = next(line for line in text.splitlines() if "city acc." in line)
    assert " pp" in row and row.count("%") == 2  # only A's and B's accuracies are percentages


# Numbers a reader reads: never more than the formatter's digits (the coordinates' four).
LONG_DECIMAL = re.compile(r"\d+\.\d{5,}")


def test_text_outputs_print_numbers_through_the_formatter(db, tmp_path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store
    from tests.storage.test_leaderboard_counting import answer, write
    from workbench.importing import import_predictions

    store = open_store(db)  # a model whose coordinates carry every digit a float has
    import_predictions(store, "C", write(tmp_path / "c.jsonl", [
        answer("c3", -0.22001111111111, -78.51002222222222, "Quito", "Ecuador", "South America")]))
    store.dispose()
    monkeypatch.setenv("COLUMNS", "200")
    for key, (lat, lon) in (("c0", (31.510011111, -9.770022222)), ("c1", PARIS)):
        assert main(["--db", db, "--annotator", "ada", "study", "guess", "--clip", key, "--lat", str(lat),
                     "--lon", str(lon), "--confidence", "0.6"]) == 0
    commands = [["study", "localizers"], ["leaderboard"], ["leaderboard", "--ci", "--bootstrap", "50"],
                ["leaderboard", "--common"], ["metrics", "--model", "A"], ["compare", "--models", "A,B"],
                ["clips", "list"], *(["clips", "show", key] for key in CLIPS)]
    for command in commands:
        capsys.readouterr()
        assert main(["--db", db, *command]) == 0, command
        text = capsys.readouterr().out
        assert not LONG_DECIMAL.findall(text), (command, LONG_DECIMAL.findall(text))
    capsys.readouterr()
    assert main(["--db", db, "study", "localizers"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"mean distance [\d,.]+ km, GeoScore [\d,]+", text), text
    assert "0.60" in text
    assert main(["--db", db, "clips", "show", "c1"]) == 0
    assert "lat 45.7640, lon 4.8357" in capsys.readouterr().out
    assert main(["--db", db, "clips", "show", "c3"]) == 0
    assert "(-0.2200, -78.5100)" in capsys.readouterr().out


def test_screenshot_help_lists_every_view_at_80_columns(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`screenshot --help` listed its views as one word "review|curation|…|agreeme…" that rich cut."""
    from typer.testing import CliRunner

    from cli.gui_cmds import SCREENSHOT_VIEWS
    from cli.main import app

    monkeypatch.setenv("COLUMNS", "80")
    shown = CliRunner().invoke(app, ["screenshot", "--help"], prog_name="aglw").output
    assert "…" not in shown
    for view in SCREENSHOT_VIEWS:
        assert re.search(rf"(?<![\w-]){re.escape(view)}(?![\w-])", shown), view


LONG_MODELS = ("gemini-3-pro-preview-2025-11-18-with-thinking", "qwen2.5-omni-7b-instruct-awq-2025-reference")


@pytest.mark.parametrize("columns", ["80", "120", "200"])
def test_leaderboard_names_are_never_cut(db, tmp_path, capsys, monkeypatch, columns) -> None:  # type: ignore[no-untyped-def]
    """Long model names and the desktop's human rows whole at every width, both profiles, --ci."""
    import cli.context
    from storage import open_store
    from tests.storage.test_leaderboard_counting import answer, write
    from workbench.importing import import_predictions

    store = open_store(db)
    for name in LONG_MODELS:
        import_predictions(store, name, write(tmp_path / f"{name}.jsonl", [
            answer("c3", -0.22, -78.51, "Quito", "Ecuador", "South America"),
            answer("c1", *PARIS, "Paris", "France", "Europe")]))
    store.dispose()
    for who in ("ada", "grace"):
        assert main(["--db", db, "--annotator", who, "study", "guess", "--clip", "c1", "--lat", "45.7",
                     "--lon", "4.8"]) == 0
    localizers = run_json(capsys, "--db", db, "--json", "study", "localizers")["rows"]
    names = [*LONG_MODELS, "A", "B", *(r["model"] for r in localizers)]
    assert sum(n.startswith("human:") for n in names) == 2
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr(cli.context, "_CONSOLES", {})  # a console made at this width
    for args in ([], ["--ci", "--bootstrap", "50"], ["--profile", "agl1k"], ["--profile", "iso", "--ci",
                                                                              "--bootstrap", "50"]):
        capsys.readouterr()
        assert main(["--db", db, "leaderboard", *args]) == 0
        text = capsys.readouterr().out
        assert "…" not in text, args
        for name in names:
            assert name in text, (args, name)


def test_leaderboard_common_says_nothing_when_there_is_nothing(db, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """No guesses, no web study: --common prints its table and not a word on stderr."""
    monkeypatch.setenv("COLUMNS", "200")
    capsys.readouterr()
    assert main(["--db", db, "leaderboard", "--common"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "on the 2 clips every listed model answered" in captured.out


def test_leaderboard_common_without_a_common_clip_says_so(db, capsys) -> None:  # type: ignore[no-untyped-def]
    """The rows share no clip: not "no predictions imported yet", which would be false."""
    assert main(["--db", db, "--annotator", "ada", "study", "guess", "--clip", "c2", "--lat", "37.5",
                 "--lon", "127.0"]) == 0  # A and B share c0 and c1; the human row answered c2 only
    capsys.readouterr()
    assert main(["--db", db, "leaderboard", "--common"]) == 0
    err = capsys.readouterr().err
    assert "no predictions imported yet" not in err
    assert "no clip was answered by every listed row" in err


def test_analyze_prints_its_numbers_through_the_formatter(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import numpy as np
    import soundfile as sf

    signal = 0.1 * np.sin(2 * np.pi * 440 * np.arange(16_000) / 16_000)
    signal[:1] = 1.0  # one clipped sample in 16,000: a ratio of 6.25e-05, "0.00006" with five decimals
    sf.write(tmp_path / "tone.wav", signal, 16_000)
    capsys.readouterr()
    assert main(["analyze", str(tmp_path / "tone.wav")]) == 0
    text = capsys.readouterr().out
    assert not LONG_DECIMAL.findall(text), text
    assert "1.00 s, 16,000 Hz" in text and "dBFS" in text
