"""The review workbench window, headless (pytest-qt, offscreen)."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QKeySequence
from sqlalchemy.exc import OperationalError

from storage.models import Clip
from ui.main_window import settings_path
from workbench.audio.playback import PlayerState
from workbench.labels import LabelService
from workbench.review.service import ReviewService

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


def test_zoom_and_scroll_show_the_visible_window_without_recolouring(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.open_clip(_clip_id(demo_store, "DEMO-0002"))
    view = window.player_view
    image = view.spec_image
    renders = image.renders
    assert renders >= 1 and image.window is not None
    for t0, t1 in [(2.0, 3.0), (2.5, 3.5), (8.0, 11.0)]:
        view.spec_plot.setXRange(t0, t1, padding=0)
        rect = image.mapRectToParent(image.boundingRect())
        assert rect.left() <= t0 and t1 <= rect.right()  # the shown image covers the view
    # a 12 s clip fits level 0 on screen: zooming in and scrolling only rescale the image
    assert image.renders == renders
    # the waveform follows the view
    x, _y = view.wave_curve.getData()
    assert x.min() <= 8.0 and 11.0 <= x.max() + 0.01 and x.max() <= 11.5
    # new dB levels re-colour the image once, at the same window
    window_before = image.window
    view.db_low.setValue(-60.0)
    assert image.renders == renders + 1 and image.window == window_before


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


def test_closing_while_work_runs_cancels_cleanly(make_window, demo_store, qtbot, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Close while the worker is inside the decode: the job stops at its next checkpoint
    (no direction view, no result delivered) and the threads are joined."""
    import threading

    from workbench.audio import clip_open
    from workbench.audio.streaming import DecodeStream

    real_blocks = DecodeStream.blocks
    inside, release = threading.Event(), threading.Event()
    analysed: list[object] = []

    def slow_blocks(self):  # type: ignore[no-untyped-def]
        for number, item in enumerate(real_blocks(self)):
            yield item
            if number == 0:
                inside.set()
                release.wait(5.0)

    monkeypatch.setattr(DecodeStream, "blocks", slow_blocks)
    monkeypatch.setattr(clip_open, "direction_image", lambda *a, **k: analysed.append(a))
    window = make_window(force_sync=False)
    delivered: list[str] = []
    window.loader.loaded.connect(lambda result: delivered.append(result.stage))
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))
    qtbot.waitUntil(inside.is_set, timeout=10_000)  # the job is decoding now
    threading.Timer(0.2, release.set).start()  # the decode goes on while close() waits for the thread
    window.close()
    assert not window.loader.busy
    assert window.loader._pool.activeThreadCount() == 0  # noqa: SLF001 - joined
    qtbot.wait(50)
    assert analysed == [] and delivered == []  # stopped at the checkpoint between blocks
    assert window.player_view.clip_id is None  # nothing was handed to the player
    assert not any(thread.name.startswith("aglw-open") or thread.name == "aglw-decode-prefetch"
                   for thread in threading.enumerate() if thread.is_alive())


def _queue_by_rule(rows) -> list[str]:  # type: ignore[no-untyped-def]
    """The review-queue rule, written out here from its specification (not review_queue):
    unfinished clips first, then higher judge disagreement (none last), then |l − θ|
    ascending (none last), then the key."""
    def rank(row):  # type: ignore[no-untyped-def]
        distance = None if row.localizability is None else abs(row.localizability - row.theta)
        return (
            row.review_status == "reviewed",
            row.judge_disagreement is None,
            -(row.judge_disagreement or 0.0),
            distance is None,
            distance or 0.0,
            row.key,
        )
    return [row.key for row in sorted(rows, key=rank)]


