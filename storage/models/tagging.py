"""EfficientAT tagger runs: clip tags, 1 s timelines, per-clip status."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import JSON, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.models._base import _json, _text, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)


class TaggerRun(SQLModel, table=True):
    __tablename__ = "tagger_run"

    id: Optional[int] = Field(default=None, primary_key=True)
    model_name: str
    checkpoint_sha256: Optional[str] = None
    device: Optional[str] = None
    parameters: Optional[dict] = _json()
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None
    status: str = "running"  # running | done | cancelled | failed
    is_demo: bool = False


class Tag(SQLModel, table=True):
    """Clip-level tag probability of one AudioSet class."""

    __tablename__ = "tag"
    __table_args__ = (UniqueConstraint("tagger_run_id", "clip_id", "class_index"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    tagger_run_id: int = Field(foreign_key="tagger_run.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    class_index: int
    audioset_id: str = Field(index=True)
    probability: float


class TagTimeline(SQLModel, table=True):
    """Per-second probabilities of one class in one clip (a JSON list of floats)."""

    __tablename__ = "tag_timeline"
    __table_args__ = (UniqueConstraint("tagger_run_id", "clip_id", "class_index"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    tagger_run_id: int = Field(foreign_key="tagger_run.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    class_index: int
    audioset_id: str
    hop_s: float = 1.0
    values: Optional[list] = _json()


class TagStatus(SQLModel, table=True):
    """Per-clip outcome of a tagger run (what makes `aglw tag` resumable)."""

    __tablename__ = "tag_status"
    __table_args__ = (UniqueConstraint("tagger_run_id", "clip_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    tagger_run_id: int = Field(foreign_key="tagger_run.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    status: str  # done | failed
    error: Optional[str] = _text()
    content_hash: Optional[str] = None
