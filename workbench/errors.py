"""User-facing errors: each message names the file, line, field or channel and what to do."""

# Store errors live in storage.errors (import them from there): pure modules raise these and
# must not load the store layer to do it.


class AglwError(Exception):
    """A handled error: the CLI prints its message on one line and exits with code 1."""


class InputError(AglwError):
    """Bad input (file, table, record, reply); nothing was stored."""


__all__ = ["AglwError", "InputError"]
