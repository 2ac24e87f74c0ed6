"""The `aglw` command line (contract: shared design doc cli.md).

Each pipeline area registers its commands from its own module, so areas can
grow without touching one another.
"""

from __future__ import annotations

import logging
import sys
from typing import Optional

import typer

from storage.errors import StoreError
from workbench.cli import (
    agreement_cmds,
    audio_cmds,
    curation_cmds,
    data_cmds,
    gui_cmds,
    judge_cmds,
    label_cmds,
    tagging_cmds,
)
from workbench.cli.context import AppContext
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


for _module in (data_cmds, label_cmds, audio_cmds, tagging_cmds, judge_cmds, curation_cmds, agreement_cmds, gui_cmds):
    _module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: handled errors print one line on stderr and exit 1."""
    try:
        app(args=argv, standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except (AglwError, StoreError) as exc:
        sys.stderr.write(f"aglw: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("aglw: interrupted; completed work is saved, rerun to resume\n")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
