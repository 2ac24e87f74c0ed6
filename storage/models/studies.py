"""Studies (issue 18): error modes, study plans and assignments, human guesses."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.models._base import _json, _text, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)
from storage.models import alm_runs as _alm_runs  # noqa: F401  (tables its foreign keys name)
from storage.models import humans as _humans  # noqa: F401  (tables its foreign keys name)


class ErrorModeLabel(SQLModel, table=True):
    """An expert's error modes for one ALM answer (AGL1K's taxonomy; workbench/studies/error_modes.py).

    ``modes`` holds the chosen mode codes, sorted and comma-separated (None: no tag); ``note``
    is required with ``other``. Edits go through the label history like every human label.
    """

    __tablename__ = "error_mode_label"
    __table_args__ = (UniqueConstraint("annotator_id", "clip_id", "alm_run_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    alm_run_id: int = Field(foreign_key="alm_run.id", index=True)
    modes: Optional[str] = None
    note: Optional[str] = _text()
    version: int = 1
    updated_at: datetime = Field(default_factory=utcnow)


class JudgeErrorMode(SQLModel, table=True):
    """One LLM judge's error modes for one ALM answer (prompt ``error-modes-v1`` and later), every reply kept."""

    __tablename__ = "judge_error_mode"
    __table_args__ = (Index("ix_judge_error_mode_clip_alm", "clip_id", "alm_run_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    judge_name: str = Field(index=True)
    provider: str
    model_id: str
    prompt_version: str
    clip_id: int = Field(foreign_key="clip.id")
    alm_run_id: int = Field(foreign_key="alm_run.id")
    fingerprint: str = Field(index=True)  # provider, model, prompt, rendered request: never sent twice
    modes: Optional[str] = None  # sorted comma-separated codes; None when failed
    note: Optional[str] = _text()
    status: str = "ok"  # ok | failed
    failure_reason: Optional[str] = _text()
    raw_reply: Optional[str] = _text()
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    created_at: datetime = Field(default_factory=utcnow)

class StudyPlan(SQLModel, table=True):
    """A study's assignment of clips to annotators (workbench/studies/planning.py)."""

    __tablename__ = "study_plan"

    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    overlap: int = 2  # every clip is seen by this many annotators
    blind: bool = True  # judge output and other annotators' labels stay hidden until one has labelled
    parameters: Optional[dict] = _json()  # seed, strata, clip selection
    created_at: datetime = Field(default_factory=utcnow)


class StudyAssignment(SQLModel, table=True):
    """One clip assigned to one annotator in a plan, in the order the annotator sees it."""

    __tablename__ = "study_assignment"
    __table_args__ = (UniqueConstraint("plan_id", "annotator_id", "clip_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    plan_id: int = Field(foreign_key="study_plan.id", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    position: int = 0


class HumanGuess(SQLModel, table=True):
    """An annotator's blind guess of where a clip was recorded, with a confidence (humans as localizers)."""

    __tablename__ = "human_guess"
    __table_args__ = (UniqueConstraint("annotator_id", "clip_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    latitude: Optional[float] = None
    longitude: Optional[float] = None
    confidence: Optional[float] = None  # 0..1
    city: Optional[str] = None
    country: Optional[str] = None
    continent: Optional[str] = None
    version: int = 1
    updated_at: datetime = Field(default_factory=utcnow)
