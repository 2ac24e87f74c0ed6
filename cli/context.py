"""Shared plumbing for `aglw` commands: global options, the store, JSON output, long jobs (:func:`run_task`)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from workbench.config import Settings, default_db_location
from workbench.errors import AglwError

if TYPE_CHECKING:
    from storage import Store
    from workbench.tasks import TaskContext, TaskEvent, TaskResult


def open_store(url: str) -> Store:
    """Open a project (SQLAlchemy is imported here, not when the CLI starts)."""
    from storage import open_store as _open

    return _open(url)


# The commands that may create a project file; every other command needs an existing one.
CREATING_COMMANDS = ("`aglw import dataset`", "`aglw demo`")


def project_file_missing(db: str) -> Path | None:
    """The SQLite file ``db`` names when it does not exist (None for an existing file or a server URL)."""
    text = str(db)
    if text.startswith("sqlite:///"):
        # drop URL parameters (?mode=ro&uri=true) and the URI form's "file:" prefix
        text = text[len("sqlite:///"):].split("?", 1)[0].removeprefix("file:")
    elif "://" in text:
        return None
    if text in ("", ":memory:"):
        return None
    path = Path(text).expanduser()
    return None if path.exists() else path


def require_project(db: str) -> str:
    """``db`` itself, or a handled error when it names a SQLite file that does not exist."""
    missing = project_file_missing(db)
    if missing is not None:
        raise AglwError(
            f"no project at {missing}: check --db (or $AGLW_DB); "
            f"only {' and '.join(CREATING_COMMANDS)} create a project"
        )
    return db

_CONSOLES: dict[str, Any] = {}


def console(stream: str = "stdout") -> Any:
    """The rich console of ``stream`` ("stdout" or "stderr"), made on first use: rich is imported
    by the commands that print with it, not by every start-up (`--json` output needs none).

    Results go to stdout (cli.md): `aglw check locations > f` must fill f. Diagnostics use `say`.
    """
    if stream not in _CONSOLES:
        from rich.console import Console

        _CONSOLES[stream] = Console(stderr=stream == "stderr", highlight=False)
    return _CONSOLES[stream]


@dataclass
class AppContext:
    """Global options of one `aglw` invocation."""

    db: str = field(default_factory=default_db_location)
    json: bool = False
    annotator: str | None = None
    _store: Store | None = None

    def store(self, *, create: bool = False, dry_run: bool = False) -> Store:
        """Open the project store once per invocation (migrating it if older).

        A SQLite project that does not exist is an error (a mistyped ``--db`` must not
        silently start an empty project) unless the command creates projects (``create``).
        A dry run never writes: on a project that does not exist yet it validates against an
        empty in-memory project instead of creating the file.
        """
        if self._store is None:
            if dry_run and project_file_missing(self.db) is not None:
                self._store = open_store("sqlite://")
            else:
                self._store = open_store(self.db if create else require_project(self.db))
        return self._store

    def annotator_name(self) -> str:
        """``--annotator``, else the configured default; a handled error when neither is set."""
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


# Whether this command already wrote its JSON value: a command that prints its summary and then
# fails (exit 1, some item failed) must not add an error object, so that stdout stays one value.
_json_written = False


def emit_json(payload: Any) -> None:
    """Write machine-readable output on stdout (NaN/inf become null)."""
    global _json_written
    sys.stdout.write(json.dumps(_jsonable(payload), ensure_ascii=False, indent=2, default=str))
    sys.stdout.write("\n")
    sys.stdout.flush()
    _json_written = True


def json_written(reset: bool = False) -> bool:
    """Whether :func:`emit_json` wrote this command's value (``reset``: a new command starts)."""
    global _json_written
    written = _json_written
    if reset:
        _json_written = False
    return written


def check_choice(value: Any, choices: Any, option: str) -> Any:
    """``value`` when it is one of ``choices``; otherwise a usage error (exit 2) naming the option
    and the choices, as click gives for a bad option."""
    allowed = tuple(choices)
    if value not in allowed:
        raise typer.BadParameter(f"{value!r} is not one of: {', '.join(str(c) for c in allowed)}", param_hint=option)
    return value


def usage_error(message: str, option: str | None = None) -> Exception:
    """The usage error (exit 2, as click gives for a bad option) of an option value that is malformed
    or out of range, or of options that do not go together; ``option`` is the one named first.
    Raise it: ``raise usage_error("must look like 1600x1000, got '12x'", "--size")``. What the
    project holds (a clip key that is not there) is a handled error instead (exit 1)."""
    return typer.BadParameter(message, param_hint=option)


