"""Reading a TOML configuration file into a pydantic model, with one-line errors.

Every configuration file (``config.toml``, ``judges.toml``) is validated by a pydantic model;
a mistake is reported as ``<file>: [table.key] <what is wrong> (got <value>)`` so the person
knows which line to fix, never as a traceback.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from workbench.errors import InputError

M = TypeVar("M", bound=BaseModel)


def read_toml(path: Path, hint: str) -> dict[str, Any]:
    """The parsed file; an InputError naming the file and ``hint`` (what to do) when it is not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML ({exc}); {hint}") from exc


def _where(loc: tuple[Any, ...]) -> str:
    """A TOML location: ('judges', 'x', 'model') -> [judges.x] 'model'."""
    parts = [str(p) for p in loc if not str(p).startswith("function-")]
    if len(parts) <= 1:
        return f"'{parts[0]}'" if parts else "the file"
    return f"[{'.'.join(parts[:-1])}] '{parts[-1]}'"


def validate(model: type[M], data: dict[str, Any], path: Path) -> M:
    """``model`` from ``data``, or an InputError naming the file, the table and key, and the value."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _where(tuple(first["loc"]))
        message = first["msg"]
        if first["type"] == "missing":
            problem = "is missing"
        elif first["type"] == "extra_forbidden":
            problem = "is not a known setting (a typo?)"
        else:
            problem = f"{message[0].lower()}{message[1:]} (got {first.get('input')!r})"
        more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
        raise InputError(f"{path}: {where} {problem}{more}") from None
