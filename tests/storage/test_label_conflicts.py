"""Optimistic concurrency of expert labels: a write based on a version that has moved on is
refused with both values; nothing is overwritten and the history stays complete.

Two windows, two processes, one annotator: the second save must not silently replace the first.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from storage import open_store
from storage.errors import ConflictError
from storage.models import Clip, Dataset
from workbench.commands import CommandStack, SetCategoryLabel, SetCategoryPolarity, SetClipLabel
from workbench.labels import LabelService

CAT = "/m/09x0r"


def _clip(store) -> int:  # type: ignore[no-untyped-def]
    with store.write() as s:
        ds = Dataset(name="t")
        s.add(ds)
        s.flush()
        clip = Clip(dataset_id=ds.id, key="aporee_1_2")
        s.add(clip)
        s.flush()
        return int(clip.id)


def test_a_second_window_based_on_an_old_version_is_refused_with_both_values(any_store) -> None:
    clip_id = _clip(any_store)
    svc = LabelService(any_store)
    ana = svc.ensure_annotator("ana")
    first, second = CommandStack(), CommandStack()  # two windows, same annotator, both saw "no label"
    first.push(SetCategoryLabel(svc, ana.id, clip_id, CAT, base_version=0, contribution=2))
    with pytest.raises(ConflictError) as caught:
        second.push(SetCategoryLabel(svc, ana.id, clip_id, CAT, base_version=0, contribution=3))
    assert caught.value.stored == {"contribution": 2} and caught.value.yours == {"contribution": 3}
    assert caught.value.stored_version == 1
    assert "contribution=2" in str(caught.value) and "contribution=3" in str(caught.value)
    [label] = svc.category_labels()
    assert (label.contribution, label.version) == (2, 1)
    assert not second.can_undo and not second.pending  # the refused edit is not in its history
    # after reloading (version 1) the second window's edit goes through
    second.push(SetCategoryLabel(svc, ana.id, clip_id, CAT, base_version=1, contribution=3))
    assert [(h.old_value, h.new_value) for h in svc.history(clip_id=clip_id)] == [(None, 2), (2, 3)]


def test_undo_after_another_window_changed_the_label_is_refused(any_store) -> None:
    clip_id = _clip(any_store)
    svc = LabelService(any_store)
    ana = svc.ensure_annotator("ana")
    mine, theirs = CommandStack(), CommandStack()
    mine.push(SetClipLabel(svc, ana.id, clip_id, base_version=0, rating=2))
    theirs.push(SetClipLabel(svc, ana.id, clip_id, base_version=1, rating=5))
    with pytest.raises(ConflictError) as caught:
        mine.undo()  # would put back "empty" over their 5
    assert caught.value.stored == {"rating": 5} and caught.value.yours == {"rating": None}
    [label] = svc.clip_labels()
    assert label.rating == 5
    assert mine.can_undo  # still in the history: nothing happened
    # their own undo is still fine, and then redo
    theirs.undo()
    theirs.redo()
    assert svc.clip_labels()[0].rating == 5
    assert [h.action for h in svc.history(clip_id=clip_id)] == ["do", "do", "undo", "redo"]


def test_one_window_editing_one_row_twice_undoes_and_redoes_cleanly(any_store) -> None:
    """Several commands of one stack on the same row: each undo expects the version the stack left."""
    clip_id = _clip(any_store)
    svc = LabelService(any_store)
    ana = svc.ensure_annotator("ana")
    stack = CommandStack()
    stack.push(SetCategoryLabel(svc, ana.id, clip_id, CAT, base_version=0, contribution=3))
    stack.push(SetCategoryLabel(svc, ana.id, clip_id, CAT, base_version=1, effect="helped"))
    stack.push(SetCategoryPolarity(svc, ana.id, CAT, "N", base_version=0))
    for _ in range(3):
        stack.undo()
    assert svc.category_labels()[0].contribution is None and svc.category_polarities()[0].polarity is None
    for _ in range(3):
        stack.redo()
    [label] = svc.category_labels()
    assert (label.contribution, label.effect) == (3, "helped")


def test_an_edit_without_a_base_version_still_writes(store) -> None:
    """One-off edits (a CLI call without --expect-version) keep last-writer-wins, recorded in history."""
    clip_id = _clip(store)
    svc = LabelService(store)
    ana = svc.ensure_annotator("ana")
    svc.set_category_label(ana.id, clip_id, CAT, contribution=1)
    change = svc.set_category_label(ana.id, clip_id, CAT, contribution=2)
    assert change.version == 2 and change.old == {"contribution": 1}


def _aglw(db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", "--db", db, "--annotator", "ana", *args],
        capture_output=True, text=True, timeout=120,
    )


def _two_processes_on(db: str, store) -> None:  # type: ignore[no-untyped-def]
    """Both processes read version 0 and save; the second is refused, the first's value stays."""
    label = ["label", "set", "--clip", "aporee_1_2", "--category", CAT, "--expect-version", "0"]
    first = _aglw(db, "--json", *label, "--contribution", "2")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["version"] == 1
    second = _aglw(db, *label, "--contribution", "3")
    assert second.returncode == 1
    err = second.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "clip aporee_1_2, category /m/09x0r" in err and "contribution=2" in err and "contribution=3" in err
    assert second.stdout == ""
    svc = LabelService(store)
    [row] = svc.category_labels()
    assert (row.contribution, row.version) == (2, 1)
    # the person reads the version and retries on purpose: accepted, and the history has both
    third = _aglw(db, *label[:-1], "1", "--contribution", "3")
    assert third.returncode == 0, third.stderr
    history = _aglw(db, "--json", "label", "history", "--clip", "aporee_1_2")
    rows = json.loads(history.stdout)
    assert [(r["old"], r["new"]) for r in rows] == [(None, 2), (2, 3)]
    assert {r["clip"] for r in rows} == {"aporee_1_2"}


def test_two_processes_on_one_sqlite_project(sqlite_path: Path, store) -> None:  # type: ignore[no-untyped-def]
    _clip(store)
    _two_processes_on(str(sqlite_path), store)


@pytest.mark.postgres
def test_two_processes_on_one_team_project(pg_url: str) -> None:
    store = open_store(pg_url)
    try:
        _clip(store)
        _two_processes_on(pg_url, store)
    finally:
        store.dispose()
