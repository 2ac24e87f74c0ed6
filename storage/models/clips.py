"""Datasets, their media roots, clips and their measured quality."""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.models._base import _json, _text, utcnow


class Dataset(SQLModel, table=True):
    __tablename__ = "dataset"

    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    format: str = "agl1k"
    source_path: Optional[str] = None
    source_sha256: Optional[str] = None
    column_mapping: Optional[str] = None  # name of the mapping applied (e.g. "agl1k-20")
    mapping: Optional[dict] = _json()  # a table/folder import's mapping as applied (datasets.md)
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
    # fields of datasets beyond AGL1K (datasets.md): given by the source or its mapping
    licence: Optional[str] = None
    recordist: Optional[str] = None
    url: Optional[str] = _text()
    recorded_at: Optional[str] = None  # as the source wrote it (no time zone is guessed)
    extra: Optional[dict] = _json()  # the source's columns no field maps, by column name
    derived: Optional[list] = _json()  # fields the importer derived (e.g. country from the coordinates)
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
