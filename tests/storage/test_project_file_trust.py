"""A file that is not a project is refused untouched; a read-only project is read read-only (issue 40).

The foreign files are checked by hash: not one byte (journal mode included) changes before the
refusal. A read-only project is a file (0444) in a folder (0555) that the command may not write:
the commands run in a child process, which as root runs without CAP_DAC_OVERRIDE (root may
otherwise write whatever the permissions say).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.main import main
from storage import open_store
from storage.errors import StoreError
from tests.storage.test_cli_project_file import _csv

REPO_ROOT = Path(__file__).resolve().parents[2]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _foreign_sqlite(path: Path, journal_mode: str = "delete") -> Path:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode={journal_mode}")
    conn.execute("CREATE TABLE notes (x TEXT)")
    conn.execute("INSERT INTO notes VALUES ('hi')")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_a_foreign_sqlite_file_is_refused_byte_identical(tmp_path: Path, capsys, journal_mode: str) -> None:  # type: ignore[no-untyped-def]
    other = _foreign_sqlite(tmp_path / "other.sqlite", journal_mode)
    before = _digest(other)
    assert main(["--db", str(other), "clips", "list"]) == 1
    err = capsys.readouterr().err
    assert "holds tables (notes" in err and "not an AGL Workbench project" in err, err
    assert len(err.strip().splitlines()) == 1
    assert _digest(other) == before
    assert other.read_bytes()[18:20] == (b"\x01\x01" if journal_mode == "delete" else b"\x02\x02")  # its journal mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]  # no -wal, -shm or backup
    with pytest.raises(StoreError, match="not an AGL Workbench project"):
        open_store(other)
    assert _digest(other) == before


def test_a_file_that_is_not_sqlite_is_refused_byte_identical(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n", encoding="utf-8")
    before = _digest(notes)
    assert main(["--db", str(notes), "clips", "list"]) == 1
    err = capsys.readouterr().err
    assert "not an SQLite database" in err and len(err.strip().splitlines()) == 1, err
    assert _digest(notes) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


# ------------------------------------------------------------------------------ read-only projects


@pytest.fixture
def read_only_project(tmp_path: Path) -> Iterator[Path]:
    """A project with one clip, as a read-only file in a read-only folder (a read-only mount as a
    user sees it)."""
    db_dir = tmp_path / "mount"
    db_dir.mkdir()
    db = db_dir / "project.sqlite"
    assert main(["--db", str(db), "import", "dataset", str(_csv(tmp_path))]) == 0
    assert sorted(p.name for p in db_dir.iterdir()) == ["project.sqlite"]  # WAL folded in on close
    os.chmod(db, 0o444)
    os.chmod(db_dir, 0o555)
    try:
        yield db
    finally:
        os.chmod(db_dir, 0o755)
        os.chmod(db, 0o644)


def _aglw_unprivileged(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``aglw argv`` in a child process that file permissions apply to: as root, one without
    CAP_DAC_OVERRIDE (it may still read and search everything, but writes only where the mode
    bits let its owner write)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv (util-linux): file permissions cannot be applied")
        prefix = [setpriv, "--bounding-set=-dac_override", "--inh-caps=-dac_override"]
    home = tmp_path / "home"
    env = {**os.environ, "AGLW_CONFIG_DIR": str(home / "config"), "AGLW_CACHE_DIR": str(home / "cache"),
           "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([*prefix, sys.executable, "-m", "cli.main", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_child_process_cannot_write_there(read_only_project: Path, tmp_path: Path) -> None:
    """The premise of the tests below: the child is refused a write into the read-only folder."""
    probe = _aglw_unprivileged(tmp_path, "--db", str(read_only_project.parent / "new.sqlite"), "import",
                               "dataset", str(tmp_path / "ds.csv"))
    assert probe.returncode == 1, probe.stderr
    assert not (read_only_project.parent / "new.sqlite").exists()


def test_read_commands_read_a_read_only_project(read_only_project: Path, tmp_path: Path) -> None:
    before = _digest(read_only_project)
    listed = _aglw_unprivileged(tmp_path, "--db", str(read_only_project), "--json", "clips", "list")
    assert listed.returncode == 0, listed.stderr
    assert '"k1"' in listed.stdout
    shown = _aglw_unprivileged(tmp_path, "--db", str(read_only_project), "clips", "show", "k1")
    assert shown.returncode == 0, shown.stderr
    assert _digest(read_only_project) == before
    assert sorted(p.name for p in read_only_project.parent.iterdir()) == ["project.sqlite"]


def test_a_write_command_on_a_read_only_project_fails_with_one_line(read_only_project: Path, tmp_path: Path) -> None:
    before = _digest(read_only_project)
    result = _aglw_unprivileged(tmp_path, "--db", str(read_only_project), "--annotator", "ana",
                                "label", "clip", "--clip", "k1", "--rating", "4")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "read-only" in lines[0] and str(read_only_project) in lines[0], lines[0]
    assert _digest(read_only_project) == before


def test_a_store_opened_read_only_refuses_writes(tmp_path: Path) -> None:
    """What a read-only project does, checked in this process whoever runs it: ``read_only``
    forces the read-only open that an unwritable file or folder gets."""
    from storage.models import Annotator

    db = tmp_path / "project.sqlite"
    open_store(db).dispose()
    before = _digest(db)
    store = open_store(db, read_only=True)
    try:
        assert store.read_only
        with store.read() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM clip").scalar() == 0
        with pytest.raises(StoreError, match="read-only"):
            with store.write() as s:
                s.add(Annotator(name="ana", pseudonym="A1"))
        # beneath the store, SQLite itself refuses too
        from sqlalchemy.exc import OperationalError

        with pytest.raises(OperationalError, match="readonly"), store.engine.begin() as conn:
            conn.exec_driver_sql("INSERT INTO annotator (name, pseudonym, role) VALUES ('b', 'B', 'x')")
    finally:
        store.dispose()
    assert _digest(db) == before
