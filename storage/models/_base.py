"""What every table module shares: the UTC clock and the JSON/Text column helpers."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, Column, Text
from sqlmodel import Field


def utcnow() -> datetime:
    """Timezone-aware UTC now (stored as naive UTC by SQLite, aware by PostgreSQL)."""
    return datetime.now(timezone.utc)


def _json(**kw: Any) -> Any:
    return Field(default=None, sa_column=Column(JSON, **kw))


def _text(**kw: Any) -> Any:
    return Field(default=None, sa_column=Column(Text, **kw))
