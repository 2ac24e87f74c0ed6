"""Bad moments end in one line on stderr and exit 1, never a traceback; nothing is half-written."""

from __future__ import annotations

import functools
import json
import sqlite3
from pathlib import Path

import pytest

import cli.context as cli_context
from storage import open_store
from cli.main import main
from workbench.labels import LabelService

CSV = (
    "key,short_key,longitude,latitude,altitude,description,title,mp3name,mp3seconds,city,country,continent,"
    "human_sounds,animal,music,natural_sounds,channel_environment_and_background,sounds_of_things,"
    "source_ambiguous_sounds\n"
    "k1,1,2.35,48.85,35.0,desc,Paris - street,a.mp3,10.0,Paris,France,Europe,1,0,0,0,1,1,0,0\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    csv = tmp_path / "ds.csv"
    csv.write_text(CSV, encoding="utf-8")
    db = tmp_path / "p.sqlite"
    assert main(["--db", str(db), "import", "dataset", str(csv)]) == 0
    return db


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("aglw: error: ") and "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_file_that_is_not_a_database(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    text = tmp_path / "notes.sqlite"
    text.write_text("hello\n", encoding="utf-8")
    assert main(["--db", str(text), "leaderboard"]) == 1
    assert "not an AGL Workbench project" in _one_line_error(capsys)
    assert text.read_text(encoding="utf-8") == "hello\n"


def test_a_read_only_project(project: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    url = f"sqlite:///file:{project}?mode=ro&uri=true"
    assert main(["--db", url, "--annotator", "ana", "label", "clip", "--clip", "k1", "--rating", "4"]) == 1
    assert "read-only" in _one_line_error(capsys)
    with sqlite3.connect(project) as con:
        assert con.execute("select count(*) from clip_label").fetchone() == (0,)


def test_a_project_locked_longer_than_the_wait(project: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    monkeypatch.setattr(cli_context, "open_store", functools.partial(open_store, busy_timeout_s=0.2))
    LabelService(store := open_store(project)).ensure_annotator("ana")
    store.dispose()
    holder = sqlite3.connect(project, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        assert main(["--db", str(project), "--annotator", "ana", "label", "clip", "--clip", "k1", "--rating", "4"]) == 1
        assert "another program is writing" in _one_line_error(capsys)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert main(["--db", str(project), "--annotator", "ana", "label", "clip", "--clip", "k1", "--rating", "4"]) == 0


@pytest.mark.parametrize("container", ["array", "jsonl"])
def test_a_prediction_file_nested_100000_levels(project: Path, tmp_path: Path, capsys, container: str) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / f"deep.{container}"
    body = deep if container == "array" else json.dumps({"question_id": "k1"})[:-1] + ', "x": ' + deep + "}"
    path.write_text(body + "\n", encoding="utf-8")
    assert main(["--db", str(project), "import", "predictions", "--model", "m", str(path)]) == 1
    err = _one_line_error(capsys)
    assert str(path) in err and "line 1" in err and "nested too deeply" in err
