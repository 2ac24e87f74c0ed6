"""The player: waveform, spectrogram, tag timeline and direction view on one time axis.

All four plots share the x axis (``setXLink``); only the bottom plot draws the time axis.
The spectrogram is served from its pyramid at 1–2 columns per screen pixel (house rule 5)
by :class:`ui.image_items.PyramidImageItem`, which colours a window a little wider than the
view once and then only rescales it, so a scroll or zoom step is a blit, not a re-upload.
The waveform envelope is re-read for the visible span on each view change. During
playback only the playhead lines move, driven by a timer polling the player position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ui.image_items import ArgbImageItem, PyramidImageItem, colour_table, quantise_unit
from workbench.audio.playback import NullSink, PlaybackError, Player, PlayerState
from workbench.review import DirectionImage, TimelineView

pg.setConfigOptions(imageAxisOrder="row-major", antialias=False)

PLAYHEAD_INTERVAL_MS = 33


# Short axis titles: the plots are low, a long rotated title runs into the plot above. The full
# wording (e.g. "azimuth (°, +90 = left)") is in the axis tooltip and the plot's note.
_DIRECTION_AXIS_TITLES = {"azimuth": "azimuth °", "lateral": "lateral °", "panorama": "panorama"}
MIN_LOOP_S = 0.05


def _lut(name: str) -> np.ndarray:
    return pg.colormap.get(name).getLookupTable(0.0, 1.0, 256)


class TimeViewBox(pg.ViewBox):
    """A view box whose Shift+drag selects a time span (for the loop) instead of panning.

    Signals
    -------
    spanSelected(float, float, bool)
        Start and end time of the span dragged so far, and whether the drag is finished.
    """

    spanSelected = Signal(float, float, bool)

    def mouseDragEvent(self, ev, axis=None) -> None:  # type: ignore[no-untyped-def]  # noqa: N802 - pyqtgraph override
        if ev.button() == Qt.MouseButton.LeftButton and ev.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            ev.accept()
            start = self.mapSceneToView(ev.buttonDownScenePos()).x()
            end = self.mapSceneToView(ev.scenePos()).x()
            self.spanSelected.emit(min(start, end), max(start, end), bool(ev.isFinish()))
            return
        super().mouseDragEvent(ev, axis)


class PlayerView(QWidget):
    """Plots, transport and playhead of one clip.

    Signals
    -------
    status(str)
        A message for the status bar (e.g. no audio device).
    scaleChanged(str)
        The user asked for the ``linear`` or ``mel`` frequency axis (the window reloads the pyramid).
    spectrogramPainted(int)
        The spectrogram of this clip id has been drawn on screen for the first time.
    """

    status = Signal(str)
    scaleChanged = Signal(str)
    spectrogramPainted = Signal(int)

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
        self.direction_plot = self.graphics.addPlot(row=3, col=0, viewBox=TimeViewBox())
        layout = self.graphics.ci.layout
        for row, stretch in enumerate((1, 3, 1, 2)):
            layout.setRowStretchFactor(row, stretch)
        for plot in (self.wave_plot, self.tags_plot, self.direction_plot):
            plot.setXLink(self.spec_plot)
        for plot in (self.wave_plot, self.spec_plot, self.tags_plot, self.direction_plot):
            plot.setMouseEnabled(x=True, y=False)
            plot.setMenuEnabled(False)
            plot.getAxis("left").setWidth(60)
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
        self.tags_plot.setLabel("left", "tags")
        self.direction_plot.setLabel("left", "direction")
        self.direction_plot.setLabel("bottom", "time (s)")
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
        self.direction_note = pg.TextItem("", color="#dddddd", anchor=(0, 0))
        self.direction_plot.addItem(self.direction_note, ignoreBounds=True)

        self.playheads = []
        for plot in (self.wave_plot, self.spec_plot, self.tags_plot, self.direction_plot):
            line = pg.InfiniteLine(pos=0.0, angle=90, movable=False, pen=pg.mkPen("#00ff88", width=1))
            plot.addItem(line, ignoreBounds=True)
            self.playheads.append(line)
        self.loop_region = pg.LinearRegionItem(values=(0.0, 1.0), brush=pg.mkBrush(80, 160, 255, 40))
        self.loop_region.setVisible(False)
        self.loop_region.sigRegionChangeFinished.connect(self._region_moved)
        self.spec_plot.addItem(self.loop_region, ignoreBounds=True)

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
        for box, value in ((self.db_low, -100.0), (self.db_high, 0.0)):
            box.setRange(-160.0, 20.0)
            box.setValue(value)
            box.valueChanged.connect(self._apply_levels)
        self.position_label = QLabel("0:00.0")
        self.solo_label = QLabel("all channels")
        controls = QHBoxLayout()
        for widget in (self.play_button, self.position_label, QLabel("axis"), self.scale_box, QLabel("dB"),
                       self.db_low, self.db_high, self.solo_label):
            controls.addWidget(widget)
        controls.addStretch(1)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(controls)
        box.addWidget(self.graphics, 1)

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
        self.wave_curve.setData([], [])
        self.direction_note.setText(message)
        self.loop_region.setVisible(False)
        for line in self._ref_lines:
            self.spec_plot.removeItem(line)
        self._ref_lines = []

    def set_audio(self, clip_id: int, samples: np.ndarray, sample_rate: int, layout: str | None) -> None:
        """Hand the decoded clip to the player (after :meth:`set_spectrogram` of the same clip)."""
        self.clip_id = clip_id
        self._loaded = (samples, sample_rate, layout)
        try:
            self.player.load(samples, sample_rate, layout)
        except PlaybackError as exc:
            self.status.emit(f"playback unavailable: {exc}")
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
        self.spec_image.set_levels(*self._levels())
        self.spec_plot.setYRange(0, self._freq_top, padding=0)
        self.spec_plot.setLimits(xMin=0.0, xMax=max(self.duration, 0.1), minXRange=0.05)
        self.spec_plot.setXRange(0.0, max(self.duration, 0.1), padding=0)
        # A fixed waveform scale for the clip (its loudest bucket), not one per view.
        coarsest_min, coarsest_max = envelope.mins[-1], envelope.maxs[-1]
        peak = float(max(np.max(np.abs(coarsest_min), initial=0.0), np.max(np.abs(coarsest_max), initial=0.0)))
        self.wave_plot.setYRange(-peak if peak > 0 else -1.0, peak if peak > 0 else 1.0, padding=0.05)
        self._render_visible()
        self._update_playhead(0.0)

    def set_timelines(self, timelines: Sequence[TimelineView]) -> None:
        """Per-second tag probabilities as rows of an image."""
        if not timelines:
            self.tags_image.clear()
            return
        length = max(len(t.values) for t in timelines)
        image = np.zeros((len(timelines), length), dtype=np.float32)
        for row, timeline in enumerate(timelines):
            image[row, : len(timeline.values)] = timeline.values
        hop = timelines[0].hop_s
        self.tags_image.set_indexed(quantise_unit(image, 1.0), self._tags_table,
                                    QRectF(0.0, 0.0, length * hop, len(timelines)), source=image)
        ticks = [(row + 0.5, timeline.name[:14]) for row, timeline in enumerate(timelines)]
        self.tags_plot.getAxis("left").setTicks([ticks])
        self.tags_plot.setYRange(0, len(timelines), padding=0)

    def set_direction(self, view: DirectionImage | None) -> None:
        if view is None or view.image is None:
            self.direction_image.clear()
            self.direction_note.setText(view.note if view else "")
            self.direction_note.setPos(0.0, 1.0)
            self.direction_plot.setYRange(0, 1, padding=0)
            return
        peak = float(np.nanmax(view.image)) if view.image.size else 0.0
        low, high = view.y_range
        self.direction_image.set_indexed(quantise_unit(view.image, peak if peak > 0 else 1.0), self._direction_table,
                                         QRectF(view.t0, low, view.t1 - view.t0, high - low), source=view.image)
        self.direction_plot.setLabel("left", _DIRECTION_AXIS_TITLES.get(view.kind, view.y_label))
        self.direction_plot.getAxis("left").setToolTip(view.y_label)
        self.direction_plot.setYRange(low, high, padding=0)
        self.direction_note.setText(f"{view.note}\nAxis: {view.y_label}." if view.y_label else view.note)
        self.direction_note.setPos(0.0, high)

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
        if self.pyramid is not None:
            self.spec_image.set_levels(*self._levels())

    # ------------------------------------------------------------------ transport

    def _ensure_output(self) -> None:
        if not self._real_sink_wanted:
            return
        self._real_sink_wanted = False
        from workbench.audio.playback import SounddeviceSink

        try:
            player = Player(SounddeviceSink())
            if self._loaded is not None:
                player.load(*self._loaded)
            self.player = player
        except PlaybackError as exc:
            self.status.emit(f"no audio output: {exc}")

    def toggle_play(self) -> None:
        if self.clip_id is None:
            return
        self._ensure_output()
        try:
            if self.player.state == PlayerState.PLAYING:
                self.player.pause()
                self.timer.stop()
                self.play_button.setText("Play")
            else:
                self.player.play()
                self.timer.start()
                self.play_button.setText("Pause")
        except PlaybackError as exc:
            self.status.emit(f"playback failed: {exc}")
        self._update_playhead(self.player.position)

    def stop_playback(self) -> None:
        self.timer.stop()
        if self.player.state == PlayerState.PLAYING:
            self.player.pause()
        self.play_button.setText("Play")

    def seek(self, seconds: float) -> None:
        """Move the playhead (and the player) to ``seconds``."""
        if self.clip_id is None:
            return
        self.player.seek(max(0.0, min(seconds, self.duration)))
        self._update_playhead(self.player.position)

    def seek_by(self, delta: float) -> None:
        self.seek(self.player.position + delta)

    def toggle_loop(self) -> None:
        """Loop the selected region; a second press plays on to the end."""
        if self.clip_id is None:
            return
        if self.player.loop is not None:
            self.player.clear_loop()
            self.loop_region.setVisible(False)
            return
        if not self.loop_region.isVisible():
            start = self.player.position
            self.loop_region.setRegion((start, min(start + 5.0, self.duration)))
            self.loop_region.setVisible(True)
        t0, t1 = self.loop_region.getRegion()
        if t1 > t0:
            self.player.set_loop(t0, t1)

    def select_loop(self, t0: float, t1: float, finished: bool = True) -> None:
        """Show the span [t0, t1] (Shift+drag on any plot) as the loop region; once the drag is
        finished, loop it (spans shorter than :data:`MIN_LOOP_S` are ignored)."""
        if self.clip_id is None:
            return
        t0, t1 = max(0.0, min(t0, self.duration)), max(0.0, min(t1, self.duration))
        if t1 - t0 < MIN_LOOP_S:
            return
        self.loop_region.setRegion((t0, t1))
        self.loop_region.setVisible(True)
        if finished:
            self.player.set_loop(t0, t1)
            self.status.emit(f"looping {t0:.2f}–{t1:.2f} s (L stops the loop)")

    def _region_moved(self) -> None:
        if self.player.loop is not None:
            t0, t1 = self.loop_region.getRegion()
            if t1 > t0:
                self.player.set_loop(t0, t1)

    def solo(self, channel: int | None) -> None:
        """Play only ``channel`` (0-based); the same channel again (or None) plays all."""
        if self.clip_id is None:
            return
        if channel is not None and channel >= self.player.n_channels:
            self.status.emit(f"this clip has {self.player.n_channels} channel(s); no channel {channel + 1}")
            return
        if channel is not None and self.player.soloed == channel:
            channel = None
        self.player.solo(channel)
        self.solo_label.setText("all channels" if channel is None else f"solo channel {channel + 1}")

    def _poll_position(self) -> None:
        self._update_playhead(self.player.position)
        if self.player.state != PlayerState.PLAYING:
            self.timer.stop()
            self.play_button.setText("Play")

    def _update_playhead(self, seconds: float) -> None:
        for line in self.playheads:
            line.setValue(seconds)
        minutes, rest = divmod(seconds, 60.0)
        self.position_label.setText(f"{int(minutes)}:{rest:04.1f}")

    def _scene_clicked(self, event) -> None:  # type: ignore[no-untyped-def]
        if event.button() != Qt.MouseButton.LeftButton or event.double():
            return
        for plot in (self.spec_plot, self.wave_plot, self.tags_plot, self.direction_plot):
            box = plot.getViewBox()
            if box.sceneBoundingRect().contains(event.scenePos()):
                self.seek(box.mapSceneToView(event.scenePos()).x())
                return

    def shutdown(self) -> None:
        self.timer.stop()
        try:
            self.player.close()
        except PlaybackError:
            pass
