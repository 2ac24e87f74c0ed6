"""Errors raised by the storage layer (each message names the file or database)."""


class StoreError(Exception):
    """A project store cannot be opened or written."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer version; it is refused unchanged."""


class ConflictError(StoreError):
    """A concurrent writer changed a row this unit of work expected unchanged."""
