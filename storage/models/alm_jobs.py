"""Runs of the ALM runner (issue 16): jobs and each paid answer."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlmodel import Field, SQLModel

from storage.models._base import _json, _text, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)
from storage.models import alm_runs as _alm_runs  # noqa: F401  (tables its foreign keys name)


class AlmJob(SQLModel, table=True):
    """One `aglw alm run`: a provider and model asked about a set of clips (answers filed under model NAME)."""

    __tablename__ = "alm_job"

    id: Optional[int] = Field(default=None, primary_key=True)
    alm_run_id: int = Field(foreign_key="alm_run.id", index=True)
    provider: str  # openai | openai-compatible | gemini | transformers
    api_model: str
    base_url: Optional[str] = None
    prompt_version: str
    options: Optional[dict] = _json()  # everything that enters the fingerprint besides the identity fields
    seed: Optional[int] = None
    samples: int = 1
    status: str = "running"  # running | done | failed | cancelled
    requested: int = 0
    answered: int = 0
    skipped_cached: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Optional[float] = None
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: Optional[datetime] = None


class AlmAnswer(SQLModel, table=True):
    """One reply of an ALM to one clip (every attempt that ended, failures too), stored when it arrives.

    ``cache_key`` (fingerprint and sample number) is set only on the answer that a rerun reuses
    instead of paying again; failed answers and answers superseded by ``--force`` leave it null.
    """

    __tablename__ = "alm_answer"

    id: Optional[int] = Field(default=None, primary_key=True)
    alm_job_id: int = Field(foreign_key="alm_job.id", index=True)
    alm_run_id: int = Field(foreign_key="alm_run.id", index=True)
    clip_id: Optional[int] = Field(default=None, foreign_key="clip.id", index=True)
    clip_key: str
    fingerprint: Optional[str] = Field(default=None, index=True)
    sample: int = 0
    cache_key: Optional[str] = Field(default=None, unique=True, index=True)
    status: str  # ok | rejected | failed
    reason: Optional[str] = _text()  # why rejected or failed
    raw_output: Optional[str] = _text()
    parsed: Optional[dict] = _json()
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    latency_s: Optional[float] = None
    cost_usd: Optional[float] = None
    attempts: int = 1
    audio: Optional[dict] = _json()  # what was sent: bytes, sha256, format, transport (inline/files), seconds
    prediction_id: Optional[int] = Field(default=None, foreign_key="prediction.id")
    created_at: datetime = Field(default_factory=utcnow)
