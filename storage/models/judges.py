"""LLM judge runs, their calls and the judgments they returned."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from storage.models._base import _json, _text, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)
from storage.models import alm_runs as _alm_runs  # noqa: F401  (tables its foreign keys name)
from storage.models import tagging as _tagging  # noqa: F401  (tables its foreign keys name)


class JudgeRun(SQLModel, table=True):
    """One judge (provider, model id, prompt version, options) over a set of clips."""

    __tablename__ = "judge_run"

    id: Optional[int] = Field(default=None, primary_key=True)
    judge_name: str = Field(index=True)
    provider: str
    model_id: str
    prompt_version: str
    options: Optional[dict] = _json()
    alm_run_id: Optional[int] = Field(default=None, foreign_key="alm_run.id", index=True)
    tagger_run_id: Optional[int] = Field(default=None, foreign_key="tagger_run.id")
    mode: str = "sync"  # sync | batch
    batch_id: Optional[str] = None
    request_map: Optional[dict] = _json()  # custom_id -> {clip_id, fingerprint, attempt}
    status: str = "running"  # running | submitted | done | failed | cancelled
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None
    is_demo: bool = False


class JudgeCall(SQLModel, table=True):
    """One request to a judge and its reply (every call is stored, retries too)."""

    __tablename__ = "judge_call"

    id: Optional[int] = Field(default=None, primary_key=True)
    judge_run_id: int = Field(foreign_key="judge_run.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    fingerprint: str = Field(index=True)
    attempt: int = 1
    custom_id: Optional[str] = None
    status: str  # ok | failed
    failure_reason: Optional[str] = _text()
    stop_reason: Optional[str] = None
    raw_reply: Optional[str] = _text()
    parsed: Optional[dict] = _json()
    usage: Optional[dict] = _json()  # input/output/cache_creation/cache_read tokens
    cost_usd: Optional[float] = None
    created_at: datetime = Field(default_factory=utcnow)


class Judgment(SQLModel, table=True):
    """One judge's verdict on one category of one clip."""

    __tablename__ = "judgment"
    __table_args__ = (Index("ix_judgment_clip_category", "clip_id", "category_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    judge_run_id: int = Field(foreign_key="judge_run.id", index=True)
    judge_call_id: Optional[int] = Field(default=None, foreign_key="judge_call.id")
    clip_id: int = Field(foreign_key="clip.id", index=True)
    category_id: str  # AudioSet id, e.g. /m/09x0r
    contribution: Optional[int] = None  # 0..3, None when failed
    effect: Optional[str] = None  # helped | misled | neutral
    mentioned: Optional[bool] = None
    evidence: Optional[str] = _text()
    evidence_found: Optional[bool] = None
    status: str = "ok"  # ok | failed
    failure_reason: Optional[str] = _text()
