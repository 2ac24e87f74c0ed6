"""The review workbench window, headless (pytest-qt, offscreen)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QKeySequence
from sqlalchemy.exc import OperationalError

from storage.models import Clip
from ui.main_window import settings_path
from workbench.audio.playback import PlayerState
from workbench.labels import LabelService
from workbench.review import ReviewService, review_queue

# The offscreen platform plugin reports this on every show(); it is not an application problem.
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


def _clip_id(store, key: str) -> int:  # type: ignore[no-untyped-def]
    return ReviewService(store, {}, {}).clip_id_for_key(key)


def test_opening_a_clip_paints_spectrogram_and_direction_view(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))
    view = window.player_view
    image = view.spec_image.image
    assert image is not None and image.shape[0] == 513  # n_fft 1024 → 513 linear bins
    assert 0 < image.shape[1] <= 2 * max(view.spec_plot.getViewBox().width(), 200) and image.max() > 0
    direction = view.direction_image.image
    assert direction is not None and direction.shape[0] == 72 and direction.shape[1] > 100
    assert direction.max() > 0
    assert view.tags_image.image.shape == (3, 12)
    # Mono: an explanation instead of a direction view.
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))
    assert view.direction_image.image is None
    assert "Mono" in view.direction_note.textItem.toPlainText()
    # Binaural: lateral angle × time with the mirror note.
    window.open_clip(_clip_id(demo_store, "DEMO-0003"))
    assert view.direction_image.image.shape[0] == 36
    assert "mirror" in view.direction_note.textItem.toPlainText()


def test_zoom_rerenders_only_the_visible_window(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.open_clip(_clip_id(demo_store, "DEMO-0002"))
    view = window.player_view
    view.spec_plot.setXRange(2.0, 3.0, padding=0)
    rect = view.spec_image.mapRectToParent(view.spec_image.boundingRect())
    assert 1.5 < rect.left() <= 2.0 and 3.0 <= rect.right() < 3.5


def test_clicking_a_time_reference_seeks_the_player(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.show()
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))
    reasoning = window.reasoning
    ref = reasoning.references[0]
    assert reasoning.toPlainText()[ref.start_char : ref.end_char] == "0:04"
    window.evidence_tabs.setCurrentWidget(reasoning)
    cursor = reasoning.textCursor()
    cursor.setPosition(ref.start_char + 1)
    point = reasoning.cursorRect(cursor).center()
    qtbot.mouseClick(reasoning.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert window.player_view.player.position == pytest.approx(4.0, abs=0.01)
    assert window.player_view.playheads[0].value() == pytest.approx(4.0, abs=0.01)
    # the references are marked on the time axis too
    assert sorted(window.player_view.time_refs) == sorted(r.seconds for r in reasoning.references)


def test_grid_edit_is_persisted_and_undo_restores_it_in_the_database(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    clip_id = _clip_id(demo_store, "DEMO-0002")
    window.open_clip(clip_id)
    model = window.grid.grid_model
    row = [r.category_id for r in model.rows].index("/m/05kq4")
    labels = LabelService(demo_store)

    def stored() -> dict:
        return {l.category_id: (l.contribution, l.effect) for l in labels.category_labels(clip_id, window.annotator.id)}

    assert model.setData(model.index(row, model.contribution_column), 3)
    assert stored()["/m/05kq4"] == (3, None)
    assert model.index(row, model.contribution_column).data() == "3 decisive"
    assert model.setData(model.index(row, model.effect_column), "helped")
    assert stored()["/m/05kq4"] == (3, "helped")
    window.undo()
    assert stored()["/m/05kq4"] == (3, None)
    window.undo()
    assert stored()["/m/05kq4"] == (None, None)
    assert model.index(row, model.contribution_column).data() == ""
    window.redo()
    assert stored()["/m/05kq4"] == (3, None)
    history = labels.history(annotator_id=window.annotator.id, clip_id=clip_id)
    assert [h.action for h in history] == ["do", "do", "undo", "undo", "redo"]


def test_blind_mode_hides_judges_until_labels_are_entered(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    other = LabelService(demo_store).ensure_annotator("someone else")
    clip_id = _clip_id(demo_store, "DEMO-0002")
    LabelService(demo_store).set_clip_label(other.id, clip_id, rating=4, decision="accept")
    window = make_window()
    assert window.blind_mode  # on by default
    window.open_clip(clip_id)
    model, grid = window.grid.grid_model, window.grid
    judge_columns = list(model.judge_columns())
    assert len(judge_columns) == 3
    assert all(grid.isColumnHidden(c) for c in judge_columns) and grid.isColumnHidden(model.consensus_column)
    assert window.clip_panel.others.text() == ""
    for row in range(model.rowCount()):
        assert all(grid.isColumnHidden(c) for c in judge_columns)
        model.setData(model.index(row, model.contribution_column), 1)
    assert not any(grid.isColumnHidden(c) for c in judge_columns)
    assert "someone else" in window.clip_panel.others.text()
    # undoing one contribution hides them again
    window.undo()
    assert all(grid.isColumnHidden(c) for c in judge_columns)


def test_reveal_needs_a_rating(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.open_clip(_clip_id(demo_store, "DEMO-0001"))
    columns = list(window.grid.grid_model.judge_columns())
    window.reveal_current()
    assert all(window.grid.isColumnHidden(c) for c in columns)
    window.clip_panel.rating.setCurrentIndex(4)
    window.clip_panel.rating.activated.emit(4)
    assert window.detail.own_label.rating == 4
    window.reveal_current()
    assert not any(window.grid.isColumnHidden(c) for c in columns)
    window.blind_action.setChecked(False)
    assert QSettings(str(settings_path()), QSettings.Format.IniFormat).value("blind_mode") in (False, "false")


def test_fast_switching_never_shows_a_stale_clip(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window(force_sync=False)
    shown: list[int] = []
    window.audioShown.connect(shown.append)
    keys = ["DEMO-0004", "DEMO-0003", "DEMO-0002", "DEMO-0001", "DEMO-0004", "DEMO-0003"]
    for key in keys:
        window.open_clip(_clip_id(demo_store, key))
    last = _clip_id(demo_store, keys[-1])
    qtbot.waitUntil(lambda: shown != [], timeout=20_000)
    qtbot.wait(200)
    assert shown == [last]
    assert window.player_view.clip_id == last
    assert window.player_view.direction_image.image.shape[0] == 36  # the binaural clip's lateral bins
    assert window.detail.key == keys[-1]


def test_closing_while_work_runs_cancels_cleanly(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window(force_sync=False)
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))
    window.close()
    assert not window.loader.busy
    assert window.loader._pool.activeThreadCount() == 0  # noqa: SLF001 - joined
    qtbot.wait(50)
    assert window.player_view.clip_id is None


def test_review_queue_order_in_the_browser(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    expected = [r.clip_id for r in review_queue(ReviewService(demo_store).clip_rows(window.annotator.id))]
    assert window.browser.visible_clip_ids() == expected
    window.browser.continent.setCurrentText("Europe")
    assert [window.browser.model.rows[0].clip_id] and all(
        r.continent == "Europe" for r in window.browser.model.rows if r.clip_id in window.browser.visible_clip_ids()
    )
    assert len(window.browser.visible_clip_ids()) == 2
    window.browser.continent.setCurrentText("any")
    window.browser.speech.setCurrentText("no")
    assert {window.review.clip_detail(i).key for i in window.browser.visible_clip_ids()} == {"DEMO-0002", "DEMO-0004"}


def _press(window, keys: str) -> None:  # type: ignore[no-untyped-def]
    """Trigger the window action bound to ``keys`` (offscreen windows never become active,
    so Qt's shortcut map cannot dispatch real key presses here)."""
    sequence = QKeySequence(keys)
    matches = [a for a in window.actions() if sequence in a.shortcuts()]
    assert len(matches) == 1, f"{keys} is bound to {len(matches)} actions"
    matches[0].trigger()


def test_shortcuts_drive_the_player_and_the_queue(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.browser.select_clip(window.browser.visible_clip_ids()[0])
    first = window.detail.clip_id
    player = window.player_view
    _press(window, "Space")
    assert player.player.state == PlayerState.PLAYING and player.timer.isActive()
    _press(window, "Space")
    assert player.player.state == PlayerState.PAUSED
    _press(window, "Right")
    assert player.player.position == pytest.approx(5.0)
    _press(window, "Left")
    assert player.player.position == pytest.approx(0.0)
    _press(window, "Right")
    _press(window, "L")
    assert player.player.loop == pytest.approx((5.0, 10.0), abs=0.01)
    _press(window, "L")
    assert player.player.loop is None
    _press(window, "1")
    assert player.player.soloed == 0
    _press(window, "0")
    assert player.player.soloed is None
    _press(window, "J")
    assert window.detail.clip_id == window.browser.visible_clip_ids()[1]
    _press(window, "PgUp")
    assert window.detail.clip_id == first
    _press(window, "PgDown")
    _press(window, "K")
    assert window.detail.clip_id == first
    for keys in ("Ctrl+Z", "Ctrl+Shift+Z"):
        _press(window, keys)


def test_failed_write_stays_pending_with_a_banner_and_retry(make_window, demo_store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    clip_id = _clip_id(demo_store, "DEMO-0003")
    window.open_clip(clip_id)
    real = LabelService._write
    calls = {"n": 0}

    def locked(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        raise OperationalError("UPDATE", {}, Exception("database is locked"))

    monkeypatch.setattr(LabelService, "_write", locked)
    window.clip_panel.decisionChanged.emit("reject")
    assert calls["n"] == 1 and len(window.stack.pending) == 1
    assert not window.banner.isHidden() and "database is locked" in window.banner.message.text()
    assert LabelService(demo_store).clip_labels(clip_id, window.annotator.id) == []
    monkeypatch.setattr(LabelService, "_write", real)
    window.banner.retry.click()
    assert window.stack.pending == [] and window.banner.isHidden()
    assert LabelService(demo_store).clip_labels(clip_id, window.annotator.id)[0].decision == "reject"


def test_text_from_data_is_shown_literally(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    nasty = 'Line one<br />line two <img src=http://example.invalid/x.png><script>alert("x")</script>'
    clip_id = _clip_id(demo_store, "DEMO-0002")
    with demo_store.write() as s:
        clip = s.get(Clip, clip_id)
        clip.description = nasty
        clip.title = "<b>bold?</b>"
    window = make_window()
    window.open_clip(clip_id)
    assert window.info.description.toPlainText() == nasty
    assert window.info.title.textFormat() == Qt.TextFormat.PlainText
    assert "<b>bold?</b>" in window.info.title.text()


def test_layout_is_remembered(make_window) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.resize(700, 500)  # within the offscreen screen, which restoreGeometry clamps to
    window.shutdown()
    settings = QSettings(str(settings_path()), QSettings.Format.IniFormat)
    assert settings.value("geometry") is not None and settings.value("window_state") is not None
    again = make_window()
    assert (again.size().width(), again.size().height()) == (700, 500)
