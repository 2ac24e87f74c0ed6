"""Humans as localizers in the GUI: a blind guess clicked on the map, saved with its confidence
through the command stack (undo works), the truth hidden until then; a blind study plan starts
its annotators' review window blind."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication

from workbench.labels import LabelService
from workbench.metrics.distance import prediction_error_km
from workbench.studies.localizers import guess_records
from workbench.studies.planning import create_plan

# the offscreen platform says these when a window (or the floating map) is shown and raised
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints", "does not support raise")

PARIS = (2.35, 48.85)  # (longitude, latitude) clicked


def _first_clip_with_truth_and_answers(window) -> int:  # type: ignore[no-untyped-def]
    for clip_id in window.browser.visible_clip_ids():
        detail = window.review.clip_detail(clip_id, window.annotator.id)
        if detail.latitude is not None and detail.predictions:
            return clip_id
    raise AssertionError("the demo project has no clip with a true location and an ALM answer")


def _click_map(qtbot, view, lon: float, lat: float) -> None:  # type: ignore[no-untyped-def]
    """A real left click on the plot at a map position (pyqtgraph turns it into sigMouseClicked)."""
    box = view.plot.getPlotItem().getViewBox()
    scene = box.mapViewToScene(QPointF(lon, lat))
    qtbot.mouseClick(view.plot.viewport(), Qt.MouseButton.LeftButton, pos=view.plot.mapFromScene(scene))


def _n(item) -> int:  # type: ignore[no-untyped-def]
    """How many points a pyqtgraph item draws (an empty PlotDataItem gives None)."""
    xs = item.getData()[0]
    return 0 if xs is None else len(xs)


def _truth_on_map(view) -> bool:  # type: ignore[no-untyped-def]
    return _n(view.truth) > 0


def test_guess_on_the_map_is_blind_saved_with_confidence_and_undone(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.show()
    qtbot.waitExposed(window)
    window.open_clip(_first_clip_with_truth_and_answers(window))
    detail = window.detail
    view = window.cockpit.map
    guess = window.guess_mode
    true_coordinates = f"{detail.latitude:.3f}, {detail.longitude:.3f}"
    # without guess mode the truth and the ALMs' answers are shown everywhere
    assert _truth_on_map(view) and len(view.predictions.points()) > 0
    assert "True:" in window.location_line.text()
    pseudonym = LabelService(demo_store).find_annotator("tester").pseudonym

    dock = window.cockpit.detach("map", (1000, 700))
    qtbot.waitExposed(dock)
    qtbot.mouseClick(guess.controls.mode, Qt.MouseButton.LeftButton)
    assert guess.active and window.guess_mode.action.isChecked()
    # blind: no truth, no answers, no error lines, no pool overview; the window's texts say so
    assert not _truth_on_map(view) and len(view.predictions.points()) == 0
    assert _n(view.lines) == 0
    assert true_coordinates not in view.legend.text()
    view.pool_model.setCurrentIndex(1)  # an overview would show every clip's true location
    assert _n(view.pool) == 0 and not view.pool_model.isEnabled()
    for text in (window.location_line.text(), window.info.truth.text(), window.info.predictions.toPlainText()):
        assert true_coordinates not in text and (detail.city or true_coordinates) not in text and "hidden" in text
    assert detail.prediction.reasoning not in window.reasoning.toPlainText()
    assert "hidden" in window.reasoning.toPlainText()
    assert window.browser.table.isColumnHidden(1) and window.browser.table.isColumnHidden(2)
    assert not window.guess_mode.controls.save.isEnabled()  # nothing placed yet

    _click_map(qtbot, view, *PARIS)
    assert guess.placed == (pytest.approx(PARIS[0], abs=1.0), pytest.approx(PARIS[1], abs=1.0))
    marker_x, marker_y = guess.marker.getData()
    assert (marker_x[0], marker_y[0]) == guess.placed
    guess.controls.confidence.setValue(80)
    assert guess.controls.confidence_label.text() == "0.80"
    assert guess_records(demo_store).empty and not _truth_on_map(view)  # placed is not saved, nor revealed

    qtbot.mouseClick(guess.controls.save, Qt.MouseButton.LeftButton)
    records = guess_records(demo_store)
    assert len(records) == 1
    row = records.iloc[0]
    assert row["model"] == f"human:{pseudonym}" and row["clip_key"] == detail.key
    assert float(row["predicted_longitude"]) == pytest.approx(guess.stored.longitude)
    assert float(row["predicted_latitude"]) == pytest.approx(PARIS[1], abs=1.0)
    assert row["confidence"] == pytest.approx(0.8)
    # saved: the truth is revealed with the guess's distance error
    expected_km = prediction_error_km(detail.latitude, detail.longitude, row["predicted_latitude"],
                                      row["predicted_longitude"])
    assert f"error {expected_km:,.0f} km" in guess.controls.message.text()
    assert _truth_on_map(view) and _n(guess.line) > 1
    assert "True:" in window.location_line.text()
    assert window.stack.undo_text == "set location guess (latitude, longitude, confidence)"

    # a click after saving does not move the saved guess
    _click_map(qtbot, view, 100.0, 10.0)
    kept = float(guess_records(demo_store).iloc[0]["predicted_longitude"])
    assert kept == pytest.approx(float(row["predicted_longitude"]))

    dock.activateWindow()  # Ctrl+Z where the person is: the floating map
    qtbot.waitUntil(lambda: QApplication.activeWindow() is dock)
    qtbot.keyClick(guess.controls.save, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert guess_records(demo_store).empty
    assert not _truth_on_map(view) and "hidden" in window.location_line.text()
    window.redo()
    assert len(guess_records(demo_store)) == 1 and _truth_on_map(view)

    # leaving guess mode shows everything again on a clip not guessed
    window.undo()
    assert not _truth_on_map(view)
    qtbot.mouseClick(guess.controls.mode, Qt.MouseButton.LeftButton)
    assert not guess.active and _truth_on_map(view) and "True:" in window.location_line.text()
    assert not window.browser.table.isColumnHidden(1)


def test_guess_mode_keeps_the_next_clip_blind(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    window.show()
    qtbot.waitExposed(window)
    window.open_clip(_first_clip_with_truth_and_answers(window))
    guess = window.guess_mode
    guess.set_active(True)
    guess.place(*PARIS)
    assert guess.save()
    assert _truth_on_map(window.cockpit.map)
    window.step_clip(1)
    assert window.detail is not None and guess.placed is None
    assert not _truth_on_map(window.cockpit.map) and "hidden" in window.location_line.text()
    assert not guess.controls.save.isEnabled()


def test_a_blind_study_plan_starts_its_annotators_blind(make_window, demo_store) -> None:  # type: ignore[no-untyped-def]
    first = make_window(annotator="alice")
    first.set_blind_mode(False)  # remembered on this machine
    clip_id = first.browser.visible_clip_ids()[0]
    first.open_clip(clip_id)
    assert first.judges_visible()
    assert make_window(annotator="alice").blind_mode is False  # no plan yet: the machine's setting

    create_plan(demo_store, "blind study", ["alice", "bob"], overlap=2, blind=True)
    create_plan(demo_store, "open study", ["carol", "dave"], overlap=2, blind=False)
    window = make_window(annotator="alice")
    assert window.blind_mode and window.blind_action.isChecked()
    window.open_clip(clip_id)
    assert not window.judges_visible() and window.clip_panel.reveal.isEnabled()
    # a plan that is not blind leaves the machine's setting alone
    assert make_window(annotator="carol").blind_mode is False


def test_the_slider_shows_the_saved_confidence(make_window, demo_store, qtbot) -> None:  # type: ignore[no-untyped-def]
    """Saved with 0.60, the guess's confidence stays on the slider: after the save, on coming back
    to the clip, and in a window opened later (issue 39)."""
    window = make_window()
    window.show()
    qtbot.waitExposed(window)
    clip_id = _first_clip_with_truth_and_answers(window)
    window.open_clip(clip_id)
    guess = window.guess_mode
    guess.set_active(True)
    guess.place(*PARIS)
    guess.controls.confidence.setValue(60)
    assert guess.save()
    assert guess_records(demo_store).iloc[0]["confidence"] == pytest.approx(0.6)
    assert guess.controls.confidence.value() == 60 and guess.controls.confidence_label.text() == "0.60"
    window.step_clip(1)
    guess.controls.confidence.setValue(50)  # the next clip's guess starts elsewhere
    window.open_clip(clip_id)
    assert guess.controls.confidence.value() == 60 and guess.controls.confidence_label.text() == "0.60"

    later = make_window()
    later.show()
    later.open_clip(clip_id)
    later.guess_mode.set_active(True)
    assert later.guess_mode.controls.confidence_label.text() == "0.60"