def say(message: str, *, markup: bool = False) -> None:
    """A diagnostic on stderr (progress, warnings, hints): never a result.

    The text is printed as written (an extra's name "[parquet]", a key "[b]" stay) and is not
    wrapped; ``markup`` lets a caller colour its own fixed words (escape any data in it).
    """
    console("stderr").print(message, markup=markup, soft_wrap=True)


def show(renderable: Any, *, min_width: int | None = None) -> None:
    """A result for the reader on stdout: a line of text or a rich table.

    ``min_width`` keeps a wide table readable when stdout is a pipe or a file (rich
    assumes 80 columns there and would elide every cell).
    """
    # A line of text is data (a clip title "[b]x", a note "[/]"): never read as rich markup.
    # A line stays one line in a pipe (rich would wrap it at 80 columns and break a path in two).
    text = isinstance(renderable, str)
    options = {"markup": False, "soft_wrap": True} if text else {}
    if min_width is not None and console().width < min_width:
        from rich.console import Console

        Console(width=min_width, highlight=False).print(renderable, **options)
    else:
        console().print(renderable, **options)


# Exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
EXIT_CANCELLED = 130
# Failed items printed on stderr as they happen; the rest only in the command's result.
MAX_FAILURE_LINES = 20


def run_task(description: str, job: Callable[[TaskContext], Any]) -> TaskResult:
    """Run a long job with one progress bar on stderr; the one CLI renderer of the task protocol.

    The bar follows the job's :class:`~workbench.tasks.TaskContext` events; each failed item
    is printed on stderr as it happens (``KEY: reason``) and notes as they come. Ctrl-C
    cancels the job's token instead of killing it: the item in flight finishes and is
    stored, then the command exits with status 130 and a one-line "run it again to resume"
    (a second Ctrl-C stops at once).

    Returns
    -------
    TaskResult
        The finished job (status ``done``; items may have failed: see ``failures``).

    Raises
    ------
    typer.Exit
        Code 130 when cancelled.
    Exception
        The job's own error when it failed (the command reports it as any other error).
    """
    import signal
    import threading

    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from workbench.tasks import TaskContext, run_task as run_job

    stderr = console("stderr")
    context = TaskContext()
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=False,
        # A log file gets the failures and the result, not a bar redrawn per item.
        disable=not stderr.is_terminal,
    )
    bar = progress.add_task(escape(description), total=None)

    shown_failures = 0

    def listen(event: TaskEvent) -> None:
        nonlocal shown_failures
        progress.update(bar, completed=event.done, total=event.total or None)
        if event.kind == "item" and event.item is not None and not event.item.ok:
            shown_failures += 1
            # A pool can fail by the thousand; the result (and --json) lists every failure.
            if shown_failures <= MAX_FAILURE_LINES:
                progress.console.print(f"{event.item.key}: {event.item.error}", markup=False, highlight=False,
                                       soft_wrap=True)
            elif shown_failures == MAX_FAILURE_LINES + 1:
                progress.console.print("further failures are not printed as they happen", markup=False,
                                       highlight=False)
        elif event.kind == "note":
            progress.console.print(event.message, markup=False, highlight=False, soft_wrap=True)

    context.subscribe(listen)

    def on_interrupt(_signum: int, _frame: Any) -> None:
        context.cancel()
        # A second Ctrl-C is the default one: stop at once (an open transaction is rolled back).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        progress.console.print("stopping after the item in flight (Ctrl-C again to stop at once)",
                               markup=False, highlight=False)

    # Signal handlers can only be set from the main thread (a test runner may call from another);
    # a process started with Ctrl-C ignored (a background job, nohup) keeps ignoring it.
    handle_interrupt = (threading.current_thread() is threading.main_thread()
                        and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN)
    previous = signal.signal(signal.SIGINT, on_interrupt) if handle_interrupt else None
    try:
        with progress:
            result = run_job(description, job, context)
    finally:
        if handle_interrupt:
            # None: the earlier handler was not set from Python (an embedding host); leave the default.
            signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    if result.status == "cancelled":
        say(result.message)
        raise typer.Exit(EXIT_CANCELLED)
    if result.status == "failed":
        raise result.error if result.error is not None else AglwError(result.message)
    return result
