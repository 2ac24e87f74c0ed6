"""Project ▸ Open project…: the new project opens in a new window and the old store is disposed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import shiboken6

import storage
from workbench.labels import LabelService

# the offscreen platform cannot resize a shown top-level window to its size hints
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

class DisposeSpy:
    """Counts ``dispose`` calls on a store and still disposes it."""

    def __init__(self, store, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
        self.calls = 0
        original = store.dispose

        def dispose() -> None:
            self.calls += 1
            original()

        monkeypatch.setattr(store, "dispose", dispose)


def _window(qtbot, store):  # type: ignore[no-untyped-def]
    from ui.main_window import MainWindow
    from workbench.audio.playback import NullSink, Player

    info = LabelService(store).ensure_annotator("tester")
    window = MainWindow(store, info, player=Player(NullSink()), force_sync=True)
    window.show()
    return window


def test_open_project_disposes_the_old_store_and_the_new_window_owns_its_store(
    qtbot, demo_store, demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other.sqlite"
    shutil.copy(demo_db, other)
    old_spy = DisposeSpy(demo_store, monkeypatch)
    window = _window(qtbot, demo_store)

    replacement = window.open_project(str(other))
    assert replacement is not None
    qtbot.addWidget(replacement)
    assert Path(replacement.store.sqlite_path) == other
    assert replacement.annotator.name == "tester" and replacement.cockpit is not None
    assert old_spy.calls == 1
    qtbot.waitUntil(lambda: not shiboken6.isValid(window))  # the old window is deleted, not just hidden

    new_spy = DisposeSpy(replacement.store, monkeypatch)
    replacement.close()
    assert new_spy.calls == 1


def test_a_project_that_cannot_be_opened_leaves_the_current_one_and_closes_what_it_opened(
    qtbot, demo_store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_spy = DisposeSpy(demo_store, monkeypatch)
    window = _window(qtbot, demo_store)
    qtbot.addWidget(window)
    opened = []
    real_open_store = storage.open_store

    def open_and_remember(target):  # type: ignore[no-untyped-def]
        store = real_open_store(target)
        opened.append(DisposeSpy(store, monkeypatch))
        return store

    def refuse(self, name):  # type: ignore[no-untyped-def]
        raise RuntimeError("annotator table is read-only")

    monkeypatch.setattr(storage, "open_store", open_and_remember)
    monkeypatch.setattr(LabelService, "ensure_annotator", refuse)
    assert window.open_project(str(tmp_path / "fresh.sqlite")) is None
    assert len(opened) == 1 and opened[0].calls == 1  # the half-opened store is not left open
    assert old_spy.calls == 0 and window.isVisible() and shiboken6.isValid(window)
    assert "could not open" in window.statusBar().currentMessage()

    monkeypatch.setattr(storage, "open_store", real_open_store)
    assert window.open_project("postgresql+psycopg://someone:hunter2@127.0.0.1:1/none") is None
    message = window.statusBar().currentMessage()
    assert "could not open" in message and "hunter2" not in message
    assert old_spy.calls == 0


def test_a_window_kept_open_for_its_running_job_stays_and_the_new_project_closes_again(
    qtbot, demo_store, demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from ui.cockpit.jobs import JobSpec

    other = tmp_path / "other.sqlite"
    shutil.copy(demo_db, other)
    old_spy = DisposeSpy(demo_store, monkeypatch)
    window = _window(qtbot, demo_store)
    qtbot.addWidget(window)
    started, release = threading.Event(), threading.Event()

    def run(task) -> str:  # type: ignore[no-untyped-def]
        started.set()
        release.wait(30)
        task.item_done("k")
        return "all done"

    jobs = window.cockpit.jobs
    assert jobs.start(JobSpec("Count clips", run)) and started.wait(10)
    opened = []
    real_open_store = storage.open_store

    def open_and_remember(target):  # type: ignore[no-untyped-def]
        store = real_open_store(target)
        opened.append(DisposeSpy(store, monkeypatch))
        return store

    monkeypatch.setattr(storage, "open_store", open_and_remember)
    monkeypatch.setattr(window, "ask_about_running_job", lambda: False)  # "keep it running"
    assert window.open_project(str(other)) is None
    assert window.isVisible() and shiboken6.isValid(window) and old_spy.calls == 0
    assert jobs.running and not jobs.context.cancelled
    assert len(opened) == 1 and opened[0].calls == 1  # the new project's window closed with its store
    release.set()
    qtbot.waitUntil(lambda: not jobs.running, timeout=10_000)
    assert jobs.last_status == "done"