def test_review_queue_order_in_the_browser(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import update

    from storage.models import ClipQuality

    with demo_store.write() as s:  # DEMO-0001 clips: a flag from its metrics (workbench/audio/flags.py)
        s.execute(update(ClipQuality).where(ClipQuality.clip_id == _clip_id(demo_store, "DEMO-0001"))
                  .values(clipping_ratio=0.01))
    me = LabelService(demo_store).ensure_annotator("tester")
    LabelService(demo_store).set_clip_label(me.id, _clip_id(demo_store, "DEMO-0002"), decision="accept")
    window = make_window()
    window.blind_action.setChecked(False)  # the informative queue orders by the judges' values
    browser = window.browser
    rows = {row.key: row for row in ReviewService(demo_store).clip_rows(me.id)}
    keys = {row.clip_id: key for key, row in rows.items()}

    def shown() -> list[str]:
        return [keys[i] for i in browser.visible_clip_ids()]

    def expected(keep) -> list[str]:  # type: ignore[no-untyped-def]
        return [key for key in _queue_by_rule(rows.values()) if keep(rows[key])]

    # rule 1 puts the decided DEMO-0002 last; 0003 and 0004 tie on disagreement (1/3) and
    # rule 3 puts 0003 (|l−θ| 1.68) before 0004 (2.10); 0001 has the least disagreement
    assert rows["DEMO-0003"].judge_disagreement == rows["DEMO-0004"].judge_disagreement
    assert _queue_by_rule(rows.values()) == ["DEMO-0003", "DEMO-0004", "DEMO-0001", "DEMO-0002"]
    assert shown() == expected(lambda r: True)
    browser.country.setCurrentText("Japan")
    assert shown() == expected(lambda r: r.country == "Japan") == ["DEMO-0003"]
    browser.country.setCurrentText("any")
    browser.continent.setCurrentText("Europe")
    assert shown() == expected(lambda r: r.continent == "Europe") == ["DEMO-0001", "DEMO-0002"]
    browser.continent.setCurrentText("any")
    browser.speech.setCurrentText("no")
    assert shown() == expected(lambda r: r.speech is False) == ["DEMO-0004", "DEMO-0002"]
    browser.speech.setCurrentText("any")
    browser.status.setCurrentText("reviewed")
    assert shown() == ["DEMO-0002"]
    browser.status.setCurrentText("unreviewed")
    assert shown() == expected(lambda r: r.review_status == "unreviewed") == ["DEMO-0003", "DEMO-0004", "DEMO-0001"]
    browser.status.setCurrentText("any")
    window.blind_action.setChecked(False)  # the disagreement filter is off in blind mode
    browser.min_disagreement.setValue(0.2)
    assert shown() == expected(lambda r: r.judge_disagreement >= 0.2) == ["DEMO-0003", "DEMO-0004", "DEMO-0002"]
    browser.min_disagreement.setValue(0.3)
    assert shown() == ["DEMO-0003", "DEMO-0004"]
    browser.min_disagreement.setValue(0.0)
    browser.max_distance.setValue(1.7)
    assert shown() == expected(lambda r: abs(r.localizability - r.theta) <= 1.7) == ["DEMO-0003", "DEMO-0002"]
    browser.min_disagreement.setValue(0.3)  # filters combine
    assert shown() == ["DEMO-0003"]
    browser.min_disagreement.setValue(0.0)
    browser.max_distance.setValue(0.0)  # "any"
    browser.flagged.setCurrentText("flagged")
    assert shown() == expected(lambda r: bool(r.quality_flags)) == ["DEMO-0001"]
    browser.flagged.setCurrentText("clean")
    assert shown() == expected(lambda r: not r.quality_flags) == ["DEMO-0003", "DEMO-0004", "DEMO-0002"]
    browser.flagged.setCurrentText("clipping")
    assert browser.flagged.currentText() == "clipping" and shown() == ["DEMO-0001"]
    browser.flagged.setCurrentText("any")
    assert shown() == expected(lambda r: True)


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
    # AGL1K's "<br />" line breaks become lines; every other tag stays literal text.
    assert window.info.description.toPlainText() == nasty.replace("<br />", "\n")
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


def test_grid_edits_polarities_with_undo(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.blind_action.setChecked(False)
    clip_id = _clip_id(demo_store, "DEMO-0002")
    window.open_clip(clip_id)
    model, grid = window.grid.grid_model, window.grid
    row = [r.category_id for r in model.rows].index("/m/05kq4")
    labels = LabelService(demo_store)
    me = window.annotator.id

    def pool() -> dict:
        return {p.category_id: p.polarity for p in labels.category_polarities(me)}

    def per_clip() -> dict:
        return {l.category_id: l.polarity for l in labels.category_labels(clip_id, me)}

    column = model.category_polarity_column
    assert model.headerData(column, Qt.Orientation.Horizontal) == "your P/N (all clips)"
    assert model.flags(model.index(row, column)) & Qt.ItemFlag.ItemIsEditable
    assert not grid.isColumnHidden(column)
    assert grid.itemDelegateForColumn(column) is grid.polarity_delegate
    assert model.setData(model.index(row, column), "N")
    assert pool()["/m/05kq4"] == "N"
    assert model.index(row, column).data() == "N" and model.index(row, column).data(Qt.ItemDataRole.EditRole) == "N"
    assert not model.setData(model.index(row, column), "N")  # unchanged: no command
    assert model.setData(model.index(row, model.clip_polarity_column), "P")
    assert per_clip()["/m/05kq4"] == "P" and pool()["/m/05kq4"] == "N"
    assert model.index(row, model.clip_polarity_column).data() == "P"
    window.undo()
    assert per_clip()["/m/05kq4"] is None and pool()["/m/05kq4"] == "N"
    window.undo()
    assert pool()["/m/05kq4"] is None
    assert model.index(row, column).data() == ""
    window.redo()
    assert pool()["/m/05kq4"] == "N" and model.index(row, column).data() == "N"
    # the other clips show the pool-wide polarity too: DEMO-0004 has Bird (/m/015p6) as DEMO-0002 does
    bird = [r.category_id for r in model.rows].index("/m/015p6")
    assert model.setData(model.index(bird, column), "P")
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))
    other_model = window.grid.grid_model
    ids = [r.category_id for r in other_model.rows]
    assert "/m/05kq4" not in ids and "/m/015p6" in ids
    assert other_model.rows[ids.index("/m/015p6")].expert_category_polarity == "P"
    assert other_model.index(ids.index("/m/015p6"), other_model.category_polarity_column).data() == "P"
    assert other_model.index(ids.index("/m/03m9d0z"), other_model.category_polarity_column).data() == ""
    history = [h.action for h in labels.history(annotator_id=me)]
    assert history[-6:] == ["do", "do", "undo", "undo", "redo", "do"]


