"""SQLModel tables of an AGL Workbench project.

The schema is the single source of truth for Alembic migrations
(``storage/migrations``).  Every table has an integer primary key; rows are
addressed by primary keys, never by display names or floats.

JSON columns hold small structured values (parameters, usage, request maps)
whose shape is owned by the service that writes them.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    """Timezone-aware UTC now (stored as naive UTC by SQLite, aware by PostgreSQL)."""
    return datetime.now(timezone.utc)


def _json(**kw: Any) -> Any:
    return Field(default=None, sa_column=Column(JSON, **kw))


def _text(**kw: Any) -> Any:
    return Field(default=None, sa_column=Column(Text, **kw))


# --------------------------------------------------------------------------- datasets


class Dataset(SQLModel, table=True):
    __tablename__ = "dataset"

    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    format: str = "agl1k"
    source_path: Optional[str] = None
    source_sha256: Optional[str] = None
    column_mapping: Optional[str] = None  # name of the mapping applied (e.g. "agl1k-20")
    imported_at: datetime = Field(default_factory=utcnow)


class MediaRoot(SQLModel, table=True):
    __tablename__ = "media_root"
    __table_args__ = (UniqueConstraint("dataset_id", "path"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    dataset_id: Optional[int] = Field(default=None, foreign_key="dataset.id", index=True)
    path: str


class Clip(SQLModel, table=True):
    """One recording with every AGL1K field plus audio properties."""

    __tablename__ = "clip"
    __table_args__ = (UniqueConstraint("dataset_id", "key"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    key: str = Field(index=True)
    short_key: Optional[str] = None
    longitude: Optional[float] = None
    latitude: Optional[float] = None
    altitude: Optional[float] = None
    description: Optional[str] = _text()
    title: Optional[str] = _text()
    mp3name: Optional[str] = None
    mp3seconds: Optional[float] = None
    city: Optional[str] = None
    country: Optional[str] = None
    continent: Optional[str] = None
    # AGL1K category columns, each in [0, 1]
    human_sounds: Optional[float] = None
    animal: Optional[float] = None
    music: Optional[float] = None
    natural_sounds: Optional[float] = None
    channel: Optional[float] = None
    environment_and_background: Optional[float] = None
    sounds_of_things: Optional[float] = None
    source_ambiguous_sounds: Optional[float] = None
    # audio properties (filled by analysis)
    audio_path: Optional[str] = None  # relative to a media root
    sample_rate: Optional[int] = None
    n_channels: Optional[int] = None
    duration_s: Optional[float] = None
    layout: Optional[str] = None  # detected: mono|stereo|binaural|ab|xy|ms|ambix|fuma
    layout_override: Optional[str] = None  # curator's choice, wins over `layout`
    content_hash: Optional[str] = Field(default=None, index=True)
    is_demo: bool = False


class ClipQuality(SQLModel, table=True):
    """Acoustic quality metrics (curation-model.md section 1)."""

    __tablename__ = "clip_quality"

    id: Optional[int] = Field(default=None, primary_key=True)
    clip_id: int = Field(foreign_key="clip.id", index=True, unique=True)
    rms_dbfs: Optional[float] = None
    spectral_flatness: Optional[float] = None
    clipping_ratio: Optional[float] = None
    aci: Optional[float] = None
    content_hash: Optional[str] = None
    computed_at: datetime = Field(default_factory=utcnow)


# --------------------------------------------------------------------------- ALM runs


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
    # Geodesic distance (km) between the record's true and predicted coordinates, computed once
    # when the record is stored (workbench.importing.prediction_rows); NULL when undefined.
    distance_error_km: Optional[float] = None
    # Any predicted field is a refusal value (the leaderboard's reject rate), stored alongside.
    refused: Optional[bool] = None


# --------------------------------------------------------------------------- tagging


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


# --------------------------------------------------------------------------- judges


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


# --------------------------------------------------------------------------- humans


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
    quality_overruled: Optional[bool] = None
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


# --------------------------------------------------------------------------- curation


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


# --------------------------------------------------------------------------- running ALMs (issue 16)


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


# --------------------------------------------------------------------------- spatial events (issue 17)


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
    deleted: bool = False
    version: int = 1
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


# --------------------------------------------------------------------------- studies (issue 18)


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


ALL_TABLES = SQLModel.metadata
