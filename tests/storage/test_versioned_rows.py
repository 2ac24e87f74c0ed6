"""The one versioned write behind every undoable command (workbench.versioned_rows.write_versioned):
version check, history rows, and all or nothing when any part of the write fails."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from storage.errors import ConflictError
from storage.models import Annotator, Clip, ClipLabel, Dataset, LabelHistory
from workbench.errors import InputError
from workbench.versioned_rows import FieldHistory, write_versioned


@pytest.fixture
def ids(store) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with store.write() as s:
        ds = Dataset(name="t")
        ana = Annotator(name="ana", role="expert", pseudonym="annotator-1")
        s.add_all([ds, ana])
        s.flush()
        clip = Clip(dataset_id=ds.id, key="k1")
        s.add(clip)
        s.flush()
        return int(ana.id), int(clip.id)


def _write(store, ids: tuple[int, int], values: dict[str, Any], **kwargs: Any):  # type: ignore[no-untyped-def]
    annotator_id, clip_id = ids
    return write_versioned(
        store, ClipLabel, {"annotator_id": annotator_id, "clip_id": clip_id}, values, what="this clip label",
        history=kwargs.pop("history", FieldHistory("clip_label", annotator_id, clip_id)),
        refs=((Annotator, annotator_id, "annotator"), (Clip, clip_id, "clip")), **kwargs,
    )


def _state(store) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        rows = [(r.rating, r.note, r.version) for r in s.exec(select(ClipLabel))]
        history = [(h.field, h.old_value, h.new_value, h.action, h.command_id)
                   for h in s.exec(select(LabelHistory).order_by(LabelHistory.id))]
    return rows, history


def test_writes_the_next_version_with_one_history_row_per_changed_field(store, ids) -> None:  # type: ignore[no-untyped-def]
    first = _write(store, ids, {"rating": 4, "note": "bells"}, expected_version=0, command_id="c1")
    assert (first.version, first.old, first.new) == (1, {"rating": None, "note": None}, {"rating": 4, "note": "bells"})
    # "do" leaves an unchanged field out of the history; undo records every field it writes
    second = _write(store, ids, {"rating": 5, "note": "bells"}, expected_version=1, command_id="c2")
    back = _write(store, ids, {"rating": 4, "note": "bells"}, expected_version=2, command_id="c2", action="undo")
    assert (second.version, second.old["rating"], back.version) == (2, 4, 3)
    rows, history = _state(store)
    assert rows == [(4, "bells", 3)]
    assert history == [
        ("rating", None, "4", "do", "c1"), ("note", None, json.dumps("bells"), "do", "c1"),
        ("rating", "4", "5", "do", "c2"),
        ("rating", "5", "4", "undo", "c2"), ("note", json.dumps("bells"), json.dumps("bells"), "undo", "c2"),
    ]


def test_a_stale_version_is_refused_with_both_sides_and_nothing_written(store, ids) -> None:  # type: ignore[no-untyped-def]
    _write(store, ids, {"rating": 4}, expected_version=0)
    _write(store, ids, {"rating": 2}, expected_version=1)  # another window moved the row on
    before = _state(store)
    with pytest.raises(ConflictError) as refused:
        _write(store, ids, {"rating": 5}, expected_version=1)
    assert refused.value.stored == {"rating": 2} and refused.value.yours == {"rating": 5}
    assert refused.value.stored_version == 2
    assert "this clip label was changed elsewhere" in str(refused.value) and "rating=2" in str(refused.value)
    with pytest.raises(ConflictError):  # "no row yet" is a version too
        write_versioned(store, ClipLabel, {"annotator_id": ids[0], "clip_id": ids[1]}, {"rating": 1},
                        what="this clip label", history=FieldHistory("clip_label", ids[0], ids[1]),
                        expected_version=0)
    assert _state(store) == before


def test_an_error_anywhere_in_the_write_rolls_all_of_it_back(store, ids) -> None:  # type: ignore[no-untyped-def]
    _write(store, ids, {"rating": 4}, expected_version=0)
    before = _state(store)

    def broken_history(*_args: Any) -> list[LabelHistory]:
        raise RuntimeError("disk full while writing the history")

    with pytest.raises(RuntimeError):
        _write(store, ids, {"rating": 1}, history=broken_history)

    def refuse(_row: ClipLabel, _values: dict[str, Any]) -> dict[str, Any]:
        raise InputError("not for this row")

    with pytest.raises(InputError):
        _write(store, ids, {"rating": 1}, prepare=refuse)
    with pytest.raises(InputError, match="unknown clip id 999"):
        _write(store, (ids[0], 999), {"rating": 1})
    with pytest.raises(InputError, match="no label here"):  # an update-only write: no row is created
        write_versioned(store, ClipLabel, {"annotator_id": ids[0], "clip_id": 999}, {"rating": 1},
                        what="this clip label", history=FieldHistory("clip_label", ids[0], 999),
                        missing="no label here")
    with pytest.raises(ValueError, match="unknown history action"):
        _write(store, ids, {"rating": 1}, action="replay")
    assert _state(store) == before


def test_an_insert_that_lost_a_race_is_retried_once_the_row_exists(store, ids) -> None:  # type: ignore[no-untyped-def]
    calls: list[int] = []
    history = FieldHistory("clip_label", *ids)

    def racing(row: Any, old: dict[str, Any], new: dict[str, Any], command_id: str, action: str) -> list[LabelHistory]:
        calls.append(1)
        if len(calls) == 1:
            raise IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed"))
        return history(row, old, new, command_id, action)

    written = _write(store, ids, {"rating": 3}, history=racing, command_id="c")
    assert len(calls) == 2 and written.version == 1
    rows, entries = _state(store)
    assert rows == [(3, None, 1)] and entries == [("rating", None, "3", "do", "c")]
