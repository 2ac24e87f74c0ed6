"""The one UTC timestamp column type the Core read model (:mod:`storage.tables`) reads with.

SQLModel stores every ``datetime`` field through ``sqlmodel.sql.sqltypes.UTCDateTime``; importing
it imports all of SQLModel and pydantic (~80 ms), which a read that starts in a blink (issue 32)
does not pay. This type gives back what SQLModel's gives back — aware datetimes in UTC (SQLite
keeps them naive, as UTC) — and ``tests/storage/test_core_tables.py`` holds the two equal.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import types


class UTCDateTime(types.TypeDecorator[datetime]):
    """Aware datetimes in UTC, as the ORM models read them (reads only: writes go through the models)."""

    impl = types.DateTime
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(timezone=True)

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.utcoffset() is None:
            raise ValueError("a timestamp compared with a stored one needs its time zone (datetime.now(timezone.utc))")
        return None if value is None else value.astimezone(timezone.utc)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=timezone.utc) if value.utcoffset() is None else value.astimezone(timezone.utc)
