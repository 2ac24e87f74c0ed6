"""Humans as localizers in the GUI: the annotator's blind guess of where the clip was recorded.

"Guess mode" (a checkable button on the map, also in the Review menu) hides, for every clip the
annotator has not guessed yet, the clip's true location and every ALM's answer: on the map (the
truth, the answers, their error lines and the pool overview, which would show the clip's place
too), in the location line above the player, in the Clip tab, in the reasoning, and in the clip
list's country and continent columns and filters. A left click on the map places the guess, a
slider sets the confidence (0 to 1, as ``aglw study guess --confidence``), "Save guess" runs a
:class:`~workbench.commands.SetHumanGuess` through the window's command stack (history, undo
with Ctrl+Z). Once the guess is stored the truth is revealed for that clip with the guess's
distance error; undoing the guess hides it again. What is hidden when is the window's visibility
policy's to say (:class:`workbench.review.visibility.VisibilityPolicy`): this module switches
the mode and draws what the policy allows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QPushButton, QSlider, QWidget

from ui.cockpit.map_data import great_circle
from ui.cockpit.map_view import MapView
from ui.session import ReviewSession
from workbench.commands import SetHumanGuess
from workbench.labels import INTERACTIVE_WAIT_S
from workbench.studies.localizers import GuessService, GuessView, guess_for

GUESS_COLOUR = "#ff00aa"


class GuessControls(QWidget):
    """The row under the map: mode switch, confidence, save, and what was guessed."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.mode = QPushButton("Guess mode")
        self.mode.setCheckable(True)
        self.mode.setToolTip("Locate the clip yourself, blind to the truth and to the models: click the map, "
                             "set your confidence, save")
        self.confidence = QSlider(Qt.Orientation.Horizontal)
        self.confidence.setRange(0, 100)
        self.confidence.setSingleStep(5)
        self.confidence.setPageStep(10)
        self.confidence.setValue(50)
        self.confidence.setMaximumWidth(160)
        self.confidence_label = QLabel()
        self.confidence_label.setTextFormat(Qt.TextFormat.PlainText)
        self.save = QPushButton("Save guess")
        self.message = QLabel()
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.mode)
        layout.addWidget(QLabel("confidence"))
        layout.addWidget(self.confidence)
        layout.addWidget(self.confidence_label)
        layout.addWidget(self.save)
        layout.addWidget(self.message, 1)
        self.confidence.valueChanged.connect(self._show_confidence)
        self._show_confidence(self.confidence.value())

    def _show_confidence(self, value: int) -> None:
        self.confidence_label.setText(f"{value / 100:.2f}")

    def confidence_value(self) -> float:
        """The confidence in [0, 1]."""
        return self.confidence.value() / 100.0


