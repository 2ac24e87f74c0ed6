"""Map view: true location, both imported ALMs' guesses with geodesic error lines, pool overview."""

from __future__ import annotations

import numpy as np
import pytest

from storage.models import AlmRun, Clip, Dataset, Prediction
from ui.cockpit.map_data import great_circle, outline_path
from ui.cockpit.map_view import MapView
from workbench.review.service import ReviewService


@pytest.fixture
def two_alm_store(store):  # type: ignore[no-untyped-def]
    with store.write() as s:
        dataset = Dataset(name="map-test")
        s.add(dataset)
        s.flush()
        alms = [AlmRun(model="alm-one"), AlmRun(model="alm-two")]
        s.add_all(alms)
        s.flush()
        stockholm = Clip(dataset_id=dataset.id, key="sthlm", latitude=59.33, longitude=18.06)
        tokyo = Clip(dataset_id=dataset.id, key="tokyo", latitude=35.68, longitude=139.69)
        s.add_all([stockholm, tokyo])
        s.flush()
        guesses = {("alm-one", "sthlm"): ("59.91", "10.75"), ("alm-two", "sthlm"): ("40.71", "-74.01"),
                   ("alm-one", "tokyo"): ("Unknown", "Unknown"), ("alm-two", "tokyo"): ("37.57", "126.98")}
        for alm in alms:
            for clip in (stockholm, tokyo):
                lat, lon = guesses[(alm.model, clip.key)]
                s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=clip.key, true_latitude=clip.latitude,
                                 true_longitude=clip.longitude, predicted_latitude=lat, predicted_longitude=lon))
    return store


def test_outlines_come_from_the_offline_package() -> None:
    lon, lat = outline_path("gshhs", "c")
    finite = np.isfinite(lon)
    assert finite.sum() > 5000 and (~finite).sum() > 100  # many polygons, NaN-separated
    assert lon[finite].min() >= -180 and lon[finite].max() <= 180 and lat[finite].min() >= -90
    borders, _ = outline_path("countries", "c")
    assert np.isfinite(borders).sum() > 10_000
    # a trans-Pacific geodesic is split at the antimeridian
    gx, gy = great_circle(35.68, 139.69, 37.77, -122.42, n=32)
    assert np.isnan(gx).sum() == 1 and gx[0] == pytest.approx(139.69) and gx[-1] == pytest.approx(-122.42)


def test_map_shows_truth_and_both_alms_for_a_clip(qtbot, two_alm_store) -> None:  # type: ignore[no-untyped-def]
    review = ReviewService(two_alm_store)
    view = MapView(two_alm_store)
    qtbot.addWidget(view)
    view.set_clip(review.clip_detail(review.clip_id_for_key("sthlm")))
    truth_x, truth_y = view.truth.getData()
    assert list(truth_x) == [pytest.approx(18.06)] and list(truth_y) == [pytest.approx(59.33)]
    spots = {p.data(): (p.pos().x(), p.pos().y()) for p in view.predictions.points()}
    assert spots == {"alm-one": (pytest.approx(10.75), pytest.approx(59.91)),
                     "alm-two": (pytest.approx(-74.01), pytest.approx(40.71))}
    errors = {p.model: p.error_km for p in view.points}
    assert errors["alm-one"] == pytest.approx(417, abs=5) and errors["alm-two"] == pytest.approx(6300, abs=60)
    # two error lines, each from the truth to its guess
    lx, ly = view.lines.getData()
    pieces = np.split(np.column_stack([lx, ly]), np.flatnonzero(np.isnan(lx)))
    ends = sorted((tuple(np.round(p[~np.isnan(p[:, 0])][[0, -1]].ravel(), 2))) for p in pieces if np.isfinite(p).any())
    assert ends == [(18.06, 59.33, -74.01, 40.71), (18.06, 59.33, 10.75, 59.91)]
    shown = "\n".join(view.legend_texts())
    assert "alm-one: 59.910, 10.750" in shown and "alm-two: 40.710, -74.010" in shown
    assert "#" not in shown  # colours are swatches, not codes (issue 30)
    assert sorted(view.swatches.colours()) == sorted(["#ffd700", *(b.color().name() for b in view.predictions.data["brush"])])

    # a refusal is listed but not drawn
    view.set_clip(review.clip_detail(review.clip_id_for_key("tokyo")))
    assert [p.data() for p in view.predictions.points()] == ["alm-two"]
    assert "alm-one: no location" in "\n".join(view.legend_texts())

    # pool overview for one ALM: one point per clip, coloured by its error
    view.pool_model.setCurrentIndex(view.pool_model.findData("alm-two"))
    px, py = view.pool.getData()
    assert sorted(zip(np.round(px, 2), np.round(py, 2))) == [(18.06, 59.33), (139.69, 35.68)]
    assert "2 clips" in view.pool_summary.text()


# ---------------------------------------------------------------------- issue 39: the map as printed


def test_the_truths_legend_swatch_is_the_star_its_marker_is(qtbot, two_alm_store) -> None:  # type: ignore[no-untyped-def]
    review = ReviewService(two_alm_store)
    view = MapView(two_alm_store)
    qtbot.addWidget(view)
    view.set_clip(review.clip_detail(review.clip_id_for_key("sthlm")))
    symbols = dict(zip(view.swatches.colours(), view.swatches.symbols()))
    assert view.truth.opts["symbol"] == "star" and symbols["#ffd700"] == "star"
    assert view.predictions.opts["symbol"] == "o"
    assert {symbols[b.color().name()] for b in view.predictions.data["brush"]} == {"circle"}


def test_the_basemap_has_the_great_lakes(qtbot, two_alm_store) -> None:  # type: ignore[no-untyped-def]
    """Lakes are drawn: the Great Lakes' outline lies inland, where no sea coast runs."""
    view = MapView(two_alm_store)
    qtbot.addWidget(view)
    lon, lat = view.coast.getData()
    great_lakes = (lon > -92.0) & (lon < -79.0) & (lat > 41.5) & (lat < 48.9)
    assert great_lakes.sum() > 50
    caspian = (lon > 47.0) & (lon < 54.0) & (lat > 37.0) & (lat < 47.0)  # a lake inside Eurasia too
    assert caspian.sum() > 20


@pytest.mark.qt_log_ignore("does not support propagateSizeHints", "does not support raise")
def test_the_guess_map_shows_the_whole_world_at_1280x800(make_window) -> None:  # type: ignore[no-untyped-def]
    """Blind, nothing to frame: every longitude from -180° to 180° is on screen (New Zealand too)."""
    from PySide6.QtWidgets import QApplication

    window = make_window()
    window.resize(1280, 800)
    window.show()
    window.open_clip(window.review.clip_id_for_key("DEMO-0004"))
    window.guess_mode.action.setChecked(True)
    dock = window.cockpit.detach("map", (1280, 800))
    for _ in range(5):
        QApplication.processEvents()
    (x0, x1), (y0, y1) = window.cockpit.map.plot.getPlotItem().getViewBox().viewRange()
    assert x0 <= -180.0 and x1 >= 180.0 and y0 <= -90.0 and y1 >= 90.0, (x0, x1, y0, y1)
    dock.setFloating(False)
