"""Storage layer: SQLModel tables, engine and sessions, Alembic migrations (no Qt).

``Store``, ``open_store`` and ``resolve_url`` load SQLAlchemy on first use, so importing the
light error types (``storage.errors``) does not: ``aglw --help`` must answer in a blink.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from storage.errors import ConflictError, SchemaTooNewError, StoreError

if TYPE_CHECKING:
    from storage.db import Store, display_url, open_store, resolve_url

__all__ = ["Store", "open_store", "resolve_url", "display_url", "StoreError", "SchemaTooNewError", "ConflictError"]

_LAZY = {"Store", "open_store", "resolve_url", "display_url"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from storage import db

        return getattr(db, name)
    raise AttributeError(f"module 'storage' has no attribute {name!r}")
