"""Shared plumbing for `aglw` commands: global options, the store, JSON output, progress."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from storage import Store, open_store
from workbench.config import Settings, default_db_location

T = TypeVar("T")

stderr = Console(stderr=True, highlight=False)


@dataclass
class AppContext:
    """Global options of one `aglw` invocation."""

    db: str = field(default_factory=default_db_location)
    json: bool = False
    annotator: str | None = None
    _store: Store | None = None

    def store(self) -> Store:
        """Open the project store once per invocation (creating or migrating it)."""
        if self._store is None:
            self._store = open_store(self.db)
        return self._store

    def annotator_name(self) -> str:
        """``--annotator``, else the configured default; a handled error when neither is set."""
        from workbench.errors import AglwError

        name = self.annotator or Settings.load().annotator
        if not name:
            raise AglwError("no annotator: pass --annotator NAME or set `annotator` in config.toml")
        return name

    def close(self) -> None:
        if self._store is not None:
            self._store.dispose()
            self._store = None


def app_context(ctx: typer.Context) -> AppContext:
    """The AppContext of the running command (created by the root callback)."""
    obj = ctx.find_root().obj
    if not isinstance(obj, AppContext):  # pragma: no cover - only when called outside the app
        obj = AppContext()
        ctx.find_root().obj = obj
    return obj


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) > 0:  # numpy/torch arrays
        return _jsonable(value.tolist())
    if hasattr(value, "item") and callable(value.item):  # numpy scalars, 0-d arrays
        return _jsonable(value.item())
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    return value


def emit_json(payload: Any) -> None:
    """Write machine-readable output on stdout (NaN/inf become null)."""
    sys.stdout.write(json.dumps(_jsonable(payload), ensure_ascii=False, indent=2, default=str))
    sys.stdout.write("\n")
    sys.stdout.flush()


def say(message: str) -> None:
    """A human message on stderr."""
    stderr.print(message)


@contextmanager
def progress_bar(description: str, total: int | None) -> Iterator[Any]:
    """A rich progress bar on stderr; yields ``advance(n=1)``."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=False,
        disable=not stderr.is_terminal and total is not None and total <= 1,
    )
    with progress:
        task = progress.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            progress.advance(task, n)

        yield advance


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar on stderr."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with progress_bar(description, total) as advance:
        for item in items:
            yield item
            advance()
