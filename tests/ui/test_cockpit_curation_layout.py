"""The curation view's fit status line is visible in the docked layout at the window's default size."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QScrollArea

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints", "does not support raise")


def test_fit_status_visible_without_scrolling(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.show()
    qtbot.waitExposed(window)
    dock = window.cockpit.docks["curation"]
    dock.show()
    dock.raise_()
    label = window.cockpit.curation.fit_status
    label.setText("fitting… (progress and Cancel in the Jobs panel)")
    qtbot.wait(50)
    scroll = dock.widget()
    assert isinstance(scroll, QScrollArea)
    viewport = scroll.viewport()
    top_left = label.mapTo(viewport, QPoint(0, 0))
    mapped = QRect(top_left, label.size())
    assert viewport.rect().contains(mapped), (mapped, viewport.rect())
    assert not label.visibleRegion().isEmpty()