class GuessMode(QObject):
    """Guess mode of one review session (the window keeps it as ``window.guess_mode``).

    It reads the session's shown clip and visibility policy, and saves through its ``execute``.
    """

    def __init__(self, session: ReviewSession, map_view: MapView) -> None:
        super().__init__(session)
        self.session = session
        self.map = map_view
        self.service = GuessService(session.store, write_wait_s=INTERACTIVE_WAIT_S)
        self.placed: tuple[float, float] | None = None  # (longitude, latitude) clicked, not saved yet
        self.stored = GuessView(None, None, None, 0, None)
        self.stored_clip: int | None = None
        self.controls = GuessControls()
        map_view.layout().addWidget(self.controls)
        self.marker = pg.ScatterPlotItem(size=16, symbol="x", brush=pg.mkBrush(GUESS_COLOUR),
                                         pen=pg.mkPen(GUESS_COLOUR, width=2))
        self.line = pg.PlotDataItem(pen=pg.mkPen(GUESS_COLOUR, width=2), connect="finite")
        for item in (self.line, self.marker):
            item.setZValue(10)  # above the outlines and the ALMs' answers
            map_view.plot.addItem(item)
        map_view.plot.scene().sigMouseClicked.connect(self._clicked)
        self.controls.mode.toggled.connect(self.set_active)
        self.controls.save.clicked.connect(self.save)
        self.action = QAction("Guess mode (locate the clip blind)", session)
        self.action.setCheckable(True)
        self.action.toggled.connect(self.set_active)
        self._show()

    # ------------------------------------------------------------------ state

    def clip_id(self) -> int | None:
        detail = self.session.detail
        return None if detail is None else detail.clip_id

    def _read(self) -> GuessView:
        clip_id = self.clip_id()
        if clip_id is None:
            return GuessView(None, None, None, 0, None)
        return guess_for(self.session.store, self.session.annotator.id, clip_id)

    @property
    def active(self) -> bool:
        """Whether guess mode is on (the visibility policy's switch: one truth for every view)."""
        return self.session.visibility.guess_mode

    def truth_hidden(self) -> bool:
        """Whether the shown clip's true location and the models' answers must stay hidden."""
        self.session.sync_visibility()
        return self.session.visibility.map_hidden()

    def set_active(self, on: bool) -> None:
        """Enter or leave guess mode (the button and the menu action follow each other)."""
        if on == self.active:
            return
        for switch in (self.controls.mode, self.action):
            switch.blockSignals(True)
            switch.setChecked(on)
            switch.blockSignals(False)
        self.controls.mode.setText("Guess mode: on" if on else "Guess mode")
        self.placed = None
        # The policy's listeners redraw: the clip list, the panels and this map.
        self.session.visibility.set_guess_mode(on)
        self.session.refresh_detail()  # re-read the shown clip's texts too
        if on:
            self.session.show_status("guess mode: click the map where you think the clip was recorded")

    def clip_changed(self, *_: Any) -> None:
        """A new clip is shown: forget the unsaved click."""
        self.placed = None
        self.refresh()

    def refresh(self) -> None:
        """Re-read the stored guess (after a save, undo or redo) and redraw."""
        clip_id = self.clip_id()
        self.session.sync_visibility()
        self.stored = self._read()
        if clip_id != self.stored_clip:
            self.placed = None
            self.stored_clip = clip_id
        self._show()

    # ------------------------------------------------------------------ drawing

    def _show(self) -> None:
        hidden = self.session.visibility.map_hidden()
        self.map.set_hidden(hidden)
        self.marker.setData([], [])
        self.line.setData([], [])
        c = self.controls
        c.confidence.setEnabled(self.active and hidden)
        c.save.setEnabled(self.active and hidden and self.placed is not None)
        if not self.active or self.clip_id() is None:
            c.message.setText("" if self.clip_id() is not None or not self.active else "no clip shown")
            return
        if hidden:
            if self.placed is None:
                c.message.setText("click the map where you think this clip was recorded")
            else:
                lon, lat = self.placed
                self.marker.setData([lon], [lat])
                c.message.setText(f"your guess (✕) {lat:.2f}, {lon:.2f} — not saved yet")
            return
        guess = self.stored
        assert guess.latitude is not None and guess.longitude is not None
        if guess.confidence is not None:  # the slider shows the saved guess's confidence, not the last one set
            c.confidence.setValue(round(guess.confidence * 100))
        self.marker.setData([guess.longitude], [guess.latitude])
        truth = self.map.true_point
        if truth is not None:
            gx, gy = great_circle(truth[1], truth[0], guess.latitude, guess.longitude)
            self.line.setData(gx, gy)
            self.map.frame([truth, (guess.longitude, guess.latitude)]
                           + [(p.longitude, p.latitude) for p in self.map.points])
        error = "true location unknown" if guess.error_km is None else f"error {guess.error_km:,.0f} km"
        confidence = "" if guess.confidence is None else f", confidence {guess.confidence:.2f}"
        c.message.setText(f"your guess (✕) {guess.latitude:.2f}, {guess.longitude:.2f}{confidence} — {error} "
                          "(saved; Ctrl+Z undoes it)")

    # ------------------------------------------------------------------ editing

    def _clicked(self, event: Any) -> None:
        if (not self.active or event.button() != Qt.MouseButton.LeftButton or event.double()
                or self.clip_id() is None):
            return
        box = self.map.plot.getPlotItem().getViewBox()
        if not box.sceneBoundingRect().contains(event.scenePos()):
            return
        if self.stored.placed:
            self.session.show_status("this clip's guess is saved; undo it (Ctrl+Z) to guess again")
            return
        point = box.mapSceneToView(event.scenePos())
        lon, lat = float(point.x()), float(point.y())
        if not (-180.0 <= lon <= 180.0 and -90.0 <= lat <= 90.0):
            self.session.show_status(f"{lat:.1f}, {lon:.1f} is off the map; click inside ±90° latitude, ±180° longitude")
            return
        self.place(lon, lat)

    def place(self, longitude: float, latitude: float) -> None:
        """Put the (unsaved) guess at a position."""
        self.placed = (float(np.clip(longitude, -180.0, 180.0)), float(np.clip(latitude, -90.0, 90.0)))
        self._show()

    def save(self) -> bool:
        """Store the placed guess with its confidence as one command (undo with the window's Undo)."""
        clip_id = self.clip_id()
        if not self.active or clip_id is None or self.placed is None or self.stored.placed:
            return False
        lon, lat = self.placed
        command = SetHumanGuess(self.service, self.session.annotator.id, clip_id, base_version=self.stored.version,
                                latitude=round(lat, 4), longitude=round(lon, 4),
                                confidence=self.controls.confidence_value())
        saved = self.session.execute(command)  # the stack's listeners redraw (see install_guess_mode)
        if saved:
            self.placed = None
            self.refresh()
        return saved


def install_guess_mode(session: ReviewSession, map_view: MapView, menu: QMenu,
                       show_map: Callable[[], None]) -> GuessMode:
    """Add guess mode to the map view and the Review ``menu``; switching it on calls ``show_map``
    (the window brings the map's dock to the front). The window keeps the returned object."""
    mode = GuessMode(session, map_view)
    session.clipShown.connect(mode.clip_changed)
    session.stack.subscribe(mode.refresh)
    menu.addAction(mode.action)
    mode.action.toggled.connect(lambda on: show_map() if on else None)
    return mode
