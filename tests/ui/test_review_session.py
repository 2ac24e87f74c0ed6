"""One review session (issue [O]): panels receive a typed session, never the window.

A panel installed on a bare :class:`ui.session.ReviewSession` (no window at all) follows the shown
clip and edits through the session's stack; the install functions name no ``window: Any``; the
Review menu's guess-mode action is added to the menu the window hands over, not found by its text.
"""

from __future__ import annotations

import inspect
import typing

import pytest
from PySide6.QtWidgets import QTabWidget

from ui.error_modes_panel import install_error_modes
from ui.session import ReviewSession
from workbench.labels import LabelService
from workbench.review.visibility import VisibilityPolicy
from workbench.studies.error_modes import ErrorModeService


def _session(store, qtbot):  # type: ignore[no-untyped-def]
    annotator = LabelService(store).ensure_annotator("tester")
    return ReviewSession(store, annotator, VisibilityPolicy(blind_mode=True))


def test_a_panel_works_on_a_session_without_a_window(demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    session = _session(demo_store, qtbot)
    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    panel = install_error_modes(session, tabs, session.clipShown)
    assert [tabs.tabText(i) for i in range(tabs.count())] == ["Error modes"]
    clip_id = session.review.clip_id_for_key("DEMO-0004")  # the ALM answered 4,000 km away: a wrong answer
    detail = session.read_detail(clip_id)
    assert not panel.enabled_for_answer  # not told yet
    session.clipShown.emit(clip_id)
    assert panel.enabled_for_answer and detail.key in panel.title.text()
    statuses: list[str] = []
    edits: list[object] = []
    session.status.connect(statuses.append)
    session.edited.connect(edits.append)
    panel.toggle("bird_bias")
    stored = ErrorModeService(demo_store).labels(clip_id=clip_id, alm_run_id=detail.alm_run_id,
                                                 annotator_id=session.annotator.id)
    assert [label.modes for label in stored] == [("bird_bias",)]
    assert panel.modes == ("bird_bias",) and len(edits) == 1 and statuses[-1].startswith("saved:")
    session.undo()
    assert panel.modes == () and statuses[-1].startswith("undone:")


def test_the_session_re_reads_the_shown_clip_and_tells_the_policy(demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    session = _session(demo_store, qtbot)
    clip_id = session.review.clip_id_for_key("DEMO-0001")
    session.read_detail(clip_id)
    assert session.visibility.clip.detail is session.detail and not session.visibility.judges_visible()
    changed: list[bool] = []
    session.detailChanged.connect(lambda: changed.append(True))
    LabelService(demo_store).set_clip_label(session.annotator.id, clip_id, rating=5)
    session.refresh_detail()
    assert changed and session.detail.own_label.rating == 5
    assert session.visibility.clip.detail is session.detail  # the policy sees the new detail
    assert session.visibility.reveal() is None and session.visibility.judges_visible()


@pytest.mark.parametrize("module", ["ui.error_modes_panel", "ui.cockpit.guess_mode", "ui.events_panel", "ui.cockpit"])
def test_no_install_function_takes_an_untyped_window(module: str) -> None:
    import importlib

    loaded = importlib.import_module(module)
    installers = [f for name, f in vars(loaded).items() if name.startswith("install_") and inspect.isfunction(f)]
    assert installers
    for install in installers:
        from ui.player import PlayerView  # named under TYPE_CHECKING in the modules

        hints = typing.get_type_hints(install, vars(loaded) | {"ReviewSession": ReviewSession, "PlayerView": PlayerView})
        assert hints.get("session") is ReviewSession, install.__name__
        assert all(hint is not typing.Any for hint in hints.values()), install.__name__


def test_guess_mode_is_added_to_the_menu_the_window_hands_over(make_window) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.review_menu.setTitle("Renamed")  # a menu found by its text would be lost now
    assert window.guess_mode.action in window.review_menu.actions()
    assert window.guess_mode.session is window.session and window.spatial_events.session is window.session


def test_an_edit_the_service_refuses_is_shown_not_raised(demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    from workbench.commands import Command
    from workbench.errors import InputError

    class Refused(Command):
        description = "a refused edit"
        clip_id = None
        row_key = None

        def execute(self) -> None:
            raise InputError("DEMO: refused as asked")

        def undo(self) -> None:  # pragma: no cover - never done
            raise AssertionError

    session = _session(demo_store, qtbot)
    statuses: list[str] = []
    session.status.connect(statuses.append)
    assert session.execute(Refused()) is False
    assert statuses == ["not saved: DEMO: refused as asked"] and not session.stack.can_undo
