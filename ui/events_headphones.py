"""Headphone listening for the events panel: FOA decoded to binaural with a yaw control.

Virtual loudspeakers with max-rE weights convolved with head-related responses
(:mod:`workbench.audio.binaural`); the HRIR source (the spherical-head model or the chosen SOFA
file) is named in the panel. Split from :mod:`ui.events_panel` to keep that file to its gestures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtWidgets import QFileDialog

from workbench.errors import AglwError
from workbench.audio.binaural import SPHERICAL_HEAD_NAME, BinauralDecoder, make_decoder

if TYPE_CHECKING:
    from ui.events_widget import EventsPanel
    from ui.player import PlayerView
    from ui.session import ReviewSession


class HeadphonesMixin:
    """The headphone methods of :class:`ui.events_panel.EventsController` (which sets the attributes)."""

    session: ReviewSession
    player_view: PlayerView
    panel: EventsPanel
    layout: str | None
    sofa_path: str | None
    decoder: BinauralDecoder | None
    yaw_deg: float

    def set_headphones(self, on: bool) -> None:
        """Decode the FOA clip to binaural (with the yaw slider) or go back to the plain mix."""
        player = self.player_view.player
        loaded = self.player_view.loaded_audio
        if not on or loaded is None or self.layout not in ("ambix", "fuma"):
            player.set_processor(None)
            if self.panel.headphones.isChecked() and not on:
                self.panel.headphones.setChecked(False)
            return
        _, sample_rate, layout = loaded
        try:
            self.decoder = make_decoder(sample_rate, self.sofa_path)
        except AglwError as exc:
            self.session.show_status(str(exc))
            self.panel.headphones.setChecked(False)
            return
        self.panel.hrir_label.setText(f"HRIRs: {self.decoder.source_name}")
        decoder = self.decoder
        from workbench.audio.direction import fuma_to_ambix

        def process(block: np.ndarray) -> np.ndarray:  # on the audio thread
            foa = fuma_to_ambix(block) if layout == "fuma" else block
            return decoder.process(foa, self.yaw_deg)

        player.set_processor(process)

    def _yaw_changed(self, value: int) -> None:
        self.yaw_deg = float(value)
        self.panel.yaw_label.setText(f"yaw {value}°")

    def ask_sofa(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.panel, "Head-related responses (SOFA)", "", "SOFA (*.sofa)")
        if path:
            self.use_sofa(path)

    def use_sofa(self, path: str | None) -> None:
        """Use the HRIRs of a SOFA file (None: the spherical-head model) for headphone playback."""
        self.sofa_path = path
        loaded = self.player_view.loaded_audio
        if loaded is not None and path is not None:
            from workbench.audio.binaural import load_sofa_hrirs

            try:
                load_sofa_hrirs(path, loaded[1])
            except AglwError as exc:
                self.sofa_path = None
                self.session.show_status(str(exc))
                self.panel.hrir_label.setText(f"HRIRs: {SPHERICAL_HEAD_NAME} (SOFA refused: {exc})")
                return
        self.panel.hrir_label.setText(f"HRIRs: {'SOFA file ' + path if path else SPHERICAL_HEAD_NAME}")
        if self.panel.headphones.isChecked():
            self.set_headphones(True)
