"""Annotators and their labels, with the history of every edit."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import JSON, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.models._base import _text, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)


class Annotator(SQLModel, table=True):
    __tablename__ = "annotator"

    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(unique=True, index=True)
    role: str = "expert"  # expert | adjudicator | curator
    pseudonym: str = Field(unique=True)
    created_at: datetime = Field(default_factory=utcnow)


class CategoryLabel(SQLModel, table=True):
    """An expert's label for one category in one clip (contribution, effect, per-clip polarity)."""

    __tablename__ = "category_label"
    __table_args__ = (UniqueConstraint("annotator_id", "clip_id", "category_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    category_id: str = Field(index=True)
    contribution: Optional[int] = None  # 0..3
    effect: Optional[str] = None  # helped | misled | neutral
    polarity: Optional[str] = None  # per-clip override: P | N | neutral
    version: int = 1
    updated_at: datetime = Field(default_factory=utcnow)


class CategoryPolarity(SQLModel, table=True):
    """An expert's polarity for a category across the pool (overrides the fitted one)."""

    __tablename__ = "category_polarity"
    __table_args__ = (UniqueConstraint("annotator_id", "category_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    category_id: str = Field(index=True)
    polarity: Optional[str] = None  # P | N | neutral; None = no override
    version: int = 1
    updated_at: datetime = Field(default_factory=utcnow)


class ClipLabel(SQLModel, table=True):
    """An expert's judgment of a whole clip."""

    __tablename__ = "clip_label"
    __table_args__ = (UniqueConstraint("annotator_id", "clip_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    rating: Optional[int] = None  # 1..5
    decision: Optional[str] = None  # accept | reject | unsure
    note: Optional[str] = _text()
    quality_overruled: Optional[bool] = None  # every flag of the clip (before issue [N]; per flag: QualityOverrule)
    version: int = 1
    updated_at: datetime = Field(default_factory=utcnow)


class QualityOverrule(SQLModel, table=True):
    """An annotator's vote on one quality flag of one clip (curation-model.md section 1: every flag
    can be overruled): ``overruled`` True keeps the clip despite the flag, False says the flag
    stands, None is no vote. Versioned like every label; history entity ``quality_overrule`` with
    the flag name in ``category_id``."""

    __tablename__ = "quality_overrule"
    __table_args__ = (UniqueConstraint("annotator_id", "clip_id", "flag"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    flag: str  # low_level | flat_spectrum | clipping | low_complexity
    overruled: Optional[bool] = None
    note: Optional[str] = _text()
    version: int = 1
    updated_at: datetime = Field(default_factory=utcnow)


class LabelHistory(SQLModel, table=True):
    """Append-only record of every change to a human label (never updated, never deleted)."""

    __tablename__ = "label_history"
    # "labels as of date X" and per-annotator audit read history in time order
    __table_args__ = (Index("ix_label_history_annotator_at", "annotator_id", "at"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    entity: str  # category_label | clip_label | category_polarity
    clip_id: Optional[int] = Field(default=None, foreign_key="clip.id", index=True)
    category_id: Optional[str] = None
    field: str
    old_value: Optional[str] = None  # JSON-encoded
    new_value: Optional[str] = None  # JSON-encoded
    command_id: str = Field(index=True)  # groups the fields one command changed
    action: str = "do"  # do | undo | redo
    at: datetime = Field(default_factory=utcnow, index=True)
