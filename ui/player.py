"""The player: waveform, spectrogram, tag timeline and direction view on one time axis.

All four plots share the x axis (``setXLink``); only the bottom plot draws the time axis.
The spectrogram is served from its pyramid at 1–2 columns per screen pixel (house rule 5)
by :class:`ui.image_items.PyramidImageItem`, which colours a window a little wider than the
view once and then only rescales it, so a scroll or zoom step is a blit, not a re-upload.
The waveform envelope is re-read for the visible span on each view change. During
playback only the playhead lines move, driven by a timer polling the player position.

Each colour scale has a legend with its unit (spectrogram dBFS, tag probability, the direction
view's quantity). The tag lane labels the spans where a tag is likely with the tag's name
(:mod:`ui.player_tags`). Playback, seeking, loops, solo and the spans and bands dragged on the
plots are :mod:`ui.player_transport`; without an audio output device the view says so and
stays stopped. A clip without audio says why on the plots.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QPen
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QGraphicsRectItem,
    QGraphicsTextItem,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QStackedLayout,
    QVBoxLayout,
    QWidget,
)

from ui.image_items import ArgbImageItem, PyramidImageItem, colour_table, quantise_unit
from ui.player_tags import TagLaneMixin, TagSegment
from ui.player_transport import NO_OUTPUT_DEVICE, TransportMixin
from workbench.audio.direction.view import DirectionImage
from workbench.audio.playback import NullSink, PlaybackError, Player

pg.setConfigOptions(imageAxisOrder="row-major", antialias=False)

PLAYHEAD_INTERVAL_MS = 33


# Short axis titles: the plots are low, a long rotated title runs into the plot above. The full
# wording (e.g. "azimuth (°, +90 = left)") is in the axis tooltip and the plot's note.
_DIRECTION_AXIS_TITLES = {"azimuth": "azimuth °", "lateral": "lateral °", "panorama": "panorama"}
# What the direction view's colour means, per kind (see workbench.audio.direction.view.direction_image): FOA
# energy is normalised to the clip's peak; the pair views mark, per frame, the bin of its angle.
# Short: a colour bar's title runs along a low row (the full wording is in its tooltip).
_DIRECTION_LEGENDS = {"azimuth": "energy (rel.)", "lateral": "frame in bin",
                      "panorama": "frame in bin"}
_DIRECTION_LEGEND_TIPS = {"azimuth": "direct energy, relative to the clip's peak",
                          "lateral": "1 where the frame's angle falls in the bin, else 0",
                          "panorama": "1 where the frame's angle falls in the bin, else 0"}
_NOTICE_WIDTH = 520
LEFT_AXIS_PX = 104  # wide enough for a tag lane's name (longer names are elided, the tooltip has them)
_LEGEND_MARGIN_PX = 9  # a colour bar stops short of its row, so its end labels stay in the row


def _lut(name: str) -> np.ndarray:
    return pg.colormap.get(name).getLookupTable(0.0, 1.0, 256)


def _legend(colormap: str, label: str, values: tuple[float, float] = (0.0, 1.0)) -> pg.ColorBarItem:
    """A colour bar with its unit, read-only (the levels are set by the view's own controls)."""
    bar = pg.ColorBarItem(values=values, width=12, colorMap=pg.colormap.get(colormap), interactive=False,
                          colorMapMenu=False)
    bar.axis.setLabel(label)
    bar.axis.setWidth(48)
    # The end labels (e.g. "1.0") are centred on the bar's ends: inset the bar so that they do not
    # reach into the next row's colour bar, and hide any that still would.
    bar.setContentsMargins(0, _LEGEND_MARGIN_PX, 0, _LEGEND_MARGIN_PX)
    bar.axis.setStyle(hideOverlappingLabels=_LEGEND_MARGIN_PX)
    return bar


class PlotCaption(pg.GraphicsWidget):
    """A plot's caption, in its own row above the plot: never drawn over the data.

    The text wraps to the width the layout gives and the row is as tall as its lines. A ``key``
    (a legend of what is drawn on the plot) sits at the row's right end, the text beside it.
    """

    _GAP_PX = 8

    def __init__(self, colour: str = "#dddddd") -> None:
        super().__init__()
        self.textItem = QGraphicsTextItem(self)
        self.textItem.setDefaultTextColor(pg.mkColor(colour))
        self.textItem.document().setDocumentMargin(2)
        self.key: pg.LegendItem | None = None
        self._fitting = False
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(40)
        self.fit()

    def setText(self, text: str) -> None:  # noqa: N802 - the name pg.TextItem has
        self.textItem.setPlainText(text)
        self.fit()

    def text(self) -> str:
        return self.textItem.toPlainText()

    def set_key(self, key: pg.LegendItem) -> None:
        """Show ``key`` at the caption's right end (it refits when the key's entries change)."""
        self.key = key
        key.setParentItem(self)
        key.geometryChanged.connect(self.fit)
        self.fit()

    def resizeEvent(self, event) -> None:  # type: ignore[no-untyped-def]  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self.fit()

    def fit(self) -> None:
        if self._fitting:
            return
        self._fitting = True
        try:
            width = max(self.size().width(), 40.0)
            key = self.key if self.key is not None and self.key.isVisible() and self.key.items else None
            key_width = key.width() + self._GAP_PX if key is not None else 0.0
            self.textItem.setTextWidth(max(width - key_width, 40.0))
            height = self.textItem.boundingRect().height() if self.text() else 0.0
            if key is not None:
                key.setPos(width - key.width(), 0.0)
                height = max(height, key.height())
            if abs(height - self.maximumHeight()) > 0.5 or abs(height - self.minimumHeight()) > 0.5:
                self.setMinimumHeight(height)
                self.setMaximumHeight(height)
                self.updateGeometry()
        finally:
            self._fitting = False


class TimeViewBox(pg.ViewBox):
    """A view box whose Shift+drag selects a time span (for the loop) instead of panning.

    With :attr:`draw_with_ctrl` set, a Ctrl+drag is handed out as a path (``pathDragged``)
    instead of panning: the events panel draws a moving source's track with it.

    Signals
    -------
    spanSelected(float, float, bool)
        Start and end time of the span dragged so far, and whether the drag is finished.
    boxSelected(float, float, float, float, bool)
        The same drag as a rectangle in view coordinates: t0, t1, y0, y1 (sorted), finished.
    pathDragged(float, float, bool, bool)
        Ctrl+drag (only with :attr:`draw_with_ctrl`): the pointer's view x and y, whether this is
        the drag's first point (its press position) and whether the drag is finished.
    """

    spanSelected = Signal(float, float, bool)
    boxSelected = Signal(float, float, float, float, bool)
    pathDragged = Signal(float, float, bool, bool)

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.draw_with_ctrl = False

    def mouseDragEvent(self, ev, axis=None) -> None:  # type: ignore[no-untyped-def]  # noqa: N802 - pyqtgraph override
        left = ev.button() == Qt.MouseButton.LeftButton
        if left and ev.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            ev.accept()
            start = self.mapSceneToView(ev.buttonDownScenePos())
            end = self.mapSceneToView(ev.scenePos())
            t0, t1 = sorted((start.x(), end.x()))
            y0, y1 = sorted((start.y(), end.y()))
            finished = bool(ev.isFinish())
            self.spanSelected.emit(t0, t1, finished)
            self.boxSelected.emit(t0, t1, y0, y1, finished)
            return
        if left and self.draw_with_ctrl and ev.modifiers() & Qt.KeyboardModifier.ControlModifier:
            ev.accept()
            if ev.isStart():
                # The drag only starts a few pixels after the press: the press point belongs to the path.
                down = self.mapSceneToView(ev.buttonDownScenePos())
                self.pathDragged.emit(down.x(), down.y(), True, False)
            point = self.mapSceneToView(ev.scenePos())
            self.pathDragged.emit(point.x(), point.y(), False, bool(ev.isFinish()))
            return
        super().mouseDragEvent(ev, axis)


class PlayerView(TagLaneMixin, TransportMixin, QWidget):
    """Plots, transport and playhead of one clip.

    Signals
    -------
    status(str)
        A message for the status bar (e.g. no audio device).
    scaleChanged(str)
        The user asked for the ``linear`` or ``mel`` frequency axis (the window reloads the pyramid).
    spectrogramPainted(int)
        The spectrogram of this clip id has been drawn on screen for the first time.
    spanBandSelected(float, float, bool, object)
        A Shift+drag on the spectrogram: start and end time, whether the drag is finished, and the
        frequency band ``(low_hz, high_hz)`` it covers, or None for a plain time span (a flat drag
        or one over the whole visible height).
    """

    status = Signal(str)
    scaleChanged = Signal(str)
    spectrogramPainted = Signal(int)
    spanBandSelected = Signal(float, float, bool, object)

    DEFAULT_DB = (-100.0, 0.0)

    def __init__(self, player: Player | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.player = player if player is not None else Player(NullSink())
        self._real_sink_wanted = player is None
        self.pyramid = None
        self.envelope = None
        self.clip_id: int | None = None
        self.spectrogram_clip_id: int | None = None
        self.duration = 0.0
        self.time_refs: list[float] = []
        self._loaded: tuple | None = None
        self._ref_lines: list[pg.InfiniteLine] = []

        self.graphics = pg.GraphicsLayoutWidget()
        self.wave_plot = self.graphics.addPlot(row=0, col=0, viewBox=TimeViewBox())
        self.spec_plot = self.graphics.addPlot(row=1, col=0, viewBox=TimeViewBox())
        self.tags_plot = self.graphics.addPlot(row=2, col=0, viewBox=TimeViewBox())
        # The direction view's caption (what it shows, what it cannot tell) in a row above it, with
        # the key of what is drawn on it (the events' classes): text beside the data, never on it.
        self.direction_note = PlotCaption()
        self.graphics.addItem(self.direction_note, row=3, col=0, colspan=2)
        self.direction_key = pg.LegendItem(labelTextColor="#eeeeee", colCount=8)
        self.direction_key.setVisible(False)
        self.direction_note.set_key(self.direction_key)
        self.direction_plot = self.graphics.addPlot(row=4, col=0, viewBox=TimeViewBox())
        layout = self.graphics.ci.layout
        for row, stretch in enumerate((1, 3, 1, 0, 2)):
            layout.setRowStretchFactor(row, stretch)
        for plot in (self.wave_plot, self.tags_plot, self.direction_plot):
            plot.setXLink(self.spec_plot)
        for plot in (self.wave_plot, self.spec_plot, self.tags_plot, self.direction_plot):
            plot.setMouseEnabled(x=True, y=False)
            plot.setMenuEnabled(False)
            plot.getAxis("left").setWidth(LEFT_AXIS_PX)
            plot.hideButtons()
            # Ranges are set explicitly: no bounds search over the items on every view change.
            plot.disableAutoRange()
            for side in ("left", "bottom", "right", "top"):
                # No SI prefixes: with them every range change re-lays out the axis label (HTML).
                plot.getAxis(side).enableAutoSIPrefix(False)
        # One time axis, under the bottom plot: the others would redraw theirs on every step.
        for plot in (self.wave_plot, self.spec_plot, self.tags_plot):
            plot.hideAxis("bottom")
        self.wave_plot.setLabel("left", "wave")
        self.spec_plot.setLabel("left", "Hz")
        # no axis title on the tag plot: its lanes' names fill the axis (one name per lane)
        self.direction_plot.setLabel("left", "direction")
        self.direction_plot.setLabel("bottom", "time (s)")
        self.spec_legend = _legend("inferno", "dBFS", (self.DEFAULT_DB[0], self.DEFAULT_DB[1]))
        self.tags_legend = _legend("viridis", "probability")
        self.direction_legend = _legend("magma", _DIRECTION_LEGENDS["azimuth"])
        self.direction_legend.setVisible(False)
        for row, legend in ((1, self.spec_legend), (2, self.tags_legend), (4, self.direction_legend)):
            self.graphics.addItem(legend, row=row, col=1)
        # Major and minor ticks only: the time axis is redrawn on every scroll/zoom step.
        self.direction_plot.getAxis("bottom").setStyle(maxTickLevel=1, maxTextLevel=1)

        self.wave_curve = pg.PlotDataItem(pen=pg.mkPen("#4a90d9"), connect="pairs", antialias=False)
        self.wave_plot.addItem(self.wave_curve)
        self.spec_image = PyramidImageItem(_lut("inferno"))
        self.spec_image.firstPainted.connect(self._spectrogram_drawn)
        self._announce: int | None = None
        self.spec_plot.addItem(self.spec_image)
        self.tags_image = ArgbImageItem()
        self._tags_table = colour_table(_lut("viridis"))
        self.tags_plot.addItem(self.tags_image)
        self.direction_image = ArgbImageItem()
        self._direction_table = colour_table(_lut("magma"))
        self.direction_plot.addItem(self.direction_image)
        self.tag_segments: list[QGraphicsRectItem] = []  # one per span, with its tooltip
        self._segments: list[TagSegment] = []
        self._timelines: list = []
        self.lanes: list = []
        self.hidden_tags: list = []
        # the lanes that fit follow the plot's height (a taller window shows more tags)
        self.tags_plot.getViewBox().sigResized.connect(self._layout_lanes)

        self.playheads = []
        for plot in (self.wave_plot, self.spec_plot, self.tags_plot, self.direction_plot):
            line = pg.InfiniteLine(pos=0.0, angle=90, movable=False, pen=pg.mkPen("#00ff88", width=1))
            plot.addItem(line, ignoreBounds=True)
            self.playheads.append(line)
        self.loop_region = pg.LinearRegionItem(values=(0.0, 1.0), brush=pg.mkBrush(80, 160, 255, 40))
        self.loop_region.setVisible(False)
        self.loop_region.sigRegionChangeFinished.connect(self._region_moved)
        self.spec_plot.addItem(self.loop_region, ignoreBounds=True)
        self._freq_top = 1.0
        self.band: tuple[float, float] | None = None  # the band of the last Shift+drag (Hz), if any
        self.band_rect = QGraphicsRectItem()  # that band over its span, dashed
        band_pen = QPen(pg.mkColor("#a8dcff"), 2, Qt.PenStyle.DashLine)
        band_pen.setCosmetic(True)
        self.band_rect.setPen(band_pen)
        self.band_rect.setBrush(QBrush(Qt.BrushStyle.NoBrush))
        self.band_rect.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.band_rect.setVisible(False)
        self.spec_plot.addItem(self.band_rect, ignoreBounds=True)
        self.spec_plot.getViewBox().boxSelected.connect(self._spec_box_selected)

        for plot in (self.wave_plot, self.spec_plot, self.tags_plot, self.direction_plot):
            plot.getViewBox().spanSelected.connect(self.select_loop)
        self.spec_plot.sigXRangeChanged.connect(self._range_changed)
        self.graphics.scene().sigMouseClicked.connect(self._scene_clicked)

        self.play_button = QPushButton("Play")
        self.play_button.clicked.connect(self.toggle_play)
        self.scale_box = QComboBox()
        self.scale_box.addItems(["linear", "mel"])
        self.scale_box.currentTextChanged.connect(self.scaleChanged.emit)
        self.db_low = QDoubleSpinBox()
        self.db_high = QDoubleSpinBox()
        for box, value in ((self.db_low, self.DEFAULT_DB[0]), (self.db_high, self.DEFAULT_DB[1])):
            box.setRange(-160.0, 20.0)
            box.setValue(value)
            box.valueChanged.connect(self._apply_levels)
        self.position_label = QLabel("0:00.0")
        self.solo_label = QLabel("all channels")
        self.output_problem: str | None = None  # why there is no audio output (None: there is one, or untried)
        self.output_notice = QLabel(NO_OUTPUT_DEVICE)
        self.output_notice.setTextFormat(Qt.TextFormat.PlainText)
        self.output_notice.setStyleSheet("color: #ffb74d; font-weight: bold;")
        self.output_notice.setVisible(False)
        controls = QHBoxLayout()
        for widget in (self.play_button, self.position_label, QLabel("axis"), self.scale_box, QLabel("dB"),
                       self.db_low, self.db_high, self.solo_label, self.output_notice):
            controls.addWidget(widget)
        controls.addStretch(1)
        # Why the plots are empty (no audio, or it could not be read), in a box over the plots.
        self.audio_notice = QLabel()
        self.audio_notice.setTextFormat(Qt.TextFormat.PlainText)
        self.audio_notice.setWordWrap(True)
        self.audio_notice.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.audio_notice.setFixedWidth(_NOTICE_WIDTH)
        self.audio_notice.setStyleSheet(
            "color: #f5f5f5; background-color: rgba(20, 20, 20, 220); border: 1px solid #888;"
            " border-radius: 4px; font-size: 14px; padding: 12px;")
        self._audio_overlay = QWidget()
        self._audio_overlay.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        overlay = QVBoxLayout(self._audio_overlay)
        overlay.addStretch(1)
        overlay.addWidget(self.audio_notice, 0, Qt.AlignmentFlag.AlignHCenter)
        overlay.addStretch(2)
        plots = QWidget()
        stack = QStackedLayout(plots)
        stack.setStackingMode(QStackedLayout.StackingMode.StackAll)
        stack.addWidget(self.graphics)
        stack.addWidget(self._audio_overlay)
        self._audio_overlay.setVisible(False)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(controls)
        box.addWidget(plots, 1)

        self.timer = QTimer(self)
        self.timer.setInterval(PLAYHEAD_INTERVAL_MS)
        self.timer.timeout.connect(self._poll_position)

    # ------------------------------------------------------------------ content

    def clear(self, message: str = "") -> None:
        """Forget the current clip (shown while the next one loads)."""
        self.stop_playback()
        self.clip_id = self.spectrogram_clip_id = None
        self._announce = None
        self.pyramid = self.envelope = None
        self._loaded = None
        self.spec_image.set_pyramid(None, 1.0)
        self.tags_image.clear()
        self.direction_image.clear()
        self.direction_legend.setVisible(False)
        self.wave_curve.setData([], [])
        self.direction_note.setText(message)
        self._audio_overlay.setVisible(False)
        self.loop_region.setVisible(False)
        self.band_rect.setVisible(False)
        self.band = None
        for line in self._ref_lines:
            self.spec_plot.removeItem(line)
        self._ref_lines = []

    def show_no_audio(self, message: str) -> None:
        """Say over the (empty) plots why there is no audio to show, e.g. none linked or unreadable."""
        self.audio_notice.setText(message)
        # A wrapped label in a layout does not grow to its text by itself: size it to the text.
        self.audio_notice.setFixedHeight(self.audio_notice.heightForWidth(_NOTICE_WIDTH))
        self._audio_overlay.setVisible(True)
        self._audio_overlay.raise_()

    @property
    def loaded_audio(self) -> tuple[np.ndarray, int, str | None] | None:
        """The current clip's samples, sample rate and layout as handed to the player (None: none yet)."""
        return self._loaded

    def set_audio(self, clip_id: int, samples: np.ndarray, sample_rate: int, layout: str | None) -> None:
        """Hand the decoded clip to the player (after :meth:`set_spectrogram` of the same clip)."""
        self.clip_id = clip_id
        self._loaded = (samples, sample_rate, layout)
        try:
            self.player.load(samples, sample_rate, layout)
        except PlaybackError as exc:
            self._set_output_problem(str(exc))
        else:
            if not self._real_sink_wanted:
                self._set_output_problem(None)
        self._update_playhead(0.0)

    def set_spectrogram(self, clip_id: int, pyramid, envelope) -> None:  # type: ignore[no-untyped-def]
        """Show a clip's spectrogram and waveform (called on the GUI thread with a worker's result).

        ``spectrogramPainted`` follows once it has been drawn (on the next paint).
        """
        self.spectrogram_clip_id = clip_id
        self._announce = clip_id
        self.pyramid, self.envelope = pyramid, envelope
        self.duration = float(pyramid.duration_s)
        freqs = pyramid.freqs_hz
        self.spec_plot.setLabel("left", "Hz" if pyramid.params.scale == "linear" else "Hz (mel)")
        self._freq_top = float(freqs[-1]) if pyramid.params.scale == "linear" else float(len(freqs))
        if pyramid.params.scale == "mel":
            ticks = [(i, f"{freqs[i]:.0f}") for i in range(0, len(freqs), max(1, len(freqs) // 6))]
            self.spec_plot.getAxis("left").setTicks([ticks])
        else:
            self.spec_plot.getAxis("left").setTicks(None)
        self.spec_image.set_pyramid(pyramid, self._freq_top)
        self.band_rect.setVisible(False)  # drawn in the old axis's heights (Hz or mel bins)
        self.spec_image.set_levels(*self._levels())
        self._audio_overlay.setVisible(False)
        self.spec_plot.setYRange(0, self._freq_top, padding=0)
        self.spec_plot.setLimits(xMin=0.0, xMax=max(self.duration, 0.1), minXRange=0.05)
        self.spec_plot.setXRange(0.0, max(self.duration, 0.1), padding=0)
        # A fixed waveform scale for the clip (its loudest bucket), not one per view.
        coarsest_min, coarsest_max = envelope.mins[-1], envelope.maxs[-1]
        peak = float(max(np.max(np.abs(coarsest_min), initial=0.0), np.max(np.abs(coarsest_max), initial=0.0)))
        self.wave_plot.setYRange(-peak if peak > 0 else -1.0, peak if peak > 0 else 1.0, padding=0.05)
        self._render_visible()
        self._update_playhead(0.0)

    def set_direction(self, view: DirectionImage | None) -> None:
        if view is None or view.image is None:
            self.direction_image.clear()
            self.direction_legend.setVisible(False)
            self.direction_note.setText(view.note if view else "")
            self.direction_plot.setYRange(0, 1, padding=0)
            return
        peak = float(np.nanmax(view.image)) if view.image.size else 0.0
        low, high = view.y_range
        self.direction_image.set_indexed(quantise_unit(view.image, peak if peak > 0 else 1.0), self._direction_table,
                                         QRectF(view.t0, low, view.t1 - view.t0, high - low), source=view.image)
        self.direction_plot.setLabel("left", _DIRECTION_AXIS_TITLES.get(view.kind, view.y_label))
        self.direction_legend.axis.setLabel(_DIRECTION_LEGENDS.get(view.kind, "relative value"))
        self.direction_legend.setToolTip(_DIRECTION_LEGEND_TIPS.get(view.kind, ""))
        self.direction_legend.setVisible(True)
        self.direction_plot.getAxis("left").setToolTip(view.y_label)
        self.direction_plot.setYRange(low, high, padding=0)
        self.direction_note.setText(f"{view.note} Axis: {view.y_label}." if view.y_label else view.note)

    def set_direction_key(self, entries: Sequence[tuple[pg.PlotDataItem, str]]) -> None:
        """The key of what is drawn on the direction view (one sample item and its name per entry),
        beside the view's caption above the plot; no entries hide it."""
        self.direction_key.clear()
        for item, name in entries:
            self.direction_key.addItem(item, name)
        self.direction_key.setVisible(bool(entries))
        self.direction_note.fit()

    def set_time_references(self, seconds: Sequence[float]) -> None:
        """Mark the reasoning's time references on the time axis."""
        for line in self._ref_lines:
            self.spec_plot.removeItem(line)
        self._ref_lines = []
        self.time_refs = list(seconds)
        for t in seconds:
            line = pg.InfiniteLine(pos=t, angle=90, movable=False,
                                   pen=pg.mkPen("#66ccff", width=1, style=Qt.PenStyle.DashLine))
            self.spec_plot.addItem(line, ignoreBounds=True)
            self._ref_lines.append(line)

    # ------------------------------------------------------------------ drawing

    @property
    def awaiting_paint(self) -> int | None:
        """The clip whose spectrogram was set but not drawn yet (``spectrogramPainted`` pending)."""
        return self._announce

    def _spectrogram_drawn(self) -> None:
        if self._announce is not None:
            clip_id, self._announce = self._announce, None
            self.spectrogramPainted.emit(clip_id)

    def _visible_pixels(self) -> int:
        return max(int(self.spec_plot.getViewBox().width()), 200)

    def _range_changed(self, *_args: object) -> None:
        self._render_visible()

    def _render_visible(self) -> None:
        """Show the visible window of the pyramids: the image item re-colours only when it must."""
        if self.pyramid is None:
            return
        (t0, t1), _ = self.spec_plot.getViewBox().viewRange()
        t0, t1 = max(0.0, t0), min(self.duration, t1)
        if t1 <= t0:
            return
        width = self._visible_pixels()
        self.spec_image.show_range(t0, t1, width)
        times, mins, maxs = self.envelope.view(t0, t1, width)
        x = np.repeat(times, 2)
        y = np.empty(2 * len(times), dtype=np.float32)
        y[0::2], y[1::2] = mins, maxs
        self.wave_curve.setData(x, y, skipFiniteCheck=True)

    def _levels(self) -> tuple[float, float]:
        params = self.pyramid.params if self.pyramid is not None else None
        if params is None:
            return (0.0, 255.0)
        span = params.db_ceiling - params.db_floor
        low = (self.db_low.value() - params.db_floor) / span * 255.0
        high = (self.db_high.value() - params.db_floor) / span * 255.0
        return (low, max(high, low + 1.0))

    def _apply_levels(self) -> None:
        low, high = self.db_low.value(), self.db_high.value()
        self.spec_legend.setLevels((low, max(high, low + 1e-3)))
        if self.pyramid is not None:
            self.spec_image.set_levels(*self._levels())

