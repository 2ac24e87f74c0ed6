"""Errors raised by the storage layer (each message names the file or database)."""


class StoreError(Exception):
    """A project store cannot be opened or written."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer version; it is refused unchanged."""


class ConflictError(StoreError):
    """A concurrent writer changed a row this unit of work expected unchanged.

    ``stored`` and ``yours`` hold the field values on both sides so a person can choose.
    """

    def __init__(self, message: str, *, stored: dict | None = None, yours: dict | None = None,
                 stored_version: int | None = None) -> None:
        super().__init__(message)
        self.stored = stored or {}
        self.yours = yours or {}
        self.stored_version = stored_version
