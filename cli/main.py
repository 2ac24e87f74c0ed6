"""The `aglw` command line (contract: shared design doc cli.md).

Each pipeline area registers its commands from its own module, so areas can
grow without touching one another.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from cli.context import AppContext, json_written
from cli.registry import COMMANDS, HELP_OF, MODULE_OF
from storage.errors import StoreError
from workbench.config import default_db_location
from workbench.errors import AglwError, UsageError

# Help texts are read as Markdown: ``--dir`` shows as code, and "[scale]" stays as written (as rich
# markup it was swallowed as a style tag). A flag shows no type (typer would print "--json <bool>").
HELP_MARKUP = "markdown"


def _flag_without_type(display_type_rich):  # type: ignore[no-untyped-def]
    def display(self, ctx):  # type: ignore[no-untyped-def]
        return None if getattr(self, "is_flag", False) else display_type_rich(self, ctx)

    return display


typer.core.TyperOption.display_type_rich = _flag_without_type(typer.core.TyperOption.display_type_rich)  # type: ignore[method-assign]

# The click commands each command module registers, built once per process (tests call
# ``main`` many times in one process).
_LOADED: dict[str, dict[str, Any]] = {}


def _module_commands(module_name: str) -> dict[str, Any]:
    """Import one command module and build the click commands it registers."""
    if module_name not in _LOADED:
        import importlib

        module = importlib.import_module(f"cli.{module_name}")
        holder = typer.Typer(rich_markup_mode=HELP_MARKUP)
        holder.callback()(lambda: None)  # a callback makes typer build a group, even for one command
        module.register(holder)
        _LOADED[module_name] = dict(typer.main.get_group(holder).commands)
    return _LOADED[module_name]


class LazyGroup(TyperGroup):
    """The root `aglw` group: a command's module is imported when that command runs.

    The help listing comes from :mod:`cli.registry` (placeholders carrying the command's one
    line), so `aglw --help` imports no command module; resolving a command to run it, or
    asking for its own help, loads the real one.
    """

    def list_commands(self, ctx: Any) -> list[str]:
        return [name for name, _, _ in COMMANDS]

    def load(self, name: str) -> Any:
        """The real command ``name`` (None when there is no such command)."""
        if name not in self.commands and name in MODULE_OF:
            for command_name, command in _module_commands(MODULE_OF[name]).items():
                self.commands.setdefault(command_name, command)
        return self.commands.get(name)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in HELP_OF:
            return TyperCommand(name=cmd_name, short_help=HELP_OF[cmd_name])
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args:
            self.load(args[0])
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:
            # typer suggests among the commands it has; here that is only the loaded ones.
            message = getattr(exc, "message", None)
            if args and isinstance(message, str) and "Did you mean" not in message:
                from difflib import get_close_matches

                matches = get_close_matches(args[0], list(MODULE_OF))
                if matches:
                    exc.message = f"{message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"  # type: ignore[attr-defined]
            raise


app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    name="aglw",
    help="AGL Workbench: curate and validate audio geo-localization data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=LazyGroup,
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
        elif isinstance(command, LazyGroup) and command.load(token) is not None:
            command = command.commands[token]
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
    if isinstance(exc, OSError) and exc.errno is not None:  # a full disk met outside a named file
        return f"the system refused the operation ({exc.strerror or exc}); nothing half-written was kept"
    return None


def _wants_json(args: list[str]) -> bool:
    """Whether ``--json`` is among the global options (hoisted to the front of ``args``)."""
    i = 0
    while i < len(args) and args[i].split("=", 1)[0] in _GLOBAL_OPTIONS:
        if args[i] == "--json":
            return True
        i += 2 if _GLOBAL_OPTIONS[args[i].split("=", 1)[0]] and "=" not in args[i] else 1
    return False


def _one_line(message: str) -> str:
    """A message as one line: every handled error is one line on stderr (a driver's message may span several)."""
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip()) or "failed"


def report_error(message: str, *, exit_code: int = 1, json_output: bool = False) -> int:
    """Print a handled error: one line on stderr, and with ``--json`` one JSON object on stdout."""
    line = _one_line(message)
    sys.stderr.write(f"aglw: error: {line}\n")
    sys.stderr.flush()
    if json_output and not json_written():  # a summary already written stays the one JSON value
        import json

        sys.stdout.write(json.dumps({"error": line, "exit_code": exit_code}, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return exit_code


def _click_exceptions() -> tuple[type[BaseException], ...]:
    """Click's exception base classes: typer ships its own copy of click beside any installed one."""
    import importlib

    found = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(name).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _usage_error(exc: Any) -> str:
    """A click usage error as one line, with where to find help."""
    message = exc.format_message()
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        message = f"{message.rstrip('.')} (see `{ctx.command_path} --help`)"
    return message


# Start-up creates only long-lived objects (modules, classes, the table mappers): collecting them
# over and over costs ~15 % of `aglw clips list` (bench P11). Garbage collection waits this long,
# then resumes: any longer command (a judge run, the GUI) collects as usual.
_GC_PAUSE_S = 2.0


def _pause_garbage_collection() -> None:
    import gc
    import threading

    if not gc.isenabled():
        return

    gc.disable()
    timer = threading.Timer(_GC_PAUSE_S, gc.enable)
    timer.daemon = True
    timer.start()


def main(argv: list[str] | None = None) -> int:
    """Console entry point: handled errors print one line on stderr and exit 1."""
    if argv is None:  # a process of its own (tests calling main() keep their collector as it is)
        _pause_garbage_collection()
    json_output = False
    json_written(reset=True)
    try:
        # The click command tree is built once (typer's app() would build it a second time:
        # ~0.1 s of every start-up, measured by bench/bench_p11_startup.py).
        command = typer.main.get_command(app)
        args = hoist_global_options(list(sys.argv[1:] if argv is None else argv), command)
        json_output = _wants_json(args)
        # Not standalone: usage errors come here and are printed as one line like every other error.
        code = command(args=args, standalone_mode=False)
        return code if isinstance(code, int) else 0
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except _click_exceptions() as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `aglw` alone, `aglw study`: the help, exit 2
            exc.show()
            return exc.exit_code
        return report_error(_usage_error(exc), exit_code=exc.exit_code, json_output=json_output)
    except UsageError as exc:  # an option's value refused where it is used: a usage error all the same
        return report_error(str(exc), exit_code=2, json_output=json_output)
    except (AglwError, StoreError) as exc:
        return report_error(str(exc), json_output=json_output)
    except Exception as exc:
        # click's Abort (end of input at a prompt) is no failure of the program either
        message = "aborted" if type(exc).__name__ == "Abort" else _environment_failure(exc)
        if message is None:
            raise
        return report_error(message, json_output=json_output)
    except KeyboardInterrupt:
        sys.stderr.write("aglw: interrupted; completed work is saved, rerun to resume\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
