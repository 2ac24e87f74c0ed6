"""User-facing errors: each message names the file, line, field or channel and what to do."""

# Store errors live in storage.errors (import them from there): pure modules raise these and
# must not load the store layer to do it.


class AglwError(Exception):
    """A handled error: the CLI prints its message on one line and exits with code 1."""


class InputError(AglwError):
    """Bad input (file, table, record, reply); nothing was stored."""


class UsageError(InputError):
    """An option's value that is malformed or out of range, or options that do not go together,
    found where the value is used: the CLI exits 2 (a usage error, as click gives for a bad option);
    the message names the option. Elsewhere (the GUI) it is an InputError like any other."""


__all__ = ["AglwError", "InputError", "UsageError"]
