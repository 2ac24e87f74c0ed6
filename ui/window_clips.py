"""The review window's clip view: which clip is shown, its panels, and its audio as it arrives.

A mixin of :class:`ui.main_window.MainWindow` (which builds the widgets and sets the
attributes named below), split from it to keep that file to the window's frame. Opening a
clip starts its audio job first, then fills the text panels while it runs; the spectrogram
is painted as soon as the worker hands it over, playback and the direction view follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from workbench.audio.layout import detect_layout
from workbench.audio.playback import PlayerState
from workbench.audio.spectrogram import SpectrogramParams
from workbench.review.views import AudioSource, ClipDetail
from workbench.review.visibility import HIDDEN_IN_GUESS_MODE as HIDDEN_TEXT
from workbench.review.visibility import VisibilityPolicy
from ui.evidence import location_text, plain_tooltip
from ui.workers import AudioRequest, AudioResult

if TYPE_CHECKING:
    from ui.browser import ClipBrowser
    from ui.session import ReviewSession
    from ui.player import PlayerView
    from ui.workers import AudioLoader

# Longest a clip's playback and direction view wait for its spectrogram's first paint.
AFTER_PAINT_FALLBACK_S = 2.0

_END_OF_LIST = ("last clip in the list", "first clip in the list")


def _no_audio_text(problem: str | None) -> str:
    """What the empty plots say for a clip without audio: that, why, and how to link it."""
    reason = problem or "no recording is linked to this clip"
    hint = "" if "aglw media link" in reason else (
        "\nRun `aglw media link` to find its recording under the dataset's media roots.")
    return f"No audio for this clip.\n{reason}{hint}"


@dataclass(frozen=True)
class ViewState:
    """The visible span, playhead and playback of a clip, kept across a reload of its spectrogram."""

    clip_id: int
    t0: float
    t1: float
    position: float
    playing: bool


class ClipViewMixin:
    """Showing clips in the main window: the browser's current clip, its panels and its audio."""

    session: ReviewSession
    browser: ClipBrowser
    player_view: PlayerView
    loader: AudioLoader
    detail: ClipDetail | None
    scale: str
    visibility: VisibilityPolicy
    ab_spacing_m: float | None
    ab_spacing_problem: str | None
    _audio_clip: AudioSource | None
    _after_paint: AudioResult | None
    _restore: ViewState | None

    def reload_rows(self, *, resort: bool = False) -> None:
        """Re-read the browser rows: new values in place, the order and the selection kept
        (the clip under review must not jump away after an edit); ``resort`` re-sorts them."""
        self.browser.set_visibility(self.session.visibility)
        rows = self.session.review.clip_rows(self.session.annotator.id)
        if resort:
            self.browser.set_rows(rows)
        else:
            self.browser.refresh_rows(rows)

    def _browser_current_changed(self, current, _previous) -> None:  # type: ignore[no-untyped-def]
        """The browser's current row changed (click, keys, step): show that clip."""
        if not current.isValid():
            return  # a reload clears the current row for a moment; the clip stays open
        clip_id = self.browser.current_clip_id()
        if clip_id is not None and (self.detail is None or self.detail.clip_id != clip_id):
            self.open_clip(clip_id)

    def step_clip(self, delta: int) -> None:
        """Open the next (+1) or previous (−1) clip in the browser's order."""
        if self.detail is not None and self.browser.current_clip_id() != self.detail.clip_id:
            self.browser.select_clip(self.detail.clip_id)  # step from the clip on screen
        # Compared with the clip shown before the step: selecting the next row opens it at once
        # (the browser's current-row signal), so "already showing it" does not mean "at the end".
        before = self.detail.clip_id if self.detail is not None else None
        if self.statusBar().currentMessage() in _END_OF_LIST:
            self.statusBar().clearMessage()  # no longer true once the step moves
        clip_id = self.browser.step(delta)
        if clip_id is None:
            self.show_status("no clips match the browser's filters")
            return
        if clip_id == before:
            if delta:
                self.show_status(_END_OF_LIST[0] if delta > 0 else _END_OF_LIST[1])
            return
        if self.detail is None or self.detail.clip_id != clip_id:
            self.open_clip(clip_id)

    def open_clip(self, clip_id: int) -> None:
        """Show a clip: the audio job starts first, then the text panels fill while it runs.

        The spectrogram is painted as soon as the worker hands it over; playback, the
        direction view and the waveform's decode follow (see :mod:`ui.workers`).
        """
        # A note still being typed belongs to the clip being left: save it before moving on.
        self.commit_typed_note()
        if self._restore is not None and self._restore.clip_id != clip_id:
            self._restore = None  # the axis switch's view belongs to the clip that was left
        generation = self.loader.next_generation()
        source = self.session.review.audio_source(clip_id)
        self._audio_clip = source
        self.player_view.clear(f"loading {source.key}…" if source.audio_path is not None
                               else source.audio_problem or "no audio")
        if source.audio_path is None:
            self.player_view.show_no_audio(_no_audio_text(source.audio_problem))
        if source.audio_path is not None:
            params = SpectrogramParams(scale=self.scale)  # type: ignore[arg-type]
            spacing = self.ab_spacing_m if source.layout == "ab" else None
            self.loader.submit(AudioRequest(generation, clip_id, source.audio_path, source.layout, params,
                                            spacing_m=spacing))
        detail = self.session.read_detail(clip_id)
        self._show_detail()
        self.player_view.set_timelines(detail.timelines)
        self.player_view.set_time_references([ref.seconds for ref in self.reasoning.references])
        if self.browser.current_clip_id() != clip_id:
            self.browser.select_clip(clip_id)
        self.session.clipShown.emit(clip_id)
        if detail.audio_path is None:
            # The player was cleared with the reason above; the tag timeline and the time
            # references stay on the axis.
            self.show_status(detail.audio_problem or "no audio for this clip")
        else:
            if detail.layout == "ab" and self.ab_spacing_problem:
                self.show_status(self.ab_spacing_problem)
            self.loader.deliver_ready()

    def _show_detail(self) -> None:
        """Fill the panels for one ALM: the one chosen in the Clip tab when this clip has it,
        else the detail's default (the ALM its judges read). The reasoning, the prediction and
        the judges' columns all refer to that ALM."""
        preferred = self.info.preferred_alm_run_id
        if (self.detail is not None and preferred is not None and preferred != self.detail.alm_run_id
                and any(p.alm_run_id == preferred for p in self.detail.predictions)):
            self.detail = self.detail.for_alm(preferred)
        detail = self.detail
        self.session.sync_visibility()
        policy = self.session.visibility
        visible = policy.judges_visible()
        categories = list(detail.categories) if detail else []
        prediction = detail.prediction if detail else None
        # Guess mode: nothing that names the place (truth, the ALMs' answers) until the guess is saved.
        hidden = not policy.location_visible()
        self.reasoning.set_reasoning(f"The ALM's reasoning: {HIDDEN_TEXT}." if hidden
                                     else prediction.reasoning if prediction else "", categories)
        self.location_line.setText(f"True location and the ALMs' answers: {HIDDEN_TEXT}" if hidden
                                   else location_text(detail))
        tab = self.evidence_tabs.indexOf(self.reasoning)
        model = prediction.model if prediction else ""
        # The tab stays short so every Evidence tab fits the dock (issue 30); the ALM is named in the
        # location line above the player and in the tab's tooltip.
        self.evidence_tabs.setTabText(tab, "Reasoning")
        self.evidence_tabs.setTabToolTip(
            tab, plain_tooltip(f"Reasoning of {model} (choose the ALM in the Clip tab)") if model else "")
        self.tags.set_tags(detail.tags if detail else [])
        self.info.set_detail(detail)
        if hidden:
            self.info.hide_location(detail.key, HIDDEN_TEXT)
        self.clip_panel.set_detail(detail, show_others=visible)
        if detail is not None:  # the annotator's own votes on the clip's quality flags
            own = {v["flag"]: v["overruled"] for v in self.labels.quality_overrules(detail.clip_id)
                   if v["annotator_id"] == self.annotator.id}
            # the flags the clip has now, each with its value and cut-off (workbench/audio/flags.py)
            self.clip_panel.set_quality_votes(detail.quality_flags, own, detail.quality_flag_details)
        self.clip_panel.reveal.setEnabled(policy.can_reveal())
        self.grid.set_detail(detail, judges_visible=visible, rows=policy.categories(detail))

    def _alm_chosen(self, _alm_run_id: int) -> None:
        """The expert chose the ALM to show (ClipInfoPanel keeps it for the next clips that have it)."""
        self._show_detail()
        self.player_view.set_time_references([ref.seconds for ref in self.reasoning.references])

    def _audio_loaded(self, result: AudioResult, after_paint: bool = False) -> None:
        source = self._audio_clip
        if source is None or result.clip_id != source.clip_id:
            return
        if result.error:
            self.player_view.clear(result.error)
            self.player_view.show_no_audio(f"The audio of this clip could not be read.\n{result.error}")
            self.show_status(result.error)
            return
        restore = self._restore if self._restore is not None and self._restore.clip_id == result.clip_id else None
        if result.stage == "spectrogram":
            self.player_view.set_spectrogram(result.clip_id, result.pyramid, result.envelope)
            if restore is not None:
                self.player_view.spec_plot.setXRange(restore.t0, restore.t1, padding=0)
            if not self.player_view.graphics.isVisible():
                self.loader.resume(result.generation)  # nothing will be painted: go on at once
            return
        if (not after_paint and not self.loader.force_sync and self.player_view.awaiting_paint == result.clip_id
                and self.player_view.graphics.isVisible()):
            self._after_paint = result
            # Should that paint not come (a minimised window), apply it anyway after a while.
            QTimer.singleShot(int(AFTER_PAINT_FALLBACK_S * 1000), self, self._apply_after_paint)
            return
        if self.player_view.spectrogram_clip_id != result.clip_id:
            self.player_view.set_spectrogram(result.clip_id, result.pyramid, result.envelope)
            if restore is not None:
                self.player_view.spec_plot.setXRange(restore.t0, restore.t1, padding=0)
        # The decoded file knows its channels even when the store does not (an imported clip
        # often records neither channels nor layout): the Clip tab and the mix use them.
        n_channels = int(result.samples.shape[1]) if getattr(result.samples, "ndim", 1) == 2 else 1
        description = self.detail.description if self.detail and self.detail.clip_id == result.clip_id else None
        layout = source.layout or detect_layout(n_channels, description)
        self.info.set_decoded_audio(result.clip_id, n_channels, layout)
        self.player_view.set_audio(result.clip_id, result.samples, result.sample_rate, layout)
        self.player_view.set_direction(result.direction)
        if restore is not None:
            self._restore = None
            self.player_view.seek(restore.position)
            if restore.playing:
                self.player_view.toggle_play()
        self.session.audioShown.emit(result.clip_id)

    def _spectrogram_painted(self, clip_id: int) -> None:
        """The spectrogram is on screen: the worker may go on with the playback decode."""
        if self._audio_clip is not None and self._audio_clip.clip_id == clip_id:
            self.loader.resume(self.loader.generation)
        if self._after_paint is not None:
            # After the paint has returned to the event loop, not inside it.
            QTimer.singleShot(0, self, self._apply_after_paint)

    def _apply_after_paint(self) -> None:
        pending, self._after_paint = self._after_paint, None
        if pending is not None and pending.generation == self.loader.generation:
            self._audio_loaded(pending, after_paint=True)

    def _scale_changed(self, scale: str) -> None:
        """Reload the clip's spectrogram on the other axis, keeping the view, playhead and playback."""
        self.scale = scale
        if self.detail is None:
            return
        view = self.player_view
        (t0, t1), _ = view.spec_plot.getViewBox().viewRange()
        has_audio = view.clip_id == self.detail.clip_id
        self._restore = ViewState(
            self.detail.clip_id, t0, t1,
            view.player.position if has_audio else 0.0,
            has_audio and view.player.state == PlayerState.PLAYING,
        )
        self.open_clip(self.detail.clip_id)
