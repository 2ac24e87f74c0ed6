"""Running ``aglw`` in-process from tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cli.main import main


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """Run ``aglw argv`` (which must include ``--json``), require exit status 0, return the parsed output.

    Output printed before the call is dropped first; on failure the assertion shows stderr.
    """
    capsys.readouterr()
    rc = main(list(argv))
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return json.loads(captured.out)