def test_polarity_delegate_offers_p_n_neutral_and_clear(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.open_clip(_clip_id(demo_store, "DEMO-0002"))
    grid, model = window.grid, window.grid.grid_model
    index = model.index(0, model.category_polarity_column)
    editor = grid.polarity_delegate.createEditor(grid.viewport(), None, index)
    assert [editor.itemText(i) for i in range(editor.count())] == ["—", "P", "N", "neutral"]
    editor.setCurrentIndex(2)
    grid.polarity_delegate.setModelData(editor, model, index)
    assert {p.category_id: p.polarity for p in LabelService(demo_store).category_polarities(window.annotator.id)} == {
        model.rows[0].category_id: "N"
    }


def test_ab_clip_without_spacing_explains_instead_of_failing(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    clip_id = _clip_id(demo_store, "DEMO-0003")
    with demo_store.write() as s:
        s.get(Clip, clip_id).layout_override = "ab"
    window = make_window()
    window.open_clip(clip_id)
    view = window.player_view
    assert view.clip_id == clip_id  # it still plays
    assert view.direction_image.image is None
    assert "needs the microphone spacing" in view.direction_note.textItem.toPlainText()


def test_ab_clip_uses_the_configured_spacing(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    from workbench.config import config_dir

    config = config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("ab_spacing_m = 0.25\n", encoding="utf-8")
    clip_id = _clip_id(demo_store, "DEMO-0003")
    with demo_store.write() as s:
        s.get(Clip, clip_id).layout_override = "ab"
    window = make_window()
    window.open_clip(clip_id)
    view = window.player_view
    assert view.direction_image.image.shape[0] == 36
    assert "spacing 0.25 m" in view.direction_note.textItem.toPlainText()


def test_a_clip_open_decodes_its_file_once(monkeypatch, demo_store) -> None:  # type: ignore[no-untyped-def]
    import threading

    import workbench.audio.loader as loader
    from tests.support.decodes import count_decodes
    from ui import workers
    from workbench.audio import digests
    from workbench.audio.direction import analyze_samples, direction_image
    from workbench.audio.pyramid_cache import compute_pyramids, wait_for_cache_writes
    from workbench.audio.spectrogram import SpectrogramParams

    detail = ReviewService(demo_store, {}, {}).clip_detail(_clip_id(demo_store, "DEMO-0004"))
    events: list[str] = []
    real_hash = loader.content_hash

    def digest(*args, **kwargs):  # type: ignore[no-untyped-def]
        events.append("hash")
        return real_hash(*args, **kwargs)

    monkeypatch.setattr(loader, "content_hash", digest)
    monkeypatch.setattr(digests, "_digest_memo", type(digests._digest_memo)())  # noqa: SLF001 - fresh memo
    decodes = count_decodes(monkeypatch)
    request = workers.AudioRequest(1, detail.clip_id, detail.audio_path, detail.layout, SpectrogramParams())
    result = workers.load_clip_audio(request, threading.Event(), lambda partial: events.append(partial.stage))
    assert result.error is None and result.direction.kind == "azimuth"
    # one decode fed the spectrogram (handed over first), the playback buffer and the direction view
    assert decodes.of(detail.audio_path) == 1
    assert events.count("hash") == 1 and events.count("spectrogram") == 1
    # ... and they equal what separate decodes gave
    separate = loader.load_audio(detail.audio_path)
    np.testing.assert_array_equal(result.samples, separate.samples)
    pyramid, _ = compute_pyramids(detail.audio_path, SpectrogramParams(), use_cache=False)
    np.testing.assert_array_equal(result.pyramid.levels[0], pyramid.levels[0])
    view = direction_image(analyze_samples(separate.samples, separate.sample_rate, layout=detail.layout,
                                           heatmap_bins=72))
    assert (view.kind, view.t0, view.t1, view.y_range) == (result.direction.kind, result.direction.t0,
                                                            result.direction.t1, result.direction.y_range)
    np.testing.assert_allclose(result.direction.image, view.image, rtol=1e-5, atol=1e-6)
    wait_for_cache_writes()
    events.clear()
    decodes.reset()
    workers.load_clip_audio(request, threading.Event(), lambda partial: events.append(partial.stage))
    assert events == ["spectrogram"]  # cached pyramid; the file's hash is remembered (same size, mtime)
    assert decodes.of(detail.audio_path) == 1  # the playback decode, which the direction view shares
    # the player shares the decoded samples instead of keeping a second copy
    from workbench.audio.playback import NullSink, Player

    player = Player(NullSink())
    player.load(result.samples, result.sample_rate, detail.layout)
    assert np.shares_memory(player._samples, result.samples)  # noqa: SLF001 - no public accessor


def test_run_gui_deletes_the_window_before_returning(monkeypatch, demo_db, qapp) -> None:  # type: ignore[no-untyped-def]
    import shiboken6

    import ui.app
    import ui.main_window
    from workbench.audio.playback import NullSink, Player

    built = []

    class Recorded(ui.main_window.MainWindow):
        def __init__(self, store, annotator, **kwargs):  # type: ignore[no-untyped-def]
            super().__init__(store, annotator, player=Player(NullSink()), force_sync=True)
            built.append(self)

    class NoLoop:
        """The application, minus the event loop (quitting the test's QApplication would stop
        every later event loop of the session)."""

        def exec(self) -> int:
            assert built and shiboken6.isValid(built[0]) and built[0].isVisible()
            return 0

    monkeypatch.setattr(ui.main_window, "MainWindow", Recorded)
    monkeypatch.setattr(ui.app, "ensure_application", lambda: NoLoop())
    assert ui.app.run_gui(str(demo_db), "tester", clip_key="DEMO-0001") == 0
    assert len(built) == 1 and not shiboken6.isValid(built[0])
    assert QSettings(str(settings_path()), QSettings.Format.IniFormat).value("geometry") is not None


def test_worker_waits_for_the_paint_before_decoding(demo_store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A cached spectrogram is handed over first and the decode waits for its paint; a computed
    one is handed over after the decode, and the rest waits for its paint."""
    import threading
    import time

    from ui import workers
    from workbench.audio.streaming import DecodeStream
    from workbench.audio.pyramid_cache import wait_for_cache_writes
    from workbench.audio.spectrogram import SpectrogramParams

    detail = ReviewService(demo_store, {}, {}).clip_detail(_clip_id(demo_store, "DEMO-0002"))
    request = workers.AudioRequest(1, detail.clip_id, detail.audio_path, detail.layout, SpectrogramParams())
    resume, cancelled = threading.Event(), threading.Event()
    moments: dict[str, float] = {}
    real_blocks = DecodeStream.blocks

    def blocks(self):  # type: ignore[no-untyped-def]
        moments.setdefault("decode", time.perf_counter())
        yield from real_blocks(self)

    monkeypatch.setattr(DecodeStream, "blocks", blocks)

    def partial(_result) -> None:  # type: ignore[no-untyped-def]
        moments["spectrogram"] = time.perf_counter()
        threading.Timer(0.2, lambda: (moments.setdefault("resumed", time.perf_counter()), resume.set())).start()

    first = workers.load_clip_audio(request, cancelled, partial, resume)  # not cached yet
    moments["returned"] = time.perf_counter()
    assert first.error is None
    assert moments["decode"] < moments["spectrogram"] < moments["resumed"] <= moments["returned"]
    wait_for_cache_writes()
    moments.clear()
    resume.clear()
    result = workers.load_clip_audio(request, cancelled, partial, resume)  # cached now
    assert result.error is None
    assert moments["spectrogram"] < moments["resumed"] <= moments["decode"]
    # cancelled while it waits (what AudioLoader.cancel_all does): it stops without decoding
    moments.clear()
    resume.clear()

    def cancel_soon(_result) -> None:  # type: ignore[no-untyped-def]
        threading.Timer(0.1, lambda: (cancelled.set(), resume.set())).start()

    with pytest.raises(workers.Cancelled):
        workers.load_clip_audio(request, cancelled, cancel_soon, resume)
    assert "decode" not in moments


def test_shown_window_paints_the_spectrogram_before_the_rest_arrives(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window(force_sync=False)
    window.show()
    order: list[str] = []
    window.player_view.spectrogramPainted.connect(lambda _c: order.append("painted"))
    window.audioShown.connect(lambda _c: order.append("audio"))
    window.open_clip(_clip_id(demo_store, "DEMO-0003"))
    errors: list[str] = []
    window.loader.loaded.connect(lambda result: errors.append(result.error) if result.error else None)
    try:
        qtbot.waitUntil(lambda: "audio" in order or bool(errors), timeout=20_000)
    except Exception:
        print("DEBUG", order, errors, window.player_view.spectrogram_clip_id, window.loader.generation,
              window.loader.busy, window.loader.dropped, window.player_view.direction_note.textItem.toPlainText())
        raise
    assert not errors
    assert order == ["painted", "audio"]
    assert window.player_view.direction_image.image.shape[0] == 36
