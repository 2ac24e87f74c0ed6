"""Reads off the GUI thread whose latest result alone is shown (ui.workers.LatestResult); the
leaderboard's live refresh that uses them is tested in test_cockpit_leaderboard.py."""

from __future__ import annotations

import threading
from typing import Any

from ui.workers import LatestResult


def test_a_slow_read_overtaken_by_a_newer_one_is_dropped(qtbot) -> None:  # type: ignore[no-untyped-def]
    reader = LatestResult()
    shown: list[Any] = []
    reader.delivered.connect(shown.append)
    release = threading.Event()
    threads: list[int] = []

    def slow() -> str:
        threads.append(threading.get_ident())
        release.wait(10)
        return "old"

    reader.submit(slow)
    qtbot.waitUntil(lambda: bool(threads))  # running on the pool thread
    reader.submit(lambda: "new")  # waits behind the slow one (one thread)
    release.set()
    qtbot.waitUntil(lambda: shown == ["new"] and reader.dropped == 1)
    assert threads[0] != threading.get_ident()
    reader.shutdown()
    assert shown == ["new"]


def test_a_failed_read_is_reported_and_an_invalidated_one_dropped(qtbot) -> None:  # type: ignore[no-untyped-def]
    reader = LatestResult()
    failures: list[str] = []
    shown: list[Any] = []
    reader.failed.connect(failures.append)
    reader.delivered.connect(shown.append)

    def broken() -> None:
        raise OSError("database is locked")

    reader.submit(broken)
    qtbot.waitUntil(lambda: bool(failures))
    assert failures == ["OSError: database is locked"]
    release = threading.Event()
    reader.submit(lambda: release.wait(10) and "stale")
    reader.invalidate()  # e.g. a synchronous re-read showed newer data meanwhile
    release.set()
    qtbot.waitUntil(lambda: reader.dropped == 1)
    reader.shutdown()
    assert shown == []
