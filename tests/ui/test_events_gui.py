"""The events panel: draw an event on the spectrogram, accept the pre-filled direction, correct it on
the direction view, undo and redo; keys, moving tracks, headphone decoding with yaw."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ui.test_gui_edits import _clip_id, _Drag
from workbench.audio.binaural import SPHERICAL_HEAD_NAME
from workbench.events.service import EventService

# window.show() offscreen: Qt says this once per window
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


class _Click:
    """The parts of a pyqtgraph MouseClickEvent the panel reads."""

    def __init__(self, box, t: float, angle: float, *, ctrl: bool = False) -> None:  # type: ignore[no-untyped-def]
        from PySide6.QtCore import QPointF

        self._pos = box.mapViewToScene(QPointF(t, angle))
        self._ctrl = ctrl

    def button(self):  # type: ignore[no-untyped-def]
        from PySide6.QtCore import Qt

        return Qt.MouseButton.LeftButton

    def double(self) -> bool:
        return False

    def modifiers(self):  # type: ignore[no-untyped-def]
        from PySide6.QtCore import Qt

        return Qt.KeyboardModifier.ControlModifier if self._ctrl else Qt.KeyboardModifier.NoModifier

    def scenePos(self):  # type: ignore[no-untyped-def]  # noqa: N802
        return self._pos


def _window_on_foa(make_window, demo_store):  # type: ignore[no-untyped-def]
    window = make_window()
    window.resize(1500, 950)
    window.show()
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))  # ambiX: a bird circling, 30°/s from the front
    return window


def test_draw_an_event_accept_the_prefill_correct_it_then_undo_and_redo(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = _window_on_foa(make_window, demo_store)
    controller = window.spatial_events
    controller.panel.mark.setChecked(True)
    controller.panel.class_box.setCurrentText("bell")
    box = window.player_view.spec_plot.getViewBox()
    box.mouseDragEvent(_Drag(box, 1.0, 2.0, shift=True, finish=True))  # the span also loops
    assert window.player_view.player.loop == pytest.approx((1.0, 2.0), abs=0.05)
    service = EventService(demo_store)
    [event] = service.events(_clip_id(demo_store, "DEMO-0004"), window.annotator.id)
    assert (event.onset_s, event.offset_s, event.class_name) == (1.0, 2.0, "bell")
    # pre-filled from the analysis: the bird is at 30°–60° in that span
    assert event.track[0][0] == pytest.approx(45.0, abs=8.0)
    assert "pre-filled: azimuth" in controller.panel.prefill_label.text()

    direction = window.player_view.direction_plot.getViewBox()
    controller._scene_clicked(_Click(direction, 1.5, -30.0))  # the expert corrects it
    [corrected] = service.events(event.clip_id, window.annotator.id)
    assert corrected.track[0][0] == pytest.approx(-30.0, abs=2.0)
    assert corrected.track[0][1] == pytest.approx(event.track[0][1])  # elevation kept

    window.undo()
    [undone] = service.events(event.clip_id, window.annotator.id)
    assert undone.track == event.track
    window.redo()
    [redone] = service.events(event.clip_id, window.annotator.id)
    assert redone.track == corrected.track
    window.undo()
    window.undo()  # the add itself
    assert service.events(event.clip_id, window.annotator.id) == []
    window.redo()
    assert [e.uid for e in service.events(event.clip_id, window.annotator.id)] == [event.uid]
    assert controller.panel.list.count() == 1


def test_a_moving_track_from_ctrl_clicks_and_the_keys(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = _window_on_foa(make_window, demo_store)
    controller = window.spatial_events
    controller.panel.mark.setChecked(True)
    box = window.player_view.spec_plot.getViewBox()
    box.mouseDragEvent(_Drag(box, 3.0, 4.0, shift=True, finish=True))
    controller.direction_clicked(3.05, 90.0, add_track_point=True)
    controller.direction_clicked(3.95, 120.0, add_track_point=True)
    [event] = EventService(demo_store).events(_clip_id(demo_store, "DEMO-0004"), window.annotator.id)
    angles = [t[0] for t in event.track]
    assert len(angles) == 10 and angles[0] == 90.0 and angles[-1] == 120.0 and angles == sorted(angles)
    controller.cycle_class(1)
    [changed] = EventService(demo_store).events(event.clip_id, window.annotator.id)
    assert changed.class_name != event.class_name
    box.mouseDragEvent(_Drag(box, 6.0, 7.0, shift=True, finish=True))
    assert controller.panel.list.count() == 2
    controller.step(-1)
    assert controller.selected_uid == event.uid
    assert window.player_view.player.loop == pytest.approx((3.0, 4.0), abs=0.01)
    controller.delete_selected()
    assert controller.panel.list.count() == 1
    window.undo()
    assert controller.panel.list.count() == 2


def test_headphones_decode_foa_with_yaw_and_name_the_hrirs(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = _window_on_foa(make_window, demo_store)
    controller = window.spatial_events
    assert controller.panel.headphones.isEnabled()
    controller.panel.headphones.setChecked(True)
    assert SPHERICAL_HEAD_NAME in controller.panel.hrir_label.text()
    player = window.player_view.player
    player.seek(3.0)  # the bird is at +90° (left)
    player.play()
    left_heavy = player.render(8000)
    assert np.sqrt((left_heavy[:, 0] ** 2).mean()) > np.sqrt((left_heavy[:, 1] ** 2).mean())
    controller.panel.yaw.setValue(180)  # turned around: the bird is on the right
    player.seek(3.0)
    controller.decoder.reset()
    right_heavy = player.render(8000)
    assert np.sqrt((right_heavy[:, 1] ** 2).mean()) > np.sqrt((right_heavy[:, 0] ** 2).mean())
    controller.panel.headphones.setChecked(False)
    assert player._processor is None


def test_the_demo_events_show_on_both_views(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = make_window(annotator="DEMO expert (synthetic events)")
    window.show()
    window.open_clip(_clip_id(demo_store, "DEMO-0004"))
    controller = window.spatial_events
    assert controller.panel.list.count() == 4
    boxes = [item for plot, item in controller._items if plot is window.player_view.spec_plot]
    tracks = [item for plot, item in controller._items if plot is window.player_view.direction_plot]
    assert len(boxes) == 4 and len(tracks) == 4
    assert [label.text for _sample, label in window.player_view.direction_key.items] == ["Bird"]  # beside the caption


def _mouse_gesture(window, plot, points, modifiers) -> None:  # type: ignore[no-untyped-def]
    """Press, move through and release at ``points`` (view coordinates of ``plot``) with real Qt
    mouse events on the plots' viewport, holding ``modifiers`` throughout (pyqtgraph reads them
    from each move)."""
    from PySide6.QtCore import QEvent, QPointF, Qt
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    graphics = window.player_view.graphics
    viewport = graphics.viewport()
    box = plot.getViewBox()
    pixels = [graphics.mapFromScene(box.mapViewToScene(QPointF(x, y))) for x, y in points]
    left = Qt.MouseButton.LeftButton
    QTest.mousePress(viewport, left, modifiers, pixels[0])
    for pixel in pixels[1:]:
        move = QMouseEvent(QEvent.Type.MouseMove, QPointF(pixel), QPointF(viewport.mapToGlobal(pixel)),
                           Qt.MouseButton.NoButton, left, modifiers)
        QApplication.sendEvent(viewport, move)
    QTest.mouseRelease(viewport, left, modifiers, pixels[-1])


def _events(window, demo_store):  # type: ignore[no-untyped-def]
    return EventService(demo_store).events(_clip_id(demo_store, "DEMO-0004"), window.annotator.id)


def test_a_rectangle_dragged_on_the_spectrogram_gives_the_band_of_the_prefill(make_window, demo_store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt

    import ui.events_panel
    from workbench.events.prefill import prefill_direction

    bands = []

    def spy(samples, sample_rate, layout, start_s, end_s, band=None):  # type: ignore[no-untyped-def]
        bands.append(band)
        return prefill_direction(samples, sample_rate, layout, start_s, end_s, band)

    monkeypatch.setattr(ui.events_panel, "prefill_direction", spy)
    window = _window_on_foa(make_window, demo_store)
    controller = window.spatial_events
    controller.panel.mark.setChecked(True)
    pv = window.player_view
    shift = Qt.KeyboardModifier.ShiftModifier
    top = pv.spec_plot.viewRange()[1][1]
    hz_per_px = top / pv.spec_plot.getViewBox().height()
    # inside the frames' edges: the span snaps outward to 100 ms frames, a pixel either way
    _mouse_gesture(window, pv.spec_plot, [(1.03, 1000.0), (1.5, 3000.0), (1.97, 5000.0)], shift)

    [event] = _events(window, demo_store)
    assert (event.onset_s, event.offset_s) == (1.0, 2.0)
    [band] = bands
    assert band == pytest.approx((1000.0, 5000.0), abs=2 * hz_per_px)
    # the stored direction is the pre-fill of that band, and the band is named where it is kept
    samples, sample_rate, layout = pv.loaded_audio
    expected = prefill_direction(samples, sample_rate, layout, 1.0, 2.0, band)
    assert event.track[0][0] == pytest.approx(round(expected.azimuth_deg, 1))
    assert f"{band[0]:.0f}–{band[1]:.0f} Hz" in event.note
    assert f"{band[0]:.0f}–{band[1]:.0f} Hz only" in controller.panel.prefill_label.text()
    assert pv.band_rect.isVisible()
    assert pv.player.loop == pytest.approx((1.03, 1.97), abs=0.02)  # the span still loops

    # a flat Shift+drag and one over the whole height are plain spans: no band
    _mouse_gesture(window, pv.spec_plot, [(4.03, 2000.0), (4.5, 2000.0), (4.97, 2000.0)], shift)
    _mouse_gesture(window, pv.spec_plot, [(6.03, top * 0.995), (6.5, top / 2), (6.97, top * 0.001)], shift)
    assert bands[1:] == [None, None]
    assert not pv.band_rect.isVisible()
    assert [e.onset_s for e in _events(window, demo_store)] == [1.0, 4.0, 6.0]
    assert "Hz" not in _events(window, demo_store)[1].note

    window.undo()
    window.undo()
    window.undo()
    assert _events(window, demo_store) == []
    window.redo()
    assert [e.uid for e in _events(window, demo_store)] == [event.uid]


def test_ctrl_drag_on_the_direction_view_draws_the_track_and_a_click_makes_it_static_again(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtTest import QTest

    window = _window_on_foa(make_window, demo_store)
    controller = window.spatial_events
    controller.panel.mark.setChecked(True)
    pv = window.player_view
    _mouse_gesture(window, pv.spec_plot, [(3.03, 0.0), (3.5, 0.0), (3.97, 0.0)], Qt.KeyboardModifier.ShiftModifier)
    [added] = _events(window, demo_store)
    prefilled = added.track[0]
    x_range = pv.spec_plot.viewRange()[0]

    direction = pv.direction_plot
    low, high = direction.viewRange()[1]
    deg_per_px = (high - low) / direction.getViewBox().height()
    s_per_px = (x_range[1] - x_range[0]) / direction.getViewBox().width()
    # from 3.25 s at 0° to 3.75 s at 80°, through a point in between, holding Ctrl
    _mouse_gesture(window, direction, [(3.25, 0.0), (3.40, 24.0), (3.75, 80.0)], Qt.KeyboardModifier.ControlModifier)
    [dragged] = _events(window, demo_store)
    assert pv.spec_plot.viewRange()[0] == pytest.approx(x_range)  # drawing, not panning
    assert len(dragged.track) == 10
    for k, entry in enumerate(dragged.track):
        if 2 <= k <= 7:  # the frames 3.2–3.8 s the drag passed over: read off the straight line
            t = min(3.75, max(3.25, 3.0 + (k + 0.5) * 0.1))
            slope = 80.0 / 0.5
            assert entry[0] == pytest.approx(slope * (t - 3.25), abs=2 * deg_per_px + slope * 2 * s_per_px), k
        else:  # the rest of the track is kept
            assert entry[0] == pytest.approx(prefilled[0])
        assert entry[1] == pytest.approx(prefilled[1])  # the elevation is kept
    assert "moving" in controller.panel.list.item(0).text()

    # a plain click on the direction view makes the source static again
    box = direction.getViewBox()
    click = window.player_view.graphics.mapFromScene(box.mapViewToScene(QPointF(3.5, -40.0)))
    QTest.mouseClick(pv.graphics.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, click)
    [static] = _events(window, demo_store)
    assert len(static.track) == 1 and static.track[0][0] == pytest.approx(-40.0, abs=2 * deg_per_px)

    window.undo()
    assert _events(window, demo_store)[0].track == dragged.track
    window.undo()  # the drag
    assert _events(window, demo_store)[0].track == added.track
    window.redo()
    assert _events(window, demo_store)[0].track == dragged.track

    # without "Mark events" a Ctrl+drag pans as before and stores nothing
    controller.panel.mark.setChecked(False)
    _mouse_gesture(window, direction, [(5.0, 0.0), (5.5, 10.0), (6.0, 20.0)], Qt.KeyboardModifier.ControlModifier)
    assert _events(window, demo_store)[0].track == dragged.track


def test_a_drag_passing_quickly_fills_every_frame_and_later_passes_win() -> None:
    from workbench.events.tracks import apply_dragged_path, dragged_frames

    # two pointer positions 0.6 s apart: the frames in between are read off the line
    assert dragged_frames([(0.05, 0.0), (0.65, 60.0)], 0, 10) == pytest.approx(
        {0: 0.0, 1: 10.0, 2: 20.0, 3: 30.0, 4: 40.0, 5: 50.0, 6: 60.0})
    # back over the same frames: the later pass wins (frame 3 first got 10°); frame 4 is past the event
    values = dragged_frames([(0.25, 0.0), (0.45, 20.0), (0.25, -50.0)], 1, 3)
    assert values == pytest.approx({1: -50.0, 2: -15.0})
    track, changed = apply_dragged_path([(10.0, 5.0, 200.0)], 0.0, 0.5, [(0.15, 200.0)], limit_deg=180.0)
    assert changed == [1] and track[1] == (180.0, 5.0, 200.0) and track[0] == track[2] == (10.0, 5.0, 200.0)


def test_on_the_mel_axis_the_band_is_read_in_hz(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    window = _window_on_foa(make_window, demo_store)
    pv = window.player_view
    pv.scale_box.setCurrentText("mel")
    assert pv.pyramid.params.scale == "mel"
    freqs = np.asarray(pv.pyramid.freqs_hz)
    # bin i spans heights [i, i + 1): the middle of a bin is its centre frequency
    low, high = pv.band_of(10.5, len(freqs) - 20.5)
    assert (low, high) == pytest.approx((freqs[10], freqs[len(freqs) - 21]), abs=0.1)
    assert pv.band_of(10.5, 10.6) is None  # a flat drag
    assert pv.band_of(0.0, float(len(freqs))) is None  # the whole height


def test_two_overlapping_events_of_a_class_get_sources_0_and_1_and_the_source_is_editable(make_window, demo_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    window = _window_on_foa(make_window, demo_store)
    controller = window.spatial_events
    controller.panel.mark.setChecked(True)
    controller.panel.class_box.setCurrentText("bell")
    box = window.player_view.spec_plot.getViewBox()
    box.mouseDragEvent(_Drag(box, 1.0, 2.0, shift=True, finish=True))
    box.mouseDragEvent(_Drag(box, 1.5, 2.5, shift=True, finish=True))
    service = EventService(demo_store)
    clip = _clip_id(demo_store, "DEMO-0004")
    events = service.events(clip, window.annotator.id)
    assert sorted(e.source_index for e in events) == [0, 1]
    assert controller.panel.source.value() == 1  # the new event is selected and shows its source
    controller.panel.source.setValue(4)  # the expert numbers it herself
    assert sorted(e.source_index for e in service.events(clip, window.annotator.id)) == [0, 4]
    controller.panel.source.setValue(0)  # taken by the overlapping bell: refused, the box shows the stored 4
    assert controller.panel.source.value() == 4
    assert sorted(e.source_index for e in service.events(clip, window.annotator.id)) == [0, 4]
    from workbench.events.files import export_events_file

    from storage.models import Annotator

    with demo_store.session() as s:
        name = s.get(Annotator, window.annotator.id).name
    assert name
    result = export_events_file(demo_store, "DEMO-0004", tmp_path / "bells.csv", annotator_id=window.annotator.id)
    assert result["n_events"] == 2  # export no longer refuses two sources 0
    controller.panel.grab().save(str(tmp_path / "events_source.png"))
