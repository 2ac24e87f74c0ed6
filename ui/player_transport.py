"""The player's transport and selections: play, pause, seek, loop, solo, the playhead, and the
spans and frequency bands dragged on the plots.

Without an audio output device the view says so and stays stopped; the device is opened on
the first play (again after it was missing). A mixin of :class:`ui.player.PlayerView` (which
builds the widgets and sets the attributes named below), split from it to keep that file to
its plots.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QRectF, Qt

from ui.evidence import plain_tooltip
from workbench.audio.playback import PlaybackError, Player, PlayerState

if TYPE_CHECKING:
    import pyqtgraph as pg
    from PySide6.QtCore import QTimer, SignalInstance
    from PySide6.QtWidgets import QGraphicsRectItem, QLabel, QPushButton

    from workbench.audio.spectrogram import SpectrogramPyramid

MIN_LOOP_S = 0.05
# A Shift+drag on the spectrogram less tall than this (pixels), or over nearly all of its visible
# height, is a plain time span: a band needs a deliberate vertical extent.
MIN_BAND_PX = 10.0
FULL_HEIGHT_SHARE = 0.97
NO_OUTPUT_DEVICE = "no audio output device — playback unavailable"


class TransportMixin:
    """Playback and selection of :class:`ui.player.PlayerView`."""

    player: Player
    clip_id: int | None
    duration: float
    pyramid: SpectrogramPyramid | None
    band: tuple[float, float] | None
    output_problem: str | None
    _loaded: tuple[np.ndarray, int, str] | None  # samples, rate, layout: loaded on the first play
    _real_sink_wanted: bool
    _freq_top: float
    timer: QTimer
    play_button: QPushButton
    position_label: QLabel
    solo_label: QLabel
    output_notice: QLabel
    loop_region: pg.LinearRegionItem
    band_rect: QGraphicsRectItem
    playheads: list[pg.InfiniteLine]
    spec_plot: pg.PlotItem
    wave_plot: pg.PlotItem
    tags_plot: pg.PlotItem
    direction_plot: pg.PlotItem
    status: SignalInstance  # the view's Signal(str)
    spanBandSelected: SignalInstance  # the view's Signal(float, float, bool, object)

    def _set_output_problem(self, problem: str | None) -> None:
        """Show (or clear) that there is no audio output: the view then never shows "playing"."""
        self.output_problem = problem
        self.output_notice.setVisible(problem is not None)
        self.output_notice.setToolTip(plain_tooltip(problem) if problem else "")
        if problem is not None:
            self.stop_playback()

    def _ensure_output(self) -> bool:
        """Open the audio output if it is not open: on the first play when the view chose the
        device itself, or again after a device was missing (it may have been plugged in since).
        The position, loop and solo are kept. False, with the reason shown, when there is none."""
        old = self.player
        position, loop, soloed, muted = old.position, old.loop, old.soloed, old.muted
        if self._real_sink_wanted:
            from workbench.audio.playback import SounddeviceSink

            old.close()
            self.player = Player(SounddeviceSink())  # the silent default player never plays
            self._real_sink_wanted = False
            self.output_problem = "not opened yet"
        if self.output_problem is None:
            return True
        if self._loaded is None:
            return False
        try:
            self.player.load(*self._loaded)
        except PlaybackError as exc:
            self._set_output_problem(str(exc))
            return False
        self.player.seek(position)
        if loop is not None:
            self.player.set_loop(*loop)
        self.player.solo(soloed)
        for channel in muted:
            self.player.mute(channel)
        self._set_output_problem(None)
        return True

    def toggle_play(self) -> None:
        if self.clip_id is None:
            return
        if self.player.state != PlayerState.PLAYING and not self._ensure_output():
            self.stop_playback()
            self.status.emit(f"{NO_OUTPUT_DEVICE}: {self.output_problem}")
            self._update_playhead(self.player.position)
            return
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
            self.stop_playback()
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
        self.band_rect.setVisible(False)  # a spectrogram drag shows its band again right after this
        self.loop_region.setRegion((t0, t1))
        self.loop_region.setVisible(True)
        if finished:
            self.player.set_loop(t0, t1)
            self.status.emit(f"looping {t0:.2f}–{t1:.2f} s (L stops the loop)")

    def hz_at(self, y: float) -> float:
        """The frequency (Hz) at height ``y`` of the spectrogram (on the mel axis, y is a bin index)."""
        if self.pyramid is None or self.pyramid.params.scale == "linear":
            return float(y)
        freqs = np.asarray(self.pyramid.freqs_hz, dtype=np.float64)
        return float(np.interp(y - 0.5, np.arange(len(freqs)), freqs))  # bin i spans [i, i + 1)

    def band_of(self, y0: float, y1: float) -> tuple[float, float] | None:
        """The band (Hz) between heights ``y0 < y1`` of the spectrogram, or None for a plain span.

        A drag less than :data:`MIN_BAND_PX` tall or covering :data:`FULL_HEIGHT_SHARE` of the
        visible height means "no band": the analysis then uses its default band.
        """
        if self.pyramid is None:
            return None
        box = self.spec_plot.getViewBox()
        v0, v1 = box.viewRange()[1]
        low, high = max(y0, v0, 0.0), min(y1, v1, self._freq_top)
        if v1 <= v0 or high <= low:
            return None
        if (high - low) / (v1 - v0) * box.height() < MIN_BAND_PX or high - low >= FULL_HEIGHT_SHARE * (v1 - v0):
            return None
        return (round(self.hz_at(low), 1), round(self.hz_at(high), 1))

    def _spec_box_selected(self, t0: float, t1: float, y0: float, y1: float, finished: bool) -> None:
        """Show the dragged band as a dashed box over the span and hand span and band on."""
        if self.clip_id is None:
            return
        band = self.band_of(y0, y1)
        self.band = band
        if band is None:
            self.band_rect.setVisible(False)
        else:
            low, high = max(y0, 0.0), min(y1, self._freq_top)
            self.band_rect.setRect(QRectF(t0, low, t1 - t0, high - low))
            self.band_rect.setToolTip(f"band {band[0]:.0f}–{band[1]:.0f} Hz")
            self.band_rect.setVisible(True)
        self.spanBandSelected.emit(t0, t1, finished, band)

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
