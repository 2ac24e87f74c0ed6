"""SQLModel tables of an AGL Workbench project, one module per area.

The schema is the single source of truth for Alembic migrations
(``storage/migrations``).  Every table has an integer primary key; rows are
addressed by primary keys, never by display names or floats.

JSON columns hold small structured values (parameters, usage, request maps)
whose shape is owned by the service that writes them.

``from storage.models import Clip`` builds only the tables of Clip's area (and those its foreign
keys name): building all 36 table classes costs ~0.1 s, which `aglw clips list` does not pay
(issue 15, bench P11). :func:`all_tables` loads every area: the metadata Alembic compares with
and the schema check see the whole schema.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import MetaData

    from storage.models._base import utcnow
    from storage.models.clips import Dataset, MediaRoot, Clip, ClipQuality
    from storage.models.alm_runs import AlmRun, Prediction
    from storage.models.tagging import TaggerRun, Tag, TagTimeline, TagStatus
    from storage.models.judges import JudgeRun, JudgeCall, Judgment
    from storage.models.humans import (Annotator, CategoryLabel, CategoryPolarity, ClipLabel, LabelHistory,
                                       QualityOverrule)
    from storage.models.curation import CurationRun, CurationCategoryResult, CurationClipResult, Selection
    from storage.models.alm_jobs import AlmJob, AlmAnswer
    from storage.models.events import SpatialEvent
    from storage.models.studies import ErrorModeLabel, JudgeErrorMode, StudyPlan, StudyAssignment, HumanGuess
    from storage.models.web import WebStudy, WebStudyClip, WebParticipant, WebAssignment, WebGuess

AREAS = ('clips', 'alm_runs', 'tagging', 'judges', 'humans', 'curation', 'alm_jobs', 'events', 'studies', 'web')

# table class -> the module under storage/models/ that defines it
_AREA_OF = {
    "Dataset": "clips",
    "MediaRoot": "clips",
    "Clip": "clips",
    "ClipQuality": "clips",
    "AlmRun": "alm_runs",
    "Prediction": "alm_runs",
    "TaggerRun": "tagging",
    "Tag": "tagging",
    "TagTimeline": "tagging",
    "TagStatus": "tagging",
    "JudgeRun": "judges",
    "JudgeCall": "judges",
    "Judgment": "judges",
    "Annotator": "humans",
    "CategoryLabel": "humans",
    "CategoryPolarity": "humans",
    "ClipLabel": "humans",
    "LabelHistory": "humans",
    "QualityOverrule": "humans",
    "CurationRun": "curation",
    "CurationCategoryResult": "curation",
    "CurationClipResult": "curation",
    "Selection": "curation",
    "AlmJob": "alm_jobs",
    "AlmAnswer": "alm_jobs",
    "SpatialEvent": "events",
    "ErrorModeLabel": "studies",
    "JudgeErrorMode": "studies",
    "StudyPlan": "studies",
    "StudyAssignment": "studies",
    "HumanGuess": "studies",
    "WebStudy": "web",
    "WebStudyClip": "web",
    "WebParticipant": "web",
    "WebAssignment": "web",
    "WebGuess": "web",
}

__all__ = ["all_tables", "utcnow", *_AREA_OF]


def all_tables() -> MetaData:
    """The metadata with every table of the schema (imports every area)."""
    from sqlmodel import SQLModel

    for area in AREAS:
        importlib.import_module(f"storage.models.{area}")
    return SQLModel.metadata


def __getattr__(name: str) -> Any:
    if name in _AREA_OF:
        return getattr(importlib.import_module(f"storage.models.{_AREA_OF[name]}"), name)
    if name == "utcnow":
        from storage.models._base import utcnow

        return utcnow
    if name == "ALL_TABLES":
        return all_tables()
    raise AttributeError(f"module 'storage.models' has no attribute {name!r}")
