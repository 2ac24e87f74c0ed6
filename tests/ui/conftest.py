"""Fixtures of the GUI tests: one generated demo project, copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_unexpected_dialogs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A modal dialog nobody expected fails the test at once instead of hanging it offscreen.

    Tests that expect a dialog patch ``QMessageBox.exec`` (or the window's ask method) themselves."""
    from PySide6.QtWidgets import QMessageBox

    def refuse(box, *args, **kwargs):  # type: ignore[no-untyped-def]
        text = box.text() if isinstance(box, QMessageBox) else ""
        info = box.informativeText() if isinstance(box, QMessageBox) else ""
        raise AssertionError(f"unexpected modal dialog: {text} {info}".strip())

    monkeypatch.setattr(QMessageBox, "exec", refuse)


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workbench.demo import create_demo_project

    return create_demo_project(tmp_path_factory.mktemp("demo-template")).db_path


@pytest.fixture
def demo_db(demo_template: Path, tmp_path: Path) -> Path:
    """A private copy of the demo project database (its media root stays shared, read-only use)."""
    target = tmp_path / "demo.sqlite"
    shutil.copy(demo_template, target)
    return target


@pytest.fixture
def demo_store(demo_db: Path):  # type: ignore[no-untyped-def]
    from storage import open_store

    store = open_store(demo_db)
    yield store
    store.dispose()


@pytest.fixture
def make_window(qtbot, demo_store):  # type: ignore[no-untyped-def]
    """Build a main window on the demo project with a silent player."""
    from ui.main_window import MainWindow
    from workbench.audio.playback import NullSink, Player
    from workbench.labels import LabelService

    windows = []

    def build(*, force_sync: bool = True, annotator: str = "tester"):  # type: ignore[no-untyped-def]
        info = LabelService(demo_store).ensure_annotator(annotator)
        window = MainWindow(demo_store, info, player=Player(NullSink()), force_sync=force_sync)
        qtbot.addWidget(window)
        windows.append(window)
        return window

    yield build
    for window in windows:
        window.shutdown()
