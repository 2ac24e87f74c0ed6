"""`aglw judge --dry-run` says once why clips are skipped, with the count; -v lists them (issue 30)."""

from __future__ import annotations

from cli.main import main
from storage import open_store
from tests.storage.test_curation_selection_export import project


def test_skipped_clips_are_one_summary_line_and_verbose_lists_them(sqlite_path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = open_store(sqlite_path)
    ids = project(store)
    store.dispose()
    db = str(sqlite_path)
    capsys.readouterr()
    assert main(["--db", db, "judge", "--dry-run"]) == 0
    err = capsys.readouterr().err
    skipped = [line for line in err.splitlines() if "skipped" in line]
    assert len(skipped) == 1, err
    assert skipped[0].startswith(f"skipped {len(ids)} clip(s): ") and f"({len(ids)})" in skipped[0]
    assert "-v lists them" in skipped[0]
    assert main(["--db", db, "-v", "judge", "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert sum(1 for line in err.splitlines() if line.strip().startswith("skipped ") and ":" in line) == 1 + len(ids)
    assert all(f"skipped {key}:" in err for key in ids)
