"""stderr is quiet on success (issue 39): `aglw screenshot` prints no "This plugin does not support
propagateSizeHints()" (the offscreen platform's note, 2-5 times a picture), and a command that asks
the gazetteer no "Loading formatted geocoded file..." (reverse_geocoder's progress line).

Run as the user runs them, in a fresh process: in-process, pytest-qt's own message handler and an
already loaded gazetteer would hide both."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _aglw(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "cli.main", *argv], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[2], timeout=300, check=False)


def test_screenshot_and_a_guess_leave_stderr_empty(demo_db, tmp_path) -> None:  # type: ignore[no-untyped-def]
    shot = _aglw("--db", str(demo_db), "screenshot", "--clip", "DEMO-0004", "--out", str(tmp_path / "s.png"))
    assert shot.returncode == 0, shot.stderr
    assert shot.stdout.startswith("wrote ") and shot.stderr == ""
    guess = _aglw("--db", str(demo_db), "--annotator", "ada", "study", "guess", "--clip", "DEMO-0001",
                  "--lat", "50.06", "--lon", "19.94")  # the guess's place comes from the gazetteer
    assert guess.returncode == 0, guess.stderr
    assert guess.stderr == "", guess.stderr


def test_other_qt_messages_still_reach_stderr() -> None:
    """Only the one offscreen note is dropped: any other Qt warning is printed as before."""
    code = ("from PySide6.QtCore import qWarning\n"
            "from ui.screenshot import quiet_offscreen_notes\n"
            "with quiet_offscreen_notes():\n"
            "    qWarning('This plugin does not support propagateSizeHints()')\n"
            "    qWarning('a real problem')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=120, check=False,
                         env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert run.returncode == 0, run.stderr
    assert "a real problem" in run.stderr and "propagateSizeHints" not in run.stderr
