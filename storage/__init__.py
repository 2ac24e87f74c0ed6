"""Storage layer: SQLModel tables, engine and sessions, Alembic migrations (no Qt)."""

from storage.db import Store, open_store, resolve_url
from storage.errors import ConflictError, SchemaTooNewError, StoreError

__all__ = ["Store", "open_store", "resolve_url", "StoreError", "SchemaTooNewError", "ConflictError"]
