"""ALM runs and their predictions (imported or asked by the runner)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.models._base import _text, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)


class AlmRun(SQLModel, table=True):
    """One imported ALM result file (a model's predictions over a dataset)."""

    __tablename__ = "alm_run"

    id: Optional[int] = Field(default=None, primary_key=True)
    model: str = Field(index=True, unique=True)
    source_path: Optional[str] = None
    source_sha256: Optional[str] = None
    container: Optional[str] = None  # jsonl | json-array
    seed: Optional[int] = None
    imported_at: datetime = Field(default_factory=utcnow)
    is_demo: bool = False


class Prediction(SQLModel, table=True):
    """One ALM result record, kept as written (raw predicted values are strings)."""

    __tablename__ = "prediction"
    __table_args__ = (
        UniqueConstraint("alm_run_id", "question_id"),
        # Covering index of the leaderboard's read: rows hold long chain-of-thought text and the
        # stored distance sits after it, so reading the table itself walks overflow pages.
        Index(
            "ix_prediction_metrics",
            "alm_run_id",
            "distance_error_km",
            "refused",
            "true_city",
            "true_country",
            "true_continent",
            "predicted_city",
            "predicted_country",
            "predicted_continent",
        ),
    )

    id: Optional[int] = Field(default=None, primary_key=True)
    alm_run_id: int = Field(foreign_key="alm_run.id", index=True)
    clip_id: Optional[int] = Field(default=None, foreign_key="clip.id", index=True)
    question_id: str = Field(index=True)
    task_id: Optional[str] = None
    true_city: Optional[str] = None
    true_country: Optional[str] = None
    true_continent: Optional[str] = None
    true_longitude: Optional[float] = None
    true_latitude: Optional[float] = None
    predicted_city: Optional[str] = None
    predicted_country: Optional[str] = None
    predicted_continent: Optional[str] = None
    predicted_longitude: Optional[str] = None  # raw text: may be "Unknown", "", "0"
    predicted_latitude: Optional[str] = None
    reasoning: Optional[str] = _text()
    model_output: Optional[str] = _text()
    question: Optional[str] = _text()
    seed: Optional[int] = None
    line_no: Optional[int] = None
    # Distance error (km) from the linked clip's position (the record's stated truth only without
    # one), computed once when the record is stored (workbench.importing.prediction_rows; readers
    # ask workbench.metrics.distance); NULL when undefined.
    distance_error_km: Optional[float] = None
    # Any predicted field is a refusal value (the leaderboard's reject rate), stored alongside.
    refused: Optional[bool] = None
