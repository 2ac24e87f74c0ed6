"""Event edits as commands (house rule 1): add, change, delete, each undoable, on the same
:class:`workbench.commands.CommandStack` as every other label edit.

Each command persists through :class:`workbench.events.service.EventService` in its own
transaction, with a history row; undo and redo are version-checked against what this command
last left (a change made elsewhere in between raises ``ConflictError``; nothing is overwritten).
"""

from __future__ import annotations

import uuid
from typing import Any

from workbench.commands import Command, VersionedCommand
from workbench.events.model import SpatialEventData
from workbench.events.service import EventService


class AddEvent(Command):
    """Add an event; undo marks it deleted, redo brings the same event (same id) back."""

    def __init__(self, service: EventService, annotator_id: int, clip_id: int, event: SpatialEventData) -> None:
        super().__init__()
        self.service = service
        self.annotator_id = annotator_id
        self.clip_id = clip_id
        self.event = event
        self.uid = uuid.uuid4().hex
        self.row_key = ("spatial_event", self.uid)
        self.description = f"add {event.class_name} event at {event.onset_s:.1f} s"

    def execute(self) -> None:
        if not self.executed:
            change = self.service.create(self.annotator_id, self.clip_id, self.event, uid=self.uid,
                                         command_id=self.command_id)
        else:
            change = self.service.update(self.uid, {"deleted": False}, expected_version=self.version,
                                         command_id=self.command_id, action="redo")
        self.version = change.version
        self.executed = True

    def undo(self) -> None:
        self.version = self.service.update(self.uid, {"deleted": True}, expected_version=self.version,
                                           command_id=self.command_id, action="undo").version


class _ChangeEvent(VersionedCommand):
    """Change an event's fields: the version-checked execute/undo of every label edit, writing
    through the event service."""

    def __init__(self, service: EventService, event: SpatialEventData, values: dict[str, Any]) -> None:
        if event.uid is None:
            raise ValueError("the event has no id yet; add it first")
        super().__init__(service, values, event.version or None)
        self.uid = event.uid
        self.clip_id = event.clip_id
        self.row_key = ("spatial_event", self.uid)

    def _write(self, values: dict[str, Any], action: str, expected_version: int | None) -> Any:
        change = self.service.update(self.uid, values, expected_version=expected_version,
                                     command_id=self.command_id, action=action)
        if action == "do":
            # the service may add what follows from the edit (a new class's vocabulary, a free
            # source index): a redo writes all of it again
            self.values = dict(change.new)
        return change


class EditEvent(_ChangeEvent):
    """Change fields of an event (span, class, direction track, distance, front/back, confidence, note)."""

    def __init__(self, service: EventService, event: SpatialEventData, **values: Any) -> None:
        if "track" in values:
            values["track"] = [list(t) for t in values["track"]]
        super().__init__(service, event, values)
        self.description = f"change {', '.join(values)} of {event.class_name} event"


class DeleteEvent(_ChangeEvent):
    """Delete an event (kept in the store as deleted, so undo restores the same event)."""

    def __init__(self, service: EventService, event: SpatialEventData) -> None:
        super().__init__(service, event, {"deleted": True})
        self.description = f"delete {event.class_name} event at {event.onset_s:.1f} s"
