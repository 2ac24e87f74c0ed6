"""The `aglw` command line (contract: shared design doc cli.md).

Each pipeline area registers its commands from its own module, so areas can
grow without touching one another.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Optional

import typer

from storage.errors import StoreError
from cli import (
    agreement_cmds,
    alm_cmds,
    audio_cmds,
    clips_cmds,
    curation_cmds,
    data_cmds,
    events_cmds,
    gui_cmds,
    judge_cmds,
    label_cmds,
    pool_cmds,
    study_cmds,
    tagging_cmds,
)
from cli.context import AppContext
from workbench.config import default_db_location
from workbench.errors import AglwError

app = typer.Typer(
    name="aglw",
    help="AGL Workbench: curate and validate audio geo-localization data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    ctx: typer.Context,
    db: Optional[str] = typer.Option(
        None, "--db", help="Project: SQLite file path or SQLAlchemy URL (default: $AGLW_DB, else ./aglw.sqlite)."
    ),
    json_output: bool = typer.Option(False, "--json", help="Machine-readable JSON on stdout."),
    annotator: Optional[str] = typer.Option(None, "--annotator", help="Who is making edits."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log details on stderr."),
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr)
    ctx.obj = AppContext(db=db or default_db_location(), json=json_output, annotator=annotator)
    ctx.call_on_close(ctx.obj.close)


for _module in (
    data_cmds,
    clips_cmds,
    label_cmds,
    audio_cmds,
    pool_cmds,
    tagging_cmds,
    judge_cmds,
    curation_cmds,
    alm_cmds,
    agreement_cmds,
    study_cmds,
    events_cmds,
    gui_cmds,
):
    _module.register(app)


# The root callback's options and whether each takes a value.
_GLOBAL_OPTIONS = {"--db": True, "--annotator": True, "--json": False, "--verbose": False, "-v": False}


def hoist_global_options(argv: list[str], command: Any = None) -> list[str]:
    """Move the global options to the front, wherever they were typed (cli.md: before or after).

    The command tree is walked with click's own view of each command (``command``: the click
    command of ``app``, built when not given), so a value of a command's option that happens
    to look like a global flag (``--note --json``) stays a value. Nothing after ``--`` is touched.
    """
    # Typer ships its own copy of click, so the tree is read by duck typing, not isinstance.
    if command is None:
        command = typer.main.get_command(app)
    hoisted: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            rest.extend(argv[i:])
            break
        name = token.split("=", 1)[0]
        if name in _GLOBAL_OPTIONS:
            takes_value = _GLOBAL_OPTIONS[name] and "=" not in token
            hoisted.extend(argv[i : i + (2 if takes_value else 1)])
            i += 2 if takes_value else 1
            continue
        rest.append(token)
        if token.startswith("-") and "=" not in token:
            option = next(
                (p for p in command.params if p.param_type_name == "option" and token in p.opts + p.secondary_opts),
                None,
            )
            if option is not None and not option.is_flag and not option.count and option.nargs > 0:
                rest.extend(argv[i + 1 : i + 1 + option.nargs])
                i += 1 + option.nargs
                continue
        elif token in getattr(command, "commands", {}):
            command = command.commands[token]
        i += 1
    return hoisted + rest


def _environment_failure(exc: Exception) -> str | None:
    """One line for a failure of the machine rather than of the program, else None.

    A project locked by another writer past the wait, a read-only or full disk, a file that
    is not a database: the store's transaction was rolled back, so nothing half-written
    remains; the user needs to know what happened and what to do, not a traceback.
    """
    from sqlalchemy.exc import SQLAlchemyError

    if isinstance(exc, SQLAlchemyError):
        cause = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        hint = {
            "database is locked": "another program is writing to the project; retry when it has finished",
            "attempt to write a readonly database": "the project file or its folder is read-only; "
            "make it writable or copy the project",
            "database or disk is full": "free some disk space and retry",
            "file is not a database": "--db names a file that is not an AGL Workbench project",
        }.get(cause.lower(), "retry, or check the database server")
        return f"the project store refused the operation ({cause}): {hint}. Nothing was changed by it."
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return None


def main(argv: list[str] | None = None) -> int:
    """Console entry point: handled errors print one line on stderr and exit 1."""
    try:
        # The click command tree is built once (typer's app() would build it a second time:
        # ~0.1 s of every start-up, measured by bench/bench_p11_startup.py).
        command = typer.main.get_command(app)
        args = hoist_global_options(list(sys.argv[1:] if argv is None else argv), command)
        command(args=args, standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except (AglwError, StoreError) as exc:
        sys.stderr.write(f"aglw: error: {exc}\n")
        return 1
    except Exception as exc:
        message = _environment_failure(exc)
        if message is None:
            raise
        sys.stderr.write(f"aglw: error: {message}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("aglw: interrupted; completed work is saved, rerun to resume\n")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
