"""Spatial sound events (issue 17)."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from storage.models._base import _json, _text, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)
from storage.models import humans as _humans  # noqa: F401  (tables its foreign keys name)


class SpatialEvent(SQLModel, table=True):
    """An expert's sound event: when, what and where (spatial-events.md).

    A human label like the others: per annotator, versioned, every change in
    ``label_history`` (entity ``spatial_event``). ``uid`` is the event's stable id (undo,
    redo and exports address it); a deleted event keeps its row with ``deleted`` set so
    that undoing the delete brings the same event back.
    """

    __tablename__ = "spatial_event"
    __table_args__ = (Index("ix_spatial_event_clip_annotator", "clip_id", "annotator_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    uid: str = Field(index=True, unique=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    onset_s: float
    offset_s: float
    class_name: str
    vocabulary: str = "starss23"  # starss23 | audioset | project
    source_index: int = 0
    direction_kind: str = "azel"  # azel (FOA: azimuth, elevation) | lateral (two-channel: lateral angle)
    track: Optional[list] = _json()  # per 100 ms frame from the onset: [azimuth, elevation(, distance_cm)]
    distance_cm: Optional[float] = None
    front_back: Optional[str] = None  # front | back | undecided (two-channel clips only)
    confidence: Optional[float] = None  # 0..1
    note: Optional[str] = _text()
    # the class list the event was imported with (index = position), so that an export and a
    # re-import keep the names; None: the class's own vocabulary (STARSS23 for its 13 classes)
    class_list: Optional[list] = _json()
    deleted: bool = False
    version: int = 1
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
