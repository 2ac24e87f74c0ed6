"""Expert labels: validation, per-annotator rows, append-only history, undo/redo, failed writes."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest
from sqlmodel import select

from storage import open_store
from storage.models import Clip, Dataset, LabelHistory
from workbench.commands import CommandStack, SetCategoryLabel, SetCategoryPolarity, SetClipLabel, WriteFailed
from workbench.errors import InputError
from workbench.labels import UNSET, LabelService

SPEECH = "/m/09x0r"


def _clips(store, n: int = 2) -> list[int]:
    with store.write() as s:
        ds = Dataset(name="t")
        s.add(ds)
        s.flush()
        clips = [Clip(dataset_id=ds.id, key=f"clip_{i}") for i in range(n)]
        s.add_all(clips)
        s.flush()
        return [c.id for c in clips]


def test_set_and_read_back_with_history(any_store) -> None:
    clip_a, _ = _clips(any_store)
    svc = LabelService(any_store)
    ana = svc.ensure_annotator("ana")
    assert svc.ensure_annotator("ana") == ana  # idempotent

    first = svc.set_category_label(ana.id, clip_a, SPEECH, contribution=3, effect="helped")
    assert first.old == {"contribution": None, "effect": None}
    second = svc.set_category_label(ana.id, clip_a, SPEECH, contribution=1)
    assert second.old == {"contribution": 3} and second.new == {"contribution": 1}

    [label] = svc.category_labels(clip_a)
    assert (label.contribution, label.effect, label.polarity, label.version) == (1, "helped", None, 2)
    hist = svc.history(clip_id=clip_a)
    assert [(h.field, h.old_value, h.new_value) for h in hist] == [
        ("contribution", None, 3),
        ("effect", None, "helped"),
        ("contribution", 3, 1),
    ]


def test_annotators_never_overwrite_each_other(any_store) -> None:
    clip_a, _ = _clips(any_store)
    svc = LabelService(any_store)
    ana, ben = svc.ensure_annotator("ana"), svc.ensure_annotator("ben")
    assert ana.pseudonym != ben.pseudonym and "ana" not in ana.pseudonym
    svc.set_category_label(ana.id, clip_a, SPEECH, contribution=3)
    svc.set_category_label(ben.id, clip_a, SPEECH, contribution=0)
    by_annotator = {lab.annotator_id: lab.contribution for lab in svc.category_labels(clip_a)}
    assert by_annotator == {ana.id: 3, ben.id: 0}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"contribution": 4}, "contribution must be one of 0, 1, 2, 3"),
        ({"effect": "great"}, "effect must be one of helped, misled, neutral"),
        ({"polarity": "positive"}, "polarity must be one of P, N, neutral"),
        ({}, "nothing to change"),
    ],
)
def test_invalid_category_values_are_refused_and_nothing_is_written(store, kwargs, message) -> None:
    clip_a, _ = _clips(store)
    svc = LabelService(store)
    ana = svc.ensure_annotator("ana")
    with pytest.raises(InputError, match=message):
        svc.set_category_label(ana.id, clip_a, SPEECH, **kwargs)
    assert svc.category_labels() == [] and svc.history() == []


def test_unknown_clip_and_bad_clip_values(store) -> None:
    svc = LabelService(store)
    ana = svc.ensure_annotator("ana")
    with pytest.raises(InputError, match="unknown clip id 999"):
        svc.set_clip_label(ana.id, 999, rating=3)
    clip_a, _ = _clips(store)
    with pytest.raises(InputError, match="rating must be one of 1, 2, 3, 4, 5"):
        svc.set_clip_label(ana.id, clip_a, rating=6)
    with pytest.raises(InputError, match="no clip with key 'nope'"):
        svc.clip_id_for_key("nope")


def test_commands_undo_and_redo_persist(any_store) -> None:
    clip_a, _ = _clips(any_store)
    svc = LabelService(any_store)
    ana = svc.ensure_annotator("ana")
    stack = CommandStack()
    stack.push(SetCategoryLabel(svc, ana.id, clip_a, SPEECH, contribution=2, effect="misled"))
    stack.push(SetCategoryLabel(svc, ana.id, clip_a, SPEECH, contribution=3))
    stack.push(SetClipLabel(svc, ana.id, clip_a, rating=4, decision="accept"))
    stack.push(SetCategoryPolarity(svc, ana.id, SPEECH, "N"))

    def db_state():
        [cat] = svc.category_labels(clip_a)
        clip = svc.clip_labels(clip_a)
        pol = svc.category_polarities()
        return cat.contribution, cat.effect, clip[0].rating if clip else None, pol[0].polarity if pol else None

    assert db_state() == (3, "misled", 4, "N")
    stack.undo()
    assert db_state() == (3, "misled", 4, None)
    stack.undo()
    assert db_state() == (3, "misled", None, None)
    stack.undo()
    assert db_state() == (2, "misled", None, None)
    stack.redo()
    assert db_state() == (3, "misled", None, None)
    actions = [h.action for h in svc.history()]
    assert actions.count("undo") == 4 and actions.count("redo") == 1  # clip undo wrote rating+decision
    # a new edit clears the redo branch
    stack.push(SetCategoryLabel(svc, ana.id, clip_a, SPEECH, effect="helped"))
    assert not stack.can_redo


def test_locked_database_keeps_edit_pending_until_retry(sqlite_path) -> None:
    store = open_store(sqlite_path, busy_timeout_s=0.2)
    clip_a, _ = _clips(store)
    svc = LabelService(store)
    ana = svc.ensure_annotator("ana")
    stack = CommandStack()
    seen: list[str | None] = []
    stack.subscribe(lambda: seen.append(stack.last_error))

    blocker = sqlite3.connect(sqlite_path, timeout=0.1)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(WriteFailed, match="database is locked"):
            stack.push(SetCategoryLabel(svc, ana.id, clip_a, SPEECH, contribution=3))
        assert len(stack.pending) == 1 and not stack.can_undo
        assert seen and "locked" in (seen[-1] or "")
        with pytest.raises(WriteFailed):
            stack.retry_pending()
    finally:
        blocker.rollback()
        blocker.close()
    assert svc.category_labels() == []
    assert stack.retry_pending() == 1
    assert [lab.contribution for lab in svc.category_labels()] == [3]
    assert stack.pending == [] and stack.last_error is None and stack.can_undo
    store.dispose()


def test_failed_undo_and_redo_stay_pending_and_retry_performs_them(sqlite_path) -> None:
    store = open_store(sqlite_path, busy_timeout_s=0.2)
    clip_a, _ = _clips(store)
    svc = LabelService(store)
    ana = svc.ensure_annotator("ana")
    stack = CommandStack()
    stack.push(SetCategoryLabel(svc, ana.id, clip_a, SPEECH, contribution=1))
    stack.push(SetCategoryLabel(svc, ana.id, clip_a, SPEECH, contribution=3))

    def contribution() -> int:
        return [lab.contribution for lab in svc.category_labels(clip_a)][0]

    def locked():  # type: ignore[no-untyped-def]
        blocker = sqlite3.connect(sqlite_path, timeout=0.1)
        blocker.execute("BEGIN EXCLUSIVE")
        return blocker

    blocker = locked()
    try:
        with pytest.raises(WriteFailed, match="could not undo .* the undo is kept; retry"):
            stack.undo()
        assert len(stack.pending) == 1 and stack.pending_action(stack.pending[0]) == "undo"
        assert not stack.can_undo and not stack.can_redo
    finally:
        blocker.rollback()
        blocker.close()
    assert contribution() == 3  # nothing written yet
    assert stack.retry_pending() == 1
    assert contribution() == 1 and stack.pending == []
    assert stack.can_redo and stack.redo_text == "set contribution=3 for " + SPEECH

    blocker = locked()
    try:
        with pytest.raises(WriteFailed, match="could not redo"):
            stack.redo()
        assert stack.pending_action(stack.pending[0]) == "redo"
    finally:
        blocker.rollback()
        blocker.close()
    assert stack.retry_pending() == 1
    assert contribution() == 3 and stack.can_undo and not stack.can_redo
    actions = [h.action for h in svc.history() if h.field == "contribution"]
    assert actions == ["do", "do", "undo", "redo"]
    store.dispose()


def test_labels_as_of_replays_history(store) -> None:
    clip_a, _ = _clips(store)
    svc = LabelService(store)
    ana = svc.ensure_annotator("ana")
    svc.set_category_label(ana.id, clip_a, SPEECH, contribution=1)
    middle = svc.history()[-1].at
    svc.set_category_label(ana.id, clip_a, SPEECH, contribution=3)
    key = ("category_label", ana.id, clip_a, SPEECH, "contribution")
    assert svc.labels_as_of(middle)[key] == 1
    assert svc.labels_as_of(middle + timedelta(days=1))[key] == 3


def test_history_is_append_only_across_writes(store) -> None:
    clip_a, _ = _clips(store)
    svc = LabelService(store)
    ana = svc.ensure_annotator("ana")
    for value in (0, 1, 2, 3, UNSET):
        if value is not UNSET:
            svc.set_category_label(ana.id, clip_a, SPEECH, contribution=value)
    with store.session() as s:
        rows = s.exec(select(LabelHistory).order_by(LabelHistory.id)).all()
    assert [r.new_value for r in rows] == ["0", "1", "2", "3"]
    assert [r.old_value for r in rows] == [None, "0", "1", "2"]
