"""The review view's error-mode column: tag the shown ALM answer by keyboard, undo, note for "other"."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workbench.labels import LabelService
from workbench.studies.error_modes import ErrorModeService


# a shown window on the offscreen platform says this once
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


def _checked(panel) -> list[str]:  # type: ignore[no-untyped-def]
    return [panel.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(panel.list.count())
            if panel.list.item(i).checkState() == Qt.CheckState.Checked]


def test_tag_error_modes_with_the_keyboard_and_undo(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.show()
    qtbot.waitExposed(window)
    window.open_clip(window.review.clip_id_for_key("DEMO-0004"))  # a wrong answer: error modes tag those
    panel = window.error_modes
    tabs = window.evidence_tabs
    tabs.setCurrentIndex([tabs.tabText(i) for i in range(tabs.count())].index("Error modes"))  # the user's click
    detail = window.detail
    assert detail is not None and detail.prediction is not None
    service = ErrorModeService(demo_store)
    me = LabelService(demo_store).find_annotator("tester")

    def stored() -> list[tuple[str, ...]]:
        return [v.modes for v in service.labels(clip_id=detail.clip_id, alm_run_id=detail.alm_run_id,
                                                annotator_id=me.id)]

    panel.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is panel)
    qtbot.keyClick(panel, Qt.Key.Key_B)
    assert stored() == [("bird_bias",)] and _checked(panel) == ["bird_bias"]
    qtbot.keyClick(panel, Qt.Key.Key_L)  # L is also the window's loop key: the column takes it when focused
    assert stored() == [("language_ambiguity", "bird_bias")]
    qtbot.keyClick(panel, Qt.Key.Key_B)
    assert stored() == [("language_ambiguity",)] and _checked(panel) == ["language_ambiguity"]

    qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert stored() == [("language_ambiguity", "bird_bias")]
    assert _checked(panel) == ["language_ambiguity", "bird_bias"]
    window.undo()
    window.undo()
    assert stored() == [] and _checked(panel) == []
    window.redo()
    assert stored() == [("bird_bias",)]

    # "other" asks for a note first; Enter saves both in one command
    panel.setFocus()
    qtbot.keyClick(panel, Qt.Key.Key_O)
    assert stored() == [("bird_bias",)] and panel.note_edit.hasFocus()
    qtbot.keyClicks(panel.note_edit, "heard gulls, named a parrot")
    qtbot.keyClick(panel.note_edit, Qt.Key.Key_Return)
    views = service.labels(clip_id=detail.clip_id, alm_run_id=detail.alm_run_id, annotator_id=me.id)
    assert views[0].modes == ("bird_bias", "other") and views[0].note == "heard gulls, named a parrot"
    window.undo()
    assert stored() == [("bird_bias",)]
    history = [h for h in LabelService(demo_store).history(clip_id=detail.clip_id) if h.entity == "error_mode_label"]
    assert {h.action for h in history} == {"do", "undo", "redo"}
    assert all(h.category_id == f"alm_run:{detail.alm_run_id}" for h in history)
