"""A mistyped --db is an error, dry runs write nothing, a failed first import leaves no file."""

from __future__ import annotations

import json
from pathlib import Path

from cli.main import main

CSV = (
    "key,short_key,longitude,latitude,altitude,description,title,mp3name,mp3seconds,city,country,continent,"
    "human_sounds,animal,music,natural_sounds,channel_environment_and_background,sounds_of_things,"
    "source_ambiguous_sounds\n"
    "k1,1,2.35,48.85,35.0,desc,Paris - street,a.mp3,10.0,Paris,France,Europe,1,0,0,0,1,1,0,0\n"
)


def _csv(tmp_path: Path) -> Path:
    path = tmp_path / "ds.csv"
    path.write_text(CSV, encoding="utf-8")
    return path


def test_a_missing_project_is_an_error_for_commands_that_do_not_create_one(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    typo = tmp_path / "agl1k.sqltie"
    for argv in (["metrics", "--model", "m"], ["leaderboard"], ["label", "history"], ["fit"], ["check", "locations"]):
        assert main(["--db", str(typo), *argv]) == 1, argv
        err = capsys.readouterr().err
        assert f"no project at {typo}" in err and "aglw import dataset" in err, err
        assert len(err.strip().splitlines()) == 1
    assert not typo.exists()


def test_dry_runs_create_no_file_and_a_failed_first_import_leaves_none(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "new.sqlite"
    csv = _csv(tmp_path)
    assert main(["--db", str(db), "--json", "import", "dataset", str(csv), "--dry-run"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run"] is True
    assert not db.exists() and not list(tmp_path.glob("new.sqlite*"))

    assert main(["--db", str(db), "import", "dataset", str(csv), "--media-root", str(tmp_path / "nope")]) == 1
    assert "not a folder" in capsys.readouterr().err
    assert not list(tmp_path.glob("new.sqlite*"))

    assert main(["--db", str(db), "import", "dataset", str(csv)]) == 0
    assert db.exists()
    size = db.stat().st_size
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"question_id": "k1", "predicted_latitude": 48.0, "predicted_longitude": 2.0,
                                 "predicted_city": "Paris", "predicted_country": "France",
                                 "predicted_continent": "Europe"}) + "\n", encoding="utf-8")
    assert main(["--db", str(db), "import", "predictions", "--model", "m", str(preds), "--dry-run"]) == 0
    assert main(["--db", str(tmp_path / "other.sqlite"), "import", "predictions", "--model", "m", str(preds)]) == 1
    assert "no project at" in capsys.readouterr().err and not (tmp_path / "other.sqlite").exists()
    assert db.stat().st_size == size


def test_results_go_to_stdout_and_diagnostics_to_stderr(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "p.sqlite"
    assert main(["--db", str(db), "import", "dataset", str(_csv(tmp_path))]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "check", "locations"]) == 0
    captured = capsys.readouterr()
    assert "1 clips checked" in captured.out and "clips checked" not in captured.err
