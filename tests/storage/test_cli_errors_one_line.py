"""Every handled error is one line on stderr, with --json also one JSON object on stdout; a --db
that is not an SQLite project is refused (issue 28)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from cli.main import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aglw: error: "), err
    return lines[0]


@pytest.mark.parametrize("argv,code", [
    (["clips", "list"], 1),  # no project at the --db path
    (["clips", "list", "--limit", "x"], 2),  # a usage error
    (["clips", "lis"], 2),
])
def test_a_handled_error_is_one_line_and_with_json_one_object(capsys, tmp_path: Path, argv, code) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "missing.sqlite")
    rc, out, err = _run(capsys, "--db", db, *argv)
    assert rc == code and out == ""
    line = _one_error_line(err)
    rc, out, err = _run(capsys, "--db", db, "--json", *argv)
    assert rc == code
    assert _one_error_line(err) == line
    payload = json.loads(out)
    assert payload == {"error": line.removeprefix("aglw: error: "), "exit_code": code}


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_postgresql_refusing_the_connection_is_one_line(capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    url = f"postgresql+psycopg://nobody@127.0.0.1:{_closed_port()}/test"
    rc, out, err = _run(capsys, "--db", url, "--json", "clips", "list")
    assert rc == 1
    line = _one_error_line(err)
    assert "refused" in line.lower() and "Is the server running" in line
    assert json.loads(out)["exit_code"] == 1


@pytest.mark.parametrize("content", [b"", b"my notes\n", b"\x00" * 4096])
@pytest.mark.parametrize("argv", [["media", "link"], ["clips", "list"], ["label", "history"]])
def test_a_db_that_is_not_an_sqlite_project_is_refused_and_left_alone(capsys, tmp_path: Path, content, argv) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    rc, _, err = _run(capsys, "--db", str(notes), *argv)
    assert rc == 1
    line = _one_error_line(err)
    assert str(notes) in line and "not an AGL Workbench project" in line
    assert notes.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_creating_command_refuses_an_existing_file_that_is_not_a_project(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"")
    table = tmp_path / "agl1k.csv"
    table.write_text("key\n", encoding="utf-8")
    rc, _, err = _run(capsys, "--db", str(notes), "import", "dataset", "--format", "agl1k", str(table))
    assert rc == 1 and "not an AGL Workbench project" in _one_error_line(err)
    assert notes.read_bytes() == b""


def test_an_unknown_model_gets_its_error_alone_not_a_profile_note(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`metrics --model` with a model the project lacks used to say "profile iso: the dataset has no
    AGL1K continent labels" first: a note about a dataset it never found."""
    from workbench.demo import create_demo_project

    db = str(create_demo_project(tmp_path / "demo").db_path)
    rc, out, err = _run(capsys, "--db", db, "--json", "metrics", "--model", "nobody")
    assert rc == 1
    assert "nobody" in _one_error_line(err)
    assert json.loads(out)["exit_code"] == 1
