"""Spatial events as human labels: commands, history, undo/redo, per annotator, import all or nothing."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import inspect
from sqlmodel import select

from storage.errors import ConflictError
from storage.models import Clip, Dataset, LabelHistory, SpatialEvent
from workbench.commands import CommandStack
from workbench.errors import InputError
from workbench.events.commands import AddEvent, DeleteEvent, EditEvent
from workbench.events.model import STARSS23_CLASSES as STARSS23
from workbench.events.model import SpatialEventData
from workbench.events.service import EventService
from workbench.events.starss23 import events_to_rows, format_rows, parse_metadata_text, rows_to_events
from workbench.labels import LabelService


def _clip(store, key: str = "scene_1", duration_s: float | None = 10.0, layout: str = "ambix") -> int:
    with store.write() as s:
        ds = Dataset(name=f"d-{key}")
        s.add(ds)
        s.flush()
        clip = Clip(dataset_id=ds.id, key=key, duration_s=duration_s, layout=layout, n_channels=4)
        s.add(clip)
        s.flush()
        return int(clip.id)


def _event(**kw) -> SpatialEventData:
    base = dict(onset_s=1.0, offset_s=2.0, class_name="male speech", track=((30.0, 10.0),))
    base.update(kw)
    return SpatialEventData(**base)


def test_the_migration_creates_the_events_table(store) -> None:
    columns = {c["name"] for c in inspect(store.engine).get_columns("spatial_event")}
    assert {"uid", "annotator_id", "clip_id", "onset_s", "offset_s", "class_name", "source_index", "track",
            "distance_cm", "front_back", "confidence", "note", "deleted", "version"} <= columns


def test_a_project_from_before_the_events_is_migrated_and_the_migration_reverses(sqlite_path) -> None:
    from alembic import command

    from storage import open_store
    from storage.db import Store, _alembic_config, create_store_engine, resolve_url, run_migrations

    url = resolve_url(sqlite_path)
    old = Store(url=url, engine=create_store_engine(url))
    run_migrations(old, "0004")
    assert "spatial_event" not in inspect(old.engine).get_table_names()
    old.dispose()
    store = open_store(sqlite_path)  # backed up, then migrated to head
    assert "spatial_event" in inspect(store.engine).get_table_names()
    command.downgrade(_alembic_config(store), "0004")
    assert "spatial_event" not in inspect(store.engine).get_table_names()
    run_migrations(store, "head")
    assert "spatial_event" in inspect(store.engine).get_table_names()
    store.dispose()


def test_add_edit_delete_undo_redo_with_history(any_store) -> None:
    clip = _clip(any_store)
    ana = LabelService(any_store).ensure_annotator("ana")
    service = EventService(any_store)
    stack = CommandStack()

    add = AddEvent(service, ana.id, clip, _event())
    stack.push(add)
    [stored] = service.events(clip)
    assert stored.uid == add.uid and stored.track == ((30.0, 10.0),) and stored.annotator_id == ana.id

    stack.push(EditEvent(service, stored, track=[(45.0, 5.0)], confidence=0.8))
    [edited] = service.events(clip)
    assert edited.track == ((45.0, 5.0),) and edited.confidence == 0.8

    stack.push(DeleteEvent(service, edited))
    assert service.events(clip) == []

    stack.undo()  # the delete
    assert [e.uid for e in service.events(clip)] == [add.uid]
    stack.undo()  # the edit
    [back] = service.events(clip)
    assert back.track == ((30.0, 10.0),) and back.confidence is None
    stack.undo()  # the add
    assert service.events(clip) == []
    stack.redo()
    stack.redo()
    [again] = service.events(clip)
    assert again.uid == add.uid and again.track == ((45.0, 5.0),)

    with any_store.session() as s:
        history = s.exec(select(LabelHistory).where(LabelHistory.entity == "spatial_event")
                         .order_by(LabelHistory.id)).all()
    assert [h.action for h in history] == ["do", "do", "do", "undo", "undo", "undo", "redo", "redo"]
    assert all(h.field == f"event:{add.uid}" and h.annotator_id == ana.id for h in history)
    assert history[0].old_value is None
    assert json.loads(history[1].new_value)["track"] == [[45.0, 5.0]]


def test_events_are_per_annotator(store) -> None:
    clip = _clip(store)
    labels = LabelService(store)
    ana, ben = labels.ensure_annotator("ana"), labels.ensure_annotator("ben")
    service = EventService(store)
    CommandStack().push(AddEvent(service, ana.id, clip, _event()))
    CommandStack().push(AddEvent(service, ben.id, clip, _event(class_name="door")))
    assert [e.class_name for e in service.events(clip, ana.id)] == ["male speech"]
    assert [e.class_name for e in service.events(clip, ben.id)] == ["door"]


def test_an_edit_based_on_an_old_version_is_refused(store) -> None:
    clip = _clip(store)
    ana = LabelService(store).ensure_annotator("ana")
    service = EventService(store)
    CommandStack().push(AddEvent(service, ana.id, clip, _event()))
    [seen] = service.events(clip)
    CommandStack().push(EditEvent(service, seen, note="first"))
    with pytest.raises(ConflictError):
        CommandStack().push(EditEvent(service, seen, note="second"))  # still based on version 1
    [now] = service.events(clip)
    assert now.note == "first"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(offset_s=12.0), "past the clip's end"),
        (dict(track=((190.0, 0.0),)), "azimuth"),
        (dict(track=((10.0, 95.0),)), "elevation"),
        (dict(front_back="back"), "front/back"),
        (dict(confidence=1.5), "confidence"),
        (dict(offset_s=0.5), "not after onset"),
    ],
)
def test_bad_events_are_refused_and_nothing_is_stored(store, changes, message) -> None:
    clip = _clip(store)
    ana = LabelService(store).ensure_annotator("ana")
    service = EventService(store)
    with pytest.raises(InputError, match=message):
        CommandStack().push(AddEvent(service, ana.id, clip, _event(**changes)))
    with store.session() as s:
        assert s.exec(select(SpatialEvent)).all() == []


def test_two_channel_events_keep_the_experts_front_back_choice(store) -> None:
    clip = _clip(store, layout="binaural")
    ana = LabelService(store).ensure_annotator("ana")
    service = EventService(store)
    event = _event(direction_kind="lateral", track=((40.0, 0.0),), front_back="undecided")
    CommandStack().push(AddEvent(service, ana.id, clip, event))
    [stored] = service.events(clip)
    assert stored.world_azimuth() is None  # never a guess
    CommandStack().push(EditEvent(service, stored, front_back="back"))
    [back] = service.events(clip)
    assert back.world_azimuth() == pytest.approx(140.0)


CSV_2024 = (
    "3,1,0,-50,10,250\n4,1,0,-46,10,250\n4,8,0,120,-20,300\n4,8,1,-120,0,150\n"
    "5,1,0,-42,11,260\n5,8,1,-121,0,150\n9,12,0,5,5,90\n"
)


def test_import_then_export_is_exact(store) -> None:
    clip = _clip(store)
    ana = LabelService(store).ensure_annotator("ana")
    service = EventService(store)
    parsed = parse_metadata_text(CSV_2024, "scene_1.csv")
    uids = service.import_events(ana.id, clip, rows_to_events(parsed))
    assert len(uids) == 4
    rows, has_distance = events_to_rows(service.events(clip, ana.id))
    assert has_distance and format_rows(rows, has_distance) == CSV_2024


def test_an_import_is_all_or_nothing(store) -> None:
    clip = _clip(store, duration_s=0.8)  # 8 frames: the knock at frame 9 lies past the end
    ana = LabelService(store).ensure_annotator("ana")
    service = EventService(store)
    events = rows_to_events(parse_metadata_text(CSV_2024, "scene_1.csv"))
    with pytest.raises(InputError, match="past the clip's end"):
        service.import_events(ana.id, clip, events, source="scene_1.csv")
    assert service.events(clip) == []


def test_a_second_import_needs_replace(store) -> None:
    clip = _clip(store)
    ana = LabelService(store).ensure_annotator("ana")
    service = EventService(store)
    events = rows_to_events(parse_metadata_text(CSV_2024, "scene_1.csv"))
    service.import_events(ana.id, clip, events)
    with pytest.raises(InputError, match="--replace"):
        service.import_events(ana.id, clip, events[:1])
    service.import_events(ana.id, clip, events[:1], replace=True)
    assert len(service.events(clip)) == 1
    assert len(service.events(clip, include_deleted=True)) == 5


def _event_history(store, uid: str) -> list[LabelHistory]:
    with store.session() as s:
        return list(s.exec(select(LabelHistory).where(LabelHistory.field == f"event:{uid}")
                           .order_by(LabelHistory.id)).all())


def _shape(row: LabelHistory, version: int) -> dict:
    """A history row without what differs between two events (their ids, clips, times, command id)."""
    old, new = json.loads(row.old_value), json.loads(row.new_value)
    return {
        "entity": row.entity, "category_id": row.category_id, "action": row.action, "annotator_id": row.annotator_id,
        "keys": (list(old), list(new)),
        "changed": {k: (old[k], new[k]) for k in new if old.get(k) != new[k]}, "version": version,
    }


def test_a_replacing_import_deletes_each_old_event_as_a_single_delete_does(any_store) -> None:
    clip = _clip(any_store)
    ana = LabelService(any_store).ensure_annotator("ana")
    service = EventService(any_store)
    events = rows_to_events(parse_metadata_text(CSV_2024, "scene_1.csv"))
    # The reference: one event deleted on its own, through the write every delete command uses.
    [single] = service.import_events(ana.id, _clip(any_store, "scene_2"), events[:1])
    service.update(single, {"deleted": True})
    [reference] = _event_history(any_store, single)[1:]
    expected = _shape(reference, service.get(single).version)
    assert expected["changed"] == {"deleted": (False, True)} and expected["version"] == 2

    old = {uid: service.get(uid).version for uid in service.import_events(ana.id, clip, events)}
    new = service.import_events(ana.id, clip, events[:2], replace=True)

    import_commands = set()
    for uid, version in old.items():
        row = service.get(uid)
        assert row.extra["deleted"] and row.version == version + 1
        created, deleted = _event_history(any_store, uid)  # exactly one row for the replace
        assert _shape(deleted, row.version) == expected and deleted.clip_id == clip
        assert json.loads(deleted.old_value) == json.loads(created.new_value)
        import_commands.add(deleted.command_id)
    # One import is one command: the replaced events and the new ones share its id.
    assert import_commands == {h.command_id for uid in new for h in _event_history(any_store, uid)}
    assert len(import_commands) == 1


def test_overlapping_events_of_a_class_get_the_lowest_free_source_index(store) -> None:
    clip = _clip(store)
    ana = LabelService(store).ensure_annotator("ana")
    service = EventService(store)
    stack = CommandStack()
    for onset, offset in ((1.0, 3.0), (2.0, 4.0), (5.0, 6.0)):
        stack.push(AddEvent(service, ana.id, clip, _event(onset_s=onset, offset_s=offset, class_name="footsteps")))
    stack.push(AddEvent(service, ana.id, clip, _event(onset_s=2.5, offset_s=3.5, class_name="door")))
    sources = {(e.class_name, e.onset_s): e.source_index for e in service.events(clip)}
    assert sources == {("footsteps", 1.0): 0, ("footsteps", 2.0): 1, ("footsteps", 5.0): 0, ("door", 2.5): 0}
    assert service.free_source_index(ana.id, clip, "footsteps", 2.8, 3.2) == 2
    # the source index is editable; one an overlapping event of the class holds is refused
    late = next(e for e in service.events(clip) if e.onset_s == 5.0)
    stack.push(EditEvent(service, late, source_index=3))
    assert service.get(late.uid).source_index == 3
    first = next(e for e in service.events(clip) if e.onset_s == 1.0)
    with pytest.raises(InputError, match="source 1 of 'footsteps' is taken"):
        service.update(first.uid, {"source_index": 1})
    # a class change into a class whose source 0 is taken there moves to the lowest free index
    door = next(e for e in service.events(clip) if e.class_name == "door")
    stack.push(EditEvent(service, door, class_name="footsteps"))
    assert service.get(door.uid).source_index == 2
    stack.undo()
    assert (service.get(door.uid).class_name, service.get(door.uid).source_index) == ("door", 0)
    stack.redo()
    assert (service.get(door.uid).class_name, service.get(door.uid).source_index) == ("footsteps", 2)
    rows, _ = events_to_rows(service.events(clip), STARSS23)
    assert len({(r.frame, r.class_index, r.source) for r in rows}) == len(rows)  # export no longer refuses


def test_the_vocabulary_stored_is_the_classs_own(store) -> None:
    clip = _clip(store)
    ana = LabelService(store).ensure_annotator("ana")
    service = EventService(store)
    stack = CommandStack()
    stack.push(AddEvent(service, ana.id, clip, _event(class_name="Bird")))  # a GUI event of a non-STARSS23 class
    [bird] = service.events(clip)
    assert bird.vocabulary == "project"  # no ontology here; with one that names it, "audioset"
    stack.push(EditEvent(service, bird, class_name="door"))
    assert service.get(bird.uid).vocabulary == "starss23"
    stack.undo()
    assert (service.get(bird.uid).class_name, service.get(bird.uid).vocabulary) == ("Bird", "project")
