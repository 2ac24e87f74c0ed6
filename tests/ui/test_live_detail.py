"""The live refresh of the shown clip while a job runs (every 2 s): its read runs off the GUI
thread, and a read of a clip the user has left since is dropped (ui.workers.LatestResult)."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import QTimer
from sqlmodel import select

from storage.models import AlmRun, Prediction
from workbench.review.service import ReviewService

# The offscreen platform plugin reports this when a shown window's minimum size follows its layout
# (the curation view's tables and fit picture keep their width); it is not an application problem.
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

LIVE_ALM = "live-alm"


def _live_refresh(window) -> None:  # type: ignore[no-untyped-def]
    """What the cockpit's live timer does when it fires while a job stores answers."""
    timer = window.findChild(QTimer, "cockpit-live-refresh")
    assert timer is not None
    timer.timeout.emit()


def _store_answer(store, clip_id: int) -> None:  # type: ignore[no-untyped-def]
    """An answer a running job stores for the shown clip."""
    with store.write() as s:
        alm = AlmRun(model=LIVE_ALM)
        s.add(alm)
        s.flush()
        s.add(Prediction(alm_run_id=alm.id, clip_id=clip_id, question_id="live", predicted_city="Lisbon",
                         predicted_country="Portugal", predicted_continent="Europe",
                         predicted_latitude="38.72", predicted_longitude="-9.14", reasoning="live reasoning"))


def _models_listed(window) -> list[str]:  # type: ignore[no-untyped-def]
    box = window.info.model_box
    return [box.itemText(i) for i in range(box.count())]


def test_the_live_refresh_reads_the_shown_clip_off_the_gui_thread(make_window, demo_store, qtbot,  # type: ignore[no-untyped-def]
                                                                  monkeypatch) -> None:
    window = make_window()
    clip_id = window.review.clip_id_for_key("DEMO-0002")
    window.open_clip(clip_id)
    assert not any(LIVE_ALM in text for text in _models_listed(window))
    threads: list[threading.Thread] = []
    real = ReviewService.clip_detail

    def recording(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ReviewService, "clip_detail", recording)
    _store_answer(demo_store, clip_id)
    _live_refresh(window)
    qtbot.waitUntil(lambda: any(LIVE_ALM in text for text in _models_listed(window)), timeout=5000)
    assert threads and threading.main_thread() not in threads, "the shown clip was read on the GUI thread"
    assert window.detail.clip_id == clip_id
    assert any(p.model == LIVE_ALM for p in window.detail.predictions)


def test_a_live_read_of_a_clip_the_user_has_left_is_dropped(make_window, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    first = window.review.clip_id_for_key("DEMO-0001")
    second = window.review.clip_id_for_key("DEMO-0002")
    window.open_clip(first)
    started, release, done = threading.Event(), threading.Event(), threading.Event()
    real = ReviewService.clip_detail

    def slow_in_background(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if threading.current_thread() is threading.main_thread():
            return real(self, *args, **kwargs)
        started.set()
        release.wait(10)
        try:
            return real(self, *args, **kwargs)
        finally:
            done.set()

    monkeypatch.setattr(ReviewService, "clip_detail", slow_in_background)
    _live_refresh(window)
    qtbot.waitUntil(started.is_set, timeout=5000)
    window.open_clip(second)  # the user moves on while the live read of the first clip runs
    release.set()
    qtbot.waitUntil(done.is_set, timeout=5000)
    qtbot.waitUntil(lambda: window._live_detail.dropped == 1, timeout=5000)
    assert window.detail.clip_id == second
    assert window.info.title.text().startswith("DEMO-0002")


def test_an_edit_is_not_overwritten_by_an_older_live_read(make_window, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The synchronous re-read after an edit (refresh_detail) is newer than a live read under way."""
    window = make_window()
    clip_id = window.review.clip_id_for_key("DEMO-0001")
    window.open_clip(clip_id)
    started, release = threading.Event(), threading.Event()
    real = ReviewService.clip_detail
    old = real(window.review, clip_id, window.annotator.id)

    def stale_in_background(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if threading.current_thread() is threading.main_thread():
            return real(self, *args, **kwargs)
        started.set()
        release.wait(10)
        return old  # read before the edit

    monkeypatch.setattr(ReviewService, "clip_detail", stale_in_background)
    _live_refresh(window)
    qtbot.waitUntil(started.is_set, timeout=5000)
    window._clip_edit(rating=4)  # saved, then refresh_detail re-reads at once
    assert window.detail.own_label.rating == 4
    release.set()
    qtbot.waitUntil(lambda: window._live_detail.dropped == 1, timeout=5000)
    assert window.detail.own_label.rating == 4
