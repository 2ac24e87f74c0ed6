"""Spatial sound events in the review window (spatial-events.md "Annotating in the GUI").

With "Mark events" on, a Shift+drag on the spectrogram (the same gesture that sets the playback
loop, so the span loops) adds an event whose direction is pre-filled from the analysis of that
span; dragged as a rectangle (taller than a few pixels, less than the whole height) it also
gives a frequency band, and the pre-fill analyses that band only. The event stores its time
span, not the band (the event model has no band field): the band is shown while it is the last
drag and named in the pre-fill line and the event's note. A click on the direction view sets
the selected event's (static) direction; a Ctrl+drag draws a moving source's track, replacing
the frames the drag passes over; a Ctrl+click adds one point of a track (interpolated between
points). Events are boxes on the spectrogram and tracks on the direction view, coloured by
class, with a legend. Keys: N / P next and previous event, C / Shift+C class, F front/back, Delete.

FOA clips can be heard on headphones: decoded to binaural (virtual loudspeakers, max-rE, HRIRs)
with a yaw control; the HRIR source (the spherical-head model or the chosen SOFA file) is named.
Every edit is a command on the window's stack (undo/redo, history, per annotator).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtGui import QAction, QBrush, QColor, QKeySequence, QPen
from PySide6.QtWidgets import (
    QDockWidget,
    QGraphicsRectItem,
    QListWidgetItem,
    QScrollArea,
)

from workbench.errors import AglwError, InputError
from ui.docking import DockHost
from ui.events_headphones import HeadphonesMixin
from ui.events_widget import EventsPanel, class_colour
from workbench.audio.binaural import BinauralDecoder
from workbench.events.commands import AddEvent, DeleteEvent, EditEvent
from workbench.events.model import FRAME_S, SpatialEventData, frame_span
from workbench.events.prefill import prefill_direction
from workbench.events.service import EventService
from workbench.events.tracks import apply_dragged_path, is_moving
from workbench.labels import INTERACTIVE_WAIT_S

if TYPE_CHECKING:
    from collections.abc import Callable

    from ui.player import PlayerView
    from ui.session import ReviewSession


class EventsController(HeadphonesMixin):
    """Keeps the events of the window's current clip, draws them and turns gestures into commands."""

    def __init__(self, session: ReviewSession, player_view: PlayerView, panel: EventsPanel) -> None:
        self.session = session
        self.player_view = player_view
        self.panel = panel
        self.service = EventService(session.store, write_wait_s=INTERACTIVE_WAIT_S)
        self.clip_id: int | None = None
        self.duration: float | None = None
        self.layout: str | None = None
        self.events: list[SpatialEventData] = []
        self.selected_uid: str | None = None
        self.anchors: dict[str, list[tuple[int, float]]] = {}  # moving tracks: (frame offset, angle)
        self.sofa_path: str | None = None
        self.decoder: BinauralDecoder | None = None
        self._items: list[Any] = []
        self._updating = False
        self._path: list[tuple[float, float]] = []  # the Ctrl+drag in progress on the direction view
        self._path_curve: pg.PlotDataItem | None = None
        pv = player_view
        pv.spanBandSelected.connect(self.span_selected)
        pv.graphics.scene().sigMouseClicked.connect(self._scene_clicked)
        direction_box = pv.direction_plot.getViewBox()
        direction_box.pathDragged.connect(self._path_dragged)
        # Ctrl+drag draws only while marking; otherwise it pans the time axis as before.
        panel.markToggled.connect(lambda on: setattr(direction_box, "draw_with_ctrl", on))
        panel.list.currentRowChanged.connect(self._row_changed)
        panel.class_box.currentTextChanged.connect(lambda name: self._edit_selected(class_name=name))
        panel.source.valueChanged.connect(lambda index: self._edit_selected(source_index=int(index)))
        panel.front_back.currentTextChanged.connect(self._front_back_chosen)
        panel.delete_button.clicked.connect(self.delete_selected)
        panel.headphones.toggled.connect(self.set_headphones)
        panel.yaw.valueChanged.connect(self._yaw_changed)
        self.yaw_deg = 0.0  # read by the audio thread, which must not touch the slider (house rule 3)
        panel.sofa_button.clicked.connect(self.ask_sofa)

    # ------------------------------------------------------------------ clip and audio

    def set_clip(self, clip_id: int) -> None:
        """A new clip is shown: read its events (the layout is known once its audio arrives)."""
        self.set_headphones(False)
        info = self.service.clip(clip_id)
        self.clip_id, self.duration, self.layout = clip_id, info.duration_s, info.layout
        self.selected_uid = None
        self.anchors.clear()
        self.panel.set_foa(False)
        self.refresh()
        if self.player_view.clip_id == clip_id:
            self.audio_ready(clip_id)  # the audio arrived before the clip was announced (a cached clip)

    def audio_ready(self, clip_id: int) -> None:
        loaded = self.player_view.loaded_audio
        if clip_id != self.clip_id or loaded is None:
            return
        samples, sample_rate, layout = loaded
        self.layout = layout or self.layout
        self.duration = samples.shape[0] / sample_rate
        self.panel.set_foa(self.layout in ("ambix", "fuma"))
        self.draw()

    # ------------------------------------------------------------------ reading and drawing

    def refresh(self) -> None:
        """Re-read the events (after any command, undo or redo) and redraw."""
        if self.clip_id is None:
            return
        self.events = self.service.events(self.clip_id, self.session.annotator.id)
        uids = [e.uid for e in self.events]
        if self.selected_uid not in uids:
            self.selected_uid = uids[-1] if uids else None
        self._updating = True
        try:
            self.panel.list.clear()
            for event in self.events:
                item = QListWidgetItem(self._describe(event))
                item.setForeground(QBrush(class_colour(event.class_name)))
                self.panel.list.addItem(item)
            if self.selected_uid is not None:
                self.panel.list.setCurrentRow(uids.index(self.selected_uid))
                self._show_selected_fields()
        finally:
            self._updating = False
        self.draw()

    @staticmethod
    def _describe(event: SpatialEventData) -> str:
        az, el = event.mean_direction()
        where = (f"lateral {az:.0f}° ({event.front_back or 'undecided'})" if event.direction_kind == "lateral"
                 else f"{az:.0f}° az, {el:.0f}° el")
        moving = " moving" if len(event.track) > 1 and len({tuple(t) for t in event.track}) > 1 else ""
        return (f"{event.onset_s:.1f}–{event.offset_s:.1f} s  {event.class_name} #{event.source_index}  "
                f"{where}{moving}")

    def selected(self) -> SpatialEventData | None:
        return next((e for e in self.events if e.uid == self.selected_uid), None)

    def _show_selected_fields(self) -> None:
        event = self.selected()
        if event is None:
            return
        if self.panel.class_box.findText(event.class_name) < 0:
            self.panel.class_box.addItem(event.class_name)  # an AudioSet or project class of this clip
        self.panel.class_box.setCurrentText(event.class_name)
        self.panel.source.setValue(event.source_index)
        self.panel.front_back.setCurrentText(event.front_back or "undecided")
        self.panel.front_back.setEnabled(event.direction_kind == "lateral")

    def draw(self) -> None:
        """Boxes on the spectrogram, tracks on the direction view, a legend of the classes shown."""
        pv = self.player_view
        for plot, item in self._items:
            plot.removeItem(item)
        self._items = []
        # The classes' key sits beside the direction view's caption, above the plot: a legend inside
        # the view was drawn over the tracks (issue 39).
        key: list[tuple[pg.PlotDataItem, str]] = []
        if not self.events:
            pv.set_direction_key(key)
            return
        y0, y1 = pv.spec_plot.viewRange()[1]
        shown: set[str] = set()
        for event in self.events:
            colour = class_colour(event.class_name)
            selected = event.uid == self.selected_uid
            fill = QColor(colour)
            fill.setAlpha(60 if selected else 30)
            rect = QGraphicsRectItem(QRectF(event.onset_s, y0, event.offset_s - event.onset_s, y1 - y0))
            pen = QPen(colour, 2 if selected else 1)
            pen.setCosmetic(True)  # a width in pixels, not in seconds × hertz
            rect.setPen(pen)
            rect.setBrush(QBrush(fill))
            rect.setToolTip(self._describe(event))
            pv.spec_plot.addItem(rect, ignoreBounds=True)
            self._items.append((pv.spec_plot, rect))
            first, n = frame_span(event.onset_s, event.offset_s)
            times = (first + np.arange(n) + 0.5) * FRAME_S
            angles = np.array([event.direction_at(k)[0] for k in range(n)])
            curve = pg.PlotDataItem(times, angles, pen=pg.mkPen(colour, width=3 if selected else 2),
                                    symbol="o", symbolSize=6 if selected else 4, symbolBrush=colour,
                                    symbolPen=None)
            pv.direction_plot.addItem(curve, ignoreBounds=True)
            self._items.append((pv.direction_plot, curve))
            if event.direction_kind == "lateral" and event.front_back in (None, "undecided"):
                # Both candidates: the lateral angle and its mirror stay the expert's call.
                mirror = pg.PlotDataItem(times, angles, pen=pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine))
                pv.direction_plot.addItem(mirror, ignoreBounds=True)
                self._items.append((pv.direction_plot, mirror))
            if event.class_name not in shown:
                shown.add(event.class_name)
                key.append((curve, event.class_name))
        pv.set_direction_key(key)

    # ------------------------------------------------------------------ gestures

    def span_selected(self, t0: float, t1: float, finished: bool,
                      band: tuple[float, float] | None = None) -> None:
        """Shift+drag on the spectrogram: with "Mark events" on, add an event with a pre-filled direction.

        ``band`` (Hz), when the drag was a rectangle, limits the pre-fill's analysis to that band.
        """
        if not finished or not self.panel.mark.isChecked() or self.clip_id is None:
            return
        first = math.floor(max(0.0, t0) / FRAME_S + 1e-6)
        last = math.ceil(t1 / FRAME_S - 1e-6)
        if self.duration is not None:
            last = min(last, int(math.floor(self.duration / FRAME_S + 1e-6)))
        if last - first < 1:
            self.session.show_status("the span is shorter than one 100 ms frame; drag a longer one")
            return
        onset, offset = round(first * FRAME_S, 6), round(last * FRAME_S, 6)
        event = self._prefilled_event(onset, offset, band)
        command = AddEvent(self.service, self.session.annotator.id, self.clip_id, event)
        if self.session.execute(command):
            self.selected_uid = command.uid
            self.refresh()

    def _prefilled_event(self, onset: float, offset: float,
                         band: tuple[float, float] | None = None) -> SpatialEventData:
        loaded = self.player_view.loaded_audio
        kind = "lateral" if self.layout in ("binaural", "stereo", "ab", "xy", "ms") else "azel"
        direction: tuple[float, float] = (0.0, 0.0)
        note = None
        if loaded is not None:
            samples, sample_rate, layout = loaded
            try:
                result = prefill_direction(samples, sample_rate, layout or "", onset, offset, band)
            except AglwError as exc:
                self.panel.prefill_label.setText(f"no pre-fill: {exc}")
            else:
                direction = (round(result.azimuth_deg, 1), round(result.elevation_deg, 1))
                kind = result.kind
                if kind == "lateral":
                    hours = " or ".join(f"{h} o'clock" for h in result.hours)
                    text = f"pre-filled: lateral {direction[0]:.0f}° ({hours}: front or back is yours to say)"
                else:
                    text = f"pre-filled: azimuth {direction[0]:.0f}°, elevation {direction[1]:.0f}°"
                where = "the analysis" if band is None else f"the analysis of {band[0]:.0f}–{band[1]:.0f} Hz"
                if band is not None:
                    # No band field in the event model: the band guides the pre-fill, the event keeps its span.
                    text += (f"; from {band[0]:.0f}–{band[1]:.0f} Hz only (the band is used for the pre-fill "
                             "and named in the note; the event stores its time span)")
                self.panel.prefill_label.setText(f"{text}; confidence {result.confidence:.2f}")
                note = f"direction pre-filled from {where}"
        return SpatialEventData(onset, offset, self.panel.class_box.currentText(), (direction,),
                                direction_kind=kind, front_back="undecided" if kind == "lateral" else None,
                                note=note)

    def _scene_clicked(self, event: Any) -> None:
        if not self.panel.mark.isChecked() or event.button() != Qt.MouseButton.LeftButton:
            return
        box = self.player_view.direction_plot.getViewBox()
        if not box.sceneBoundingRect().contains(event.scenePos()):
            return
        point = box.mapSceneToView(event.scenePos())
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        self.direction_clicked(point.x(), point.y(), add_track_point=ctrl)

    def direction_clicked(self, t: float, angle: float, *, add_track_point: bool = False) -> None:
        """Set the selected event's direction (or, with ``add_track_point``, a point of its track).

        The first track point of an already moving track (dragged, imported) keeps the track: its
        frames become the points the new one is interpolated between.
        """
        event = self.selected()
        if event is None:
            self.session.show_status("select or mark an event first")
            return
        limit = 90.0 if event.direction_kind == "lateral" else 180.0
        angle = round(max(-limit, min(limit, angle)), 1)
        elevation = event.mean_direction()[1]
        if not add_track_point:
            self.anchors.pop(event.uid or "", None)
            self._edit_selected(track=[(angle, elevation)])
            return
        first, n = frame_span(event.onset_s, event.offset_s)
        k = int(min(n - 1, max(0, math.floor(t / FRAME_S) - first)))
        if event.uid not in self.anchors and len(event.track) == n and is_moving(event.track):
            self.anchors[event.uid or ""] = [(i, float(entry[0])) for i, entry in enumerate(event.track)]
        anchors = [a for a in self.anchors.get(event.uid or "", []) if a[0] != k] + [(k, angle)]
        anchors.sort()
        self.anchors[event.uid or ""] = anchors
        frames = np.arange(n)
        track = np.interp(frames, [a[0] for a in anchors], [a[1] for a in anchors])
        self._edit_selected(track=[(round(float(a), 1), elevation) for a in track])

    def _path_dragged(self, t: float, angle: float, start: bool, finished: bool) -> None:
        """Ctrl+drag on the direction view: follow the pointer, then store the drawn part of the track."""
        if start:
            self._path = []
        self._path.append((t, angle))
        if self._path_curve is None:
            self._path_curve = pg.PlotDataItem(pen=pg.mkPen("#ffffff", width=2, style=Qt.PenStyle.DotLine))
            self.player_view.direction_plot.addItem(self._path_curve, ignoreBounds=True)
        times, angles = zip(*self._path)
        self._path_curve.setData(list(times), list(angles))
        if finished:
            path, self._path = self._path, []
            self._path_curve.setData([], [])
            self.drag_track(path)

    def drag_track(self, path: list[tuple[float, float]]) -> None:
        """Replace the selected event's track at the 100 ms frames a dragged path passes over.

        ``path`` is the pointer's (time s, angle °) positions in drag order; between them the
        track is read off the straight line. Frames outside the event are ignored. One command.
        """
        event = self.selected()
        if event is None:
            self.session.show_status("select or mark an event first, then Ctrl+drag its track")
            return
        limit = 90.0 if event.direction_kind == "lateral" else 180.0
        track, changed = apply_dragged_path(event.track, event.onset_s, event.offset_s, path, limit_deg=limit)
        if not changed:
            self.session.show_status(
                f"the drag did not pass over the event's span ({event.onset_s:.1f}–{event.offset_s:.1f} s)")
            return
        self.anchors.pop(event.uid or "", None)  # the next Ctrl+click starts from the drawn track
        self._edit_selected(track=track)

    def _edit_selected(self, **values: Any) -> None:
        if self._updating:
            return
        event = self.selected()
        if event is None:
            return
        if all(getattr(event, k) == v for k, v in values.items() if k != "track"):
            if "track" not in values:
                return
        try:
            self.session.execute(EditEvent(self.service, event, **values))
        except InputError as exc:  # e.g. a source index an overlapping event of the class holds
            self.session.show_status(str(exc))
        self.refresh()  # also after a refused edit: the controls show what is stored

    def _front_back_chosen(self, choice: str) -> None:
        event = self.selected()
        if event is not None and event.direction_kind == "lateral":
            self._edit_selected(front_back=choice)

    def delete_selected(self) -> None:
        event = self.selected()
        if event is not None and self.session.execute(DeleteEvent(self.service, event)):
            self.refresh()

    # ------------------------------------------------------------------ keyboard

    def step(self, delta: int) -> None:
        """Select the next (+1) or previous (−1) event and loop its span."""
        if not self.events:
            return
        uids = [e.uid for e in self.events]
        index = uids.index(self.selected_uid) if self.selected_uid in uids else -1
        self.panel.list.setCurrentRow((index + delta) % len(uids))

    def cycle_class(self, delta: int) -> None:
        box = self.panel.class_box
        box.setCurrentIndex((box.currentIndex() + delta) % box.count())

    def cycle_front_back(self) -> None:
        event = self.selected()
        if event is None or event.direction_kind != "lateral":
            self.session.show_status("front/back applies to events of two-channel clips")
            return
        box = self.panel.front_back
        box.setCurrentIndex((box.currentIndex() + 1) % box.count())

    def _row_changed(self, row: int) -> None:
        if self._updating or not 0 <= row < len(self.events):
            return
        event = self.events[row]
        self.selected_uid = event.uid
        self._updating = True
        try:
            self._show_selected_fields()
        finally:
            self._updating = False
        self.player_view.select_loop(event.onset_s, event.offset_s)  # the span loops on playback
        self.draw()


