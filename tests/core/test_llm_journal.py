"""The journal of paid replies: what is pending survives a torn write, a second run is refused, stored entries go."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from workbench.llm.journal import Journal, JournalBusy


def _store(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(sqlite_path=tmp_path / "project.sqlite", url=f"sqlite:///{tmp_path / 'project.sqlite'}")


def test_pending_entries_survive_a_torn_line_and_stored_ones_go(tmp_path: Path) -> None:
    journal = Journal.open(_store(tmp_path), "alm", "model-a", "model 'model-a'")  # type: ignore[arg-type]
    journal.append("k1", {"reply": {"text": "one"}})
    journal.append("k2", {"reply": {"text": "two"}})
    journal.append("k2", {"reply": {"text": "two again"}})
    journal.mark_stored(["k1"])
    with journal.path.open("ab") as raw:
        raw.write(b'{"k":"k3","e":{"reply":')  # a kill in the middle of a write
    assert journal.pending() == {"k2": [{"reply": {"text": "two"}}, {"reply": {"text": "two again"}}]}
    journal.close()
    assert journal.path.exists()  # compacted to what is pending
    again = Journal.open(_store(tmp_path), "alm", "model-a", "model 'model-a'")  # type: ignore[arg-type]
    assert list(again.pending()) == ["k2"]
    again.mark_stored(["k2"])
    again.close()
    assert not journal.path.exists() and not journal.path.parent.exists()  # nothing left beside the project


def test_a_second_run_of_the_same_identity_is_refused_while_the_first_lives(tmp_path: Path) -> None:
    first = Journal.open(_store(tmp_path), "judge", "opus", "judge 'opus'")  # type: ignore[arg-type]
    with pytest.raises(JournalBusy, match="another run of judge 'opus' is in progress"):
        Journal.open(_store(tmp_path), "judge", "opus", "judge 'opus'")  # type: ignore[arg-type]
    other = Journal.open(_store(tmp_path), "judge", "haiku", "judge 'haiku'")  # type: ignore[arg-type]
    other.close()
    first.close()
    Journal.open(_store(tmp_path), "judge", "opus", "judge 'opus'").close()  # type: ignore[arg-type]


def test_the_journal_lives_beside_the_project_not_in_sqlite_names(tmp_path: Path) -> None:
    journal = Journal.open(_store(tmp_path), "alm", "m", "model 'm'")  # type: ignore[arg-type]
    try:
        assert journal.path.parent == tmp_path / ".project.sqlite.answers"
        assert not list(tmp_path.glob("project.sqlite*"))  # neither SQLite's "-journal" nor a glob of the project
    finally:
        journal.close()
