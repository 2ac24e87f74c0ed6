"""Stored curation-model runs, their per-category and per-clip results, and selections."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.models._base import _json, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)
from storage.models import alm_runs as _alm_runs  # noqa: F401  (tables its foreign keys name)
from storage.models import humans as _humans  # noqa: F401  (tables its foreign keys name)


class CurationRun(SQLModel, table=True):
    __tablename__ = "curation_run"

    id: Optional[int] = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow)
    parameters: Optional[dict] = _json()
    input_fingerprint: str
    alm_run_id: Optional[int] = Field(default=None, foreign_key="alm_run.id")
    summary: Optional[dict] = _json()  # theta recalibration, balanced accuracy, Spearman, counts
    created_by: Optional[int] = Field(default=None, foreign_key="annotator.id")


class CurationCategoryResult(SQLModel, table=True):
    __tablename__ = "curation_category_result"
    __table_args__ = (UniqueConstraint("run_id", "category_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="curation_run.id", index=True)
    category_id: str
    name: Optional[str] = None
    a: float
    a_bar: float
    support: int
    fitted_polarity: str  # P | N | neutral | insufficient
    polarity: str  # after expert override
    overridden: bool = False


class CurationClipResult(SQLModel, table=True):
    __tablename__ = "curation_clip_result"
    __table_args__ = (UniqueConstraint("run_id", "clip_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="curation_run.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    localizability: float
    percentile: float
    candidate: bool
    quality_flags: Optional[list] = _json()


class Selection(SQLModel, table=True):
    __tablename__ = "selection"

    id: Optional[int] = Field(default=None, primary_key=True)
    run_id: Optional[int] = Field(default=None, foreign_key="curation_run.id")
    created_at: datetime = Field(default_factory=utcnow)
    size: int
    parameters: Optional[dict] = _json()
    clip_ids: Optional[list] = _json()
    counts: Optional[dict] = _json()
