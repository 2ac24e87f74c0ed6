"""Running ``aglw`` in-process from tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli.main import main


def command_tree() -> Any:
    """The root command with every lazy command loaded (for tests that walk the whole tree; the
    program itself loads a command's module only when it is used)."""
    import typer

    from cli.main import app
    from cli.registry import MODULE_OF

    root = typer.main.get_command(app)
    for name in MODULE_OF:
        root.load(name)
    return root


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """Run ``aglw argv`` (which must include ``--json``), require exit status 0, return the parsed output.

    Output printed before the call is dropped first; on failure the assertion shows stderr.
    """
    capsys.readouterr()
    rc = main(list(argv))
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return json.loads(captured.out)
