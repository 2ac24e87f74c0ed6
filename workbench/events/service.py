"""Spatial events in the project store: the one write path (commands, CLI import) and the reads.

Every write is one transaction that changes the annotator's own event row and appends a
``label_history`` row (entity ``spatial_event``, field ``event:<uid>``, old and new value the
event's whole state as JSON): undo, audit and "labels as of date X" read the same history as
every other human label. Edits are version-checked by the one write of every label
(:func:`workbench.versioned_rows.write_versioned`: ``ConflictError`` with both sides; nothing
overwritten).
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

from sqlmodel import col, select

from storage import Store
from storage.models import Annotator, Clip, LabelHistory, SpatialEvent
from workbench.errors import InputError
from workbench.events.model import STARSS23_CLASSES, SpatialEventData, lowest_free_source, validate_event, vocabulary_of
from workbench.versioned_rows import write_row, write_versioned

ENTITY = "spatial_event"
# Fields a command may change (the rest are the event's identity).
EDITABLE = (
    "onset_s", "offset_s", "class_name", "vocabulary", "source_index", "direction_kind", "track",
    "distance_cm", "front_back", "confidence", "note", "deleted",
)


@dataclass(frozen=True)
class ClipInfo:
    """What event edits need to know about a clip."""

    id: int
    key: str
    duration_s: float | None
    layout: str | None
    audio_path: str | None
    n_channels: int | None


@dataclass(frozen=True)
class EventChange:
    """What one event write changed (``old``/``new``: the changed fields' values)."""

    uid: str
    clip_id: int
    old: dict[str, Any]
    new: dict[str, Any]
    version: int
    command_id: str


def _snapshot(row: SpatialEvent) -> dict[str, Any]:
    return {name: getattr(row, name) for name in ("uid", "clip_id", "annotator_id", *EDITABLE)}


def _data(row: SpatialEvent) -> SpatialEventData:
    return SpatialEventData(
        onset_s=row.onset_s,
        offset_s=row.offset_s,
        class_name=row.class_name,
        track=tuple(tuple(t) for t in (row.track or [])),
        source_index=row.source_index,
        vocabulary=row.vocabulary,
        direction_kind=row.direction_kind,
        distance_cm=row.distance_cm,
        front_back=row.front_back,
        confidence=row.confidence,
        note=row.note,
        uid=row.uid,
        clip_id=row.clip_id,
        annotator_id=row.annotator_id,
        version=row.version,
        extra={"deleted": row.deleted},
    )


def _fields(event: SpatialEventData) -> dict[str, Any]:
    return {
        "onset_s": event.onset_s,
        "offset_s": event.offset_s,
        "class_name": event.class_name,
        "vocabulary": event.vocabulary,
        "source_index": event.source_index,
        "direction_kind": event.direction_kind,
        "track": [list(t) for t in event.track],
        "distance_cm": event.distance_cm,
        "front_back": event.front_back,
        "confidence": event.confidence,
        "note": event.note,
    }


def clip_info(store: Store, clip_id: int) -> ClipInfo:
    """The clip's key, duration and layout (the curator's override wins)."""
    with store.session() as s:
        clip = s.get(Clip, clip_id)
        if clip is None:
            raise InputError(f"unknown clip id {clip_id}")
        return ClipInfo(clip.id or clip_id, clip.key, clip.duration_s or clip.mp3seconds,
                        clip.layout_override or clip.layout, clip.audio_path, clip.n_channels)


class EventService:
    """Reads and writes the spatial events of one project store.

    Parameters
    ----------
    store
        The project store; each method is its own unit of work.
    write_wait_s
        How long a write waits for another writer (the GUI passes a short wait).
    """

    def __init__(self, store: Store, *, write_wait_s: float | None = None) -> None:
        self.store = store
        self.write_wait_s = write_wait_s

    # ------------------------------------------------------------------ reads

    def events(self, clip_id: int | None = None, annotator_id: int | None = None,
               *, include_deleted: bool = False) -> list[SpatialEventData]:
        """Events in time order, optionally of one clip and/or annotator."""
        query = select(SpatialEvent)
        if clip_id is not None:
            query = query.where(SpatialEvent.clip_id == clip_id)
        if annotator_id is not None:
            query = query.where(SpatialEvent.annotator_id == annotator_id)
        if not include_deleted:
            query = query.where(col(SpatialEvent.deleted).is_(False))
        with self.store.session() as s:
            rows = s.exec(query.order_by(SpatialEvent.clip_id, SpatialEvent.onset_s, SpatialEvent.class_name,
                                         SpatialEvent.source_index, SpatialEvent.id)).all()
            return [_data(r) for r in rows]

    def get(self, uid: str) -> SpatialEventData | None:
        """One event by its stable id (deleted ones too: ``extra['deleted']``)."""
        with self.store.session() as s:
            row = s.exec(select(SpatialEvent).where(SpatialEvent.uid == uid)).first()
            return None if row is None else _data(row)

    def clip(self, clip_id: int) -> ClipInfo:
        return clip_info(self.store, clip_id)

    def vocabulary_of(self, class_name: str) -> str:
        """The vocabulary of a class name (:func:`~workbench.events.model.vocabulary_of`) with the
        AudioSet names this project knows."""
        if class_name in STARSS23_CLASSES:
            return "starss23"
        from workbench.project import category_names

        return vocabulary_of(class_name, category_names(self.store).values())

    def free_source_index(self, annotator_id: int, clip_id: int, class_name: str, onset_s: float, offset_s: float,
                          exclude_uid: str | None = None) -> int:
        """The default source index of an event: the lowest free one among the annotator's
        overlapping events of the same class on the clip."""
        return lowest_free_source(self.events(clip_id, annotator_id), class_name, onset_s, offset_s, exclude_uid)

    def _checked_source(self, annotator_id: int, clip_id: int, event: SpatialEventData, explicit: bool) -> int:
        """``event``'s source index when free among overlapping events of its class; a taken one is
        refused when the person chose it (``explicit``), else replaced by the lowest free one."""
        others = [e for e in self.events(clip_id, annotator_id) if e.uid != event.uid]
        taken = {e.source_index for e in others if e.class_name == event.class_name
                 and e.onset_s < event.offset_s and event.onset_s < e.offset_s}
        if event.source_index not in taken:
            return event.source_index
        if explicit:
            raise InputError(f"source {event.source_index} of {event.class_name!r} is taken by an overlapping event; "
                             f"the lowest free one is {lowest_free_source(others, event.class_name, event.onset_s, event.offset_s)}")
        return lowest_free_source(others, event.class_name, event.onset_s, event.offset_s)

    # ------------------------------------------------------------------ writes

    def create(self, annotator_id: int, clip_id: int, event: SpatialEventData, *,
               uid: str | None = None, command_id: str | None = None, action: str = "do") -> EventChange:
        """Store a new event of ``annotator_id`` on ``clip_id`` (validated against the clip).

        A new event ("do") whose source index an overlapping event of its class holds gets the
        lowest free one; a STARSS23 vocabulary on a class outside STARSS23 becomes the class's own.
        """
        info = self.clip(clip_id)
        if action == "do":
            if event.vocabulary == "starss23" and event.class_name not in STARSS23_CLASSES:
                event = event.with_changes(vocabulary=self.vocabulary_of(event.class_name))
            event = event.with_changes(source_index=self._checked_source(annotator_id, clip_id, event, False))
        clean = validate_event(event, clip_duration_s=info.duration_s, where=f"clip {info.key}")
        uid = uid or uuid.uuid4().hex
        command_id = command_id or uuid.uuid4().hex
        with self.store.write(wait_s=self.write_wait_s) as s:
            if s.get(Annotator, annotator_id) is None:
                raise InputError(f"unknown annotator id {annotator_id}")
            row = SpatialEvent(uid=uid, annotator_id=annotator_id, clip_id=clip_id, version=1, **_fields(clean))
            s.add(row)
            s.flush()
            s.add(self._history(row, None, _snapshot(row), command_id, action))
            return EventChange(uid, clip_id, {}, _fields(clean), row.version, command_id)

    def update(self, uid: str, values: dict[str, Any], *, expected_version: int | None = None,
               command_id: str | None = None, action: str = "do") -> EventChange:
        """Change some fields of an event (``deleted`` too); version-checked when ``expected_version`` is given."""
        unknown = set(values) - set(EDITABLE)
        if unknown:
            raise InputError(f"cannot change {', '.join(sorted(unknown))} of an event")
        if not values:
            raise InputError("nothing to change: give at least one value")
        if action == "do":
            values = self._with_class_rules(uid, values)
        written = write_versioned(
            self.store, SpatialEvent, {"uid": uid}, values, **self._row_write(uid),
            expected_version=expected_version, action=action, command_id=command_id, wait_s=self.write_wait_s,
        )
        return EventChange(uid, written.row.clip_id, written.old, written.new, written.version, written.command_id)

    def _with_class_rules(self, uid: str, values: dict[str, Any]) -> dict[str, Any]:
        """A new edit's values plus what follows from them: a new class brings its own vocabulary,
        and a class or time change whose source index is taken moves to the lowest free one (a
        source index the person typed that is taken is refused)."""
        current = self.get(uid)
        if current is None or values.get("deleted"):
            return values
        values = dict(values)
        if "class_name" in values and "vocabulary" not in values:
            values["vocabulary"] = self.vocabulary_of(values["class_name"])
        if {"class_name", "onset_s", "offset_s", "source_index"} & set(values):
            changed = current.with_changes(**{k: values[k] for k in ("class_name", "onset_s", "offset_s",
                                                                    "source_index") if k in values})
            index = self._checked_source(int(current.annotator_id or 0), int(current.clip_id or 0), changed,
                                         "source_index" in values)
            if index != current.source_index or "source_index" in values:
                values["source_index"] = index
        return values

    def import_events(self, annotator_id: int, clip_id: int, events: Sequence[SpatialEventData], *,
                      replace: bool = False, source: str = "import",
                      class_list: Sequence[str] | None = None) -> list[str]:
        """Store ``events`` for one clip in one transaction (all or nothing); returns their ids.

        With ``replace``, each of the annotator's events on the clip is deleted by the write of a
        single delete (:meth:`update` with ``deleted``: version bump and history row); the whole
        import is one command (one ``command_id``).

        Raises
        ------
        InputError
            The annotator already has events on the clip and ``replace`` is False, or an event is
            invalid for the clip (e.g. past its end): nothing is stored.
        """
        info = self.clip(clip_id)
        clean = [validate_event(e, clip_duration_s=info.duration_s, where=f"{source}: event {i + 1}")
                 for i, e in enumerate(events)]
        command_id = uuid.uuid4().hex
        uids: list[str] = []
        with self.store.write(wait_s=self.write_wait_s) as s:
            if s.get(Annotator, annotator_id) is None:
                raise InputError(f"unknown annotator id {annotator_id}")
            # Locked (PostgreSQL) so that no edit elsewhere slips in between this read and the deletes.
            existing = s.exec(select(SpatialEvent).where(
                SpatialEvent.clip_id == clip_id, SpatialEvent.annotator_id == annotator_id,
                col(SpatialEvent.deleted).is_(False)).with_for_update()).all()
            if existing and not replace:
                raise InputError(
                    f"{source}: clip {info.key} already has {len(existing)} events by this annotator; "
                    "pass --replace to replace them (the old ones stay in the history)"
                )
            for row in existing:
                write_row(s, SpatialEvent, {"uid": row.uid}, {"deleted": True}, **self._row_write(row.uid),
                          expected_version=row.version, command_id=command_id)
            for event in clean:
                row = SpatialEvent(uid=uuid.uuid4().hex, annotator_id=annotator_id, clip_id=clip_id, version=1,
                                   class_list=None if class_list is None else list(class_list), **_fields(event))
                s.add(row)
                s.flush()
                s.add(self._history(row, None, _snapshot(row), command_id, "do"))
                uids.append(row.uid)
        return uids

    def _row_write(self, uid: str) -> dict[str, Any]:
        """How the versioned write of one event (:mod:`workbench.versioned_rows`) names, checks and records it."""
        return {"what": "this event", "missing": f"no event with id {uid}", "prepare": self._prepare,
                "history": self._history_rows}

    def _prepare(self, row: SpatialEvent, values: dict[str, Any]) -> dict[str, Any]:
        """The event with the changes, validated against its clip unless it ends up deleted."""
        merged = _data(row).with_changes(**{k: (tuple(tuple(t) for t in v) if k == "track" else v)
                                            for k, v in values.items() if k != "deleted"})
        if not values.get("deleted", row.deleted):
            info = self.clip(row.clip_id)
            merged = validate_event(merged, clip_duration_s=info.duration_s, where=f"clip {info.key}")
        fields = {name: value for name, value in _fields(merged).items() if name in values}
        return fields | ({"deleted": bool(values["deleted"])} if "deleted" in values else {})

    def _history_rows(self, row: SpatialEvent, old: dict[str, Any], _new: dict[str, Any], command_id: str,
                      action: str) -> list[LabelHistory]:
        """One row with the event's whole state before and after (``old``: the written fields' values before)."""
        after = _snapshot(row)
        return [self._history(row, {**after, **old}, after, command_id, action)]

    @staticmethod
    def _history(row: SpatialEvent, before: dict[str, Any] | None, after: dict[str, Any], command_id: str,
                 action: str) -> LabelHistory:
        return LabelHistory(
            annotator_id=row.annotator_id,
            entity=ENTITY,
            clip_id=row.clip_id,
            category_id=None,
            field=f"event:{row.uid}",
            old_value=None if before is None else json.dumps(before, ensure_ascii=False),
            new_value=json.dumps(after, ensure_ascii=False),
            command_id=command_id,
            action=action,
            at=row.updated_at,
        )


def clip_audio_path(store: Store, clip_id: int) -> str | None:
    """The clip's recording on disk (None when unlinked or missing), by the media rule."""
    from workbench.media import audio_statuses

    status = audio_statuses(store, [clip_id]).get(clip_id)
    return str(status.path) if status is not None and status.ok else None


def finite(value: float | None) -> float | None:
    """None for NaN/inf (JSON has no NaN)."""
    return None if value is None or not math.isfinite(value) else value