def install_events_panel(session: ReviewSession, host: DockHost, player_view: PlayerView, *,
                         beside: QDockWidget | None = None) -> EventsController:
    """Add the events dock (in a tab ``beside`` the Evidence dock) and its keys to the window's
    shortcuts; the events follow the session's shown clip and are edited through its stack."""
    panel = EventsPanel()
    scroller = QScrollArea()  # the dock may be smaller than the panel: it scrolls, the window keeps its size
    scroller.setWidgetResizable(True)
    scroller.setWidget(panel)
    # A tab beside the Evidence dock: a dock of its own below Judgment got ~80 px at 1280×800 (only
    # its check box showed); as a tab it has the Evidence dock's height and the window its minimum size.
    dock = host.add_dock("Events", scroller, Qt.DockWidgetArea.RightDockWidgetArea)
    if beside is not None:
        neighbour = beside

        def tabify() -> None:
            host.tab_beside(neighbour, dock)
            neighbour.raise_()

        # Once the window's event loop runs: tabified before, Qt left a stale copy of the tab bar
        # drawn where the window's first (default-size) layout put it.
        # With the dock as context: a window deleted before the loop turns drops the call.
        QTimer.singleShot(0, dock, tabify)
    controller = EventsController(session, player_view, panel)
    session.clipShown.connect(controller.set_clip)
    session.audioShown.connect(controller.audio_ready)
    session.stack.subscribe(controller.refresh)

    def action(text: str, keys: list[str], slot: Callable[[], object]) -> None:
        act = QAction(text, host.parent)
        act.setShortcuts([QKeySequence(k) for k in keys])
        act.triggered.connect(slot)
        host.add_shortcut(act)

    action("Next event", ["N"], lambda: controller.step(1))
    action("Previous event", ["P"], lambda: controller.step(-1))
    action("Next event class", ["C"], lambda: controller.cycle_class(1))
    action("Previous event class", ["Shift+C"], lambda: controller.cycle_class(-1))
    action("Event front/back", ["F"], controller.cycle_front_back)
    action("Delete event", ["Delete"], controller.delete_selected)
    controller.dock = dock  # type: ignore[attr-defined]
    return controller
