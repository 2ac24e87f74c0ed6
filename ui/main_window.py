"""The review workbench main window: dockable panels, commands, blind mode, remembered layout."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from storage import Store
from storage.errors import ConflictError
from workbench.audio.layout import detect_layout
from workbench.audio.playback import Player, PlayerState
from workbench.audio.spectrogram import SpectrogramParams
from workbench.commands import (
    Command,
    CommandStack,
    SetCategoryLabel,
    SetCategoryPolarity,
    SetClipLabel,
    WriteFailed,
)
from workbench.config import config_dir
from workbench.labels import INTERACTIVE_WAIT_S, AnnotatorInfo, LabelService
from workbench.media import LinkReport
from workbench.review.direction import ab_spacing_from_config
from workbench.review.rules import labels_entered
from workbench.review.service import ReviewService
from workbench.review.views import AudioSource, ClipDetail
from ui.attribution_grid import AttributionGrid
from ui.browser import ClipBrowser
from ui.cockpit import Cockpit, install_cockpit
from ui.error_modes_panel import install_error_modes
from ui.evidence import ClipInfoPanel, ClipPanel, ReasoningView, TagsPanel, location_text, plain_label, plain_tooltip
from ui.events_panel import install_events_panel
from ui.cockpit.guess_mode import HIDDEN_TEXT, install_guess_mode
from ui.player import PlayerView
from ui.workers import AudioLoader, AudioRequest, AudioResult

SETTINGS_VERSION = 1
# Longest a clip's playback and direction view wait for its spectrogram's first paint.
AFTER_PAINT_FALLBACK_S = 2.0

log = logging.getLogger(__name__)


def settings_path() -> Path:
    """The GUI's QSettings file (under the user config dir, so tests are isolated)."""
    return config_dir() / "gui.ini"


def open_settings() -> QSettings:
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    settings = QSettings(str(path), QSettings.Format.IniFormat)
    if int(settings.value("version", 0)) < SETTINGS_VERSION:
        # Version 1 is the first layout; older (absent) files start from the defaults.
        settings.setValue("version", SETTINGS_VERSION)
        if settings.value("blind_mode") is None:
            settings.setValue("blind_mode", True)
    return settings


_END_OF_LIST = ("last clip in the list", "first clip in the list")


def _no_audio_text(problem: str | None) -> str:
    """What the empty plots say for a clip without audio: that, why, and how to link it."""
    reason = problem or "no recording is linked to this clip"
    hint = "" if "aglw media link" in reason else (
        "\nRun `aglw media link` to find its recording under the dataset's media roots.")
    return f"No audio for this clip.\n{reason}{hint}"


@dataclass(frozen=True)
class _ViewState:
    """The visible span, playhead and playback of a clip, kept across a reload of its spectrogram."""

    clip_id: int
    t0: float
    t1: float
    position: float
    playing: bool

class ErrorBanner(QWidget):
    """Shows an unsaved edit's error with a retry button."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setStyleSheet("background-color: #7f1d1d; color: white;")
        self.message = plain_label()
        self.retry = QPushButton("Retry save")
        layout = QHBoxLayout(self)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.retry)
        self.setVisible(False)


class MainWindow(QMainWindow):
    """The review workbench.

    Parameters
    ----------
    store
        The project store.
    annotator
        Who is editing (labels and history are theirs).
    player
        The playback engine (tests pass one with a NullSink); default: a real audio device on first play.
    force_sync
        Load clips inline (deterministic tests) instead of in a worker thread.
    """

    clipShown = Signal(int)
    audioShown = Signal(int)

    def __init__(
        self,
        store: Store,
        annotator: AnnotatorInfo,
        *,
        player: Player | None = None,
        force_sync: bool = False,
    ) -> None:
        super().__init__()
        self.store = store
        self.annotator = annotator
        self.review = ReviewService(store)
        # Edits are written on the GUI thread: a project locked by another writer fails fast
        # (the edit stays pending with a retry) instead of freezing the window.
        self.labels = LabelService(store, write_wait_s=INTERACTIVE_WAIT_S)
        self.stack = CommandStack()
        self.settings = open_settings()
        self.blind_mode = str(self.settings.value("blind_mode", True)).lower() in ("true", "1")
        from workbench.studies.planning import plan_for_annotator

        # An annotator whose study plan is blind starts blind, whatever this machine last used
        # (not remembered: the menu still switches it, for this session only).
        self.study_plan = plan_for_annotator(store, annotator.id)
        if self.study_plan is not None and self.study_plan[1]:
            self.blind_mode = True
        self.revealed: set[int] = set()
        self.detail: ClipDetail | None = None
        self._audio_clip: AudioSource | None = None  # the clip whose audio views are wanted
        # A clip's playback and direction view that arrived before its spectrogram was painted:
        # applied right after that paint, so they never delay it.
        self._after_paint: AudioResult | None = None
        self.scale = "linear"
        self._restore: _ViewState | None = None  # view and playback to restore after an axis switch
        # AB pairs need a microphone spacing for their direction view (config.toml ab_spacing_m).
        self.ab_spacing_m, self.ab_spacing_problem = ab_spacing_from_config()
        self.setWindowTitle(f"AGL Workbench — {annotator.name}")
        self.setObjectName("MainWindow")

        self.player_view = PlayerView(player)
        self.banner = ErrorBanner()
        # The clip's true location beside the shown ALM's answer and its error, always in view.
        self.location_line = plain_label()
        self.location_line.setContentsMargins(6, 2, 6, 2)
        central = QWidget()
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.banner)
        column.addWidget(self.location_line)
        column.addWidget(self.player_view, 1)
        self.setCentralWidget(central)

        self.browser = ClipBrowser()
        self.tags = TagsPanel()
        self.reasoning = ReasoningView()
        self.info = ClipInfoPanel()
        self.clip_panel = ClipPanel()
        self.grid = AttributionGrid()
        evidence = QTabWidget()
        evidence.addTab(self.reasoning, "Reasoning")
        evidence.addTab(self.tags, "Tags")
        evidence.addTab(self.info, "Clip")
        self.evidence_tabs = evidence
        clips_dock = self._dock("Clips", self.browser, Qt.DockWidgetArea.LeftDockWidgetArea)
        evidence_dock = self._dock("Evidence", evidence, Qt.DockWidgetArea.RightDockWidgetArea)
        self._dock("Judgment", self.clip_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        grid_dock = self._dock("Attribution", self.grid, Qt.DockWidgetArea.BottomDockWidgetArea)
        self._default_docks = (clips_dock, evidence_dock, grid_dock)

        self.loader = AudioLoader(self, force_sync=force_sync)
        self.loader.loaded.connect(self._audio_loaded)
        self.browser.table.selectionModel().currentRowChanged.connect(self._browser_current_changed)
        self.reasoning.seekRequested.connect(self.player_view.seek)
        self.player_view.status.connect(self.show_status)
        self.player_view.scaleChanged.connect(self._scale_changed)
        self.player_view.spectrogramPainted.connect(self._spectrogram_painted)
        self.grid.grid_model.editRequested.connect(self._grid_edit)
        self.clip_panel.ratingChanged.connect(lambda v: self._clip_edit(rating=v))
        self.clip_panel.decisionChanged.connect(lambda v: self._clip_edit(decision=v))
        self.clip_panel.noteChanged.connect(lambda v: self._clip_edit(note=v))
        self.clip_panel.revealRequested.connect(self.reveal_current)
        self.info.almChosen.connect(self._alm_chosen)
        self.banner.retry.clicked.connect(self.retry_pending)
        self.stack.subscribe(self._stack_changed)
        self._make_actions()
        self.statusBar().showMessage(f"annotator {annotator.name}")

        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1500, 950)
        state = self.settings.value("window_state")
        # Without a remembered layout the docks are sized on the first show, when the window
        # has its real size (sizes given before that are not kept).
        self._layout_pending = state is None or not self.restoreState(state)
        self.reload_rows()
        self.cockpit: Cockpit = install_cockpit(self)
        self.error_modes = install_error_modes(self)  # the error-mode column (issue 18)
        self.spatial_events = install_events_panel(self)  # spatial sound events (issue 17)
        self.guess_mode = install_guess_mode(self)  # humans as localizers on the map (issue 18)

    # ------------------------------------------------------------------ construction

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title}")
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _make_actions(self) -> None:
        def action(text: str, keys: list[str], slot) -> QAction:  # type: ignore[no-untyped-def]
            act = QAction(text, self)
            act.setShortcuts([QKeySequence(k) for k in keys])
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(slot)
            self.addAction(act)
            return act

        pv = self.player_view
        self.play_action = action("Play/pause", ["Space"], pv.toggle_play)
        action("Back 5 s", ["Left"], lambda: pv.seek_by(-5.0))
        action("Forward 5 s", ["Right"], lambda: pv.seek_by(5.0))
        action("Loop region", ["L"], pv.toggle_loop)
        for channel in range(4):
            action(f"Solo channel {channel + 1}", [str(channel + 1)], lambda _=False, c=channel: pv.solo(c))
        action("All channels", ["0"], lambda: pv.solo(None))
        action("Next clip", ["J", "PgDown"], lambda: self.step_clip(1))
        action("Previous clip", ["K", "PgUp"], lambda: self.step_clip(-1))
        self.undo_action = action("Undo", ["Ctrl+Z"], self.undo)
        self.redo_action = action("Redo", ["Ctrl+Shift+Z", "Ctrl+Y"], self.redo)
        self.blind_action = QAction("Blind mode", self)
        self.blind_action.setCheckable(True)
        self.blind_action.setChecked(self.blind_mode)
        self.blind_action.toggled.connect(self.set_blind_mode)
        menu = self.menuBar().addMenu("&Review")
        for act in (self.play_action, self.undo_action, self.redo_action, self.blind_action):
            menu.addAction(act)
        self._stack_changed()

    # ------------------------------------------------------------------ clips

    def reload_rows(self, *, resort: bool = False) -> None:
        """Re-read the browser rows: new values in place, the order and the selection kept
        (the clip under review must not jump away after an edit); ``resort`` re-sorts them."""
        self.browser.set_blind_mode(self.blind_mode)
        rows = self.review.clip_rows(self.annotator.id)
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
        source = self.review.audio_source(clip_id)
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
        self.detail = self.review.clip_detail(clip_id, self.annotator.id)
        detail = self.detail
        self._show_detail()
        self.player_view.set_timelines(detail.timelines)
        self.player_view.set_time_references([ref.seconds for ref in self.reasoning.references])
        if self.browser.current_clip_id() != clip_id:
            self.browser.select_clip(clip_id)
        self.clipShown.emit(clip_id)
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
        visible = self.judges_visible()
        categories = list(detail.categories) if detail else []
        prediction = detail.prediction if detail else None
        # Guess mode: nothing that names the place (truth, the ALMs' answers) until the guess is saved.
        hidden = self.location_hidden()
        self.reasoning.set_reasoning(f"The ALM's reasoning: {HIDDEN_TEXT}." if hidden
                                     else prediction.reasoning if prediction else "", categories)
        self.location_line.setText(f"True location and the ALMs' answers: {HIDDEN_TEXT}" if hidden
                                   else location_text(detail))
        tab = self.evidence_tabs.indexOf(self.reasoning)
        model = prediction.model if prediction else ""
        self.evidence_tabs.setTabText(tab, f"Reasoning · {model[:24]}{'…' if len(model) > 24 else ''}" if model
                                      else "Reasoning")
        self.evidence_tabs.setTabToolTip(
            tab, plain_tooltip(f"Reasoning of {model} (choose the ALM in the Clip tab)") if model else "")
        self.tags.set_tags(detail.tags if detail else [])
        self.info.set_detail(detail)
        if hidden:
            self.info.hide_location(detail.key, HIDDEN_TEXT)
        self.clip_panel.set_detail(detail, show_others=visible)
        self.clip_panel.reveal.setEnabled(bool(detail) and not visible)
        self.grid.set_detail(detail, judges_visible=visible)

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
        self.audioShown.emit(result.clip_id)

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
        self._restore = _ViewState(
            self.detail.clip_id, t0, t1,
            view.player.position if has_audio else 0.0,
            has_audio and view.player.state == PlayerState.PLAYING,
        )
        self.open_clip(self.detail.clip_id)

    # ------------------------------------------------------------------ blind mode

    def location_hidden(self) -> bool:
        """Whether guess mode hides the shown clip's true location and the ALMs' answers."""
        guess = getattr(self, "guess_mode", None)  # None while the window is being built
        return guess is not None and guess.truth_hidden()

    def judges_visible(self) -> bool:
        """Judges and other experts are visible unless blind mode hides them (see labels_entered)."""
        if not self.blind_mode or self.detail is None:
            return True
        return labels_entered(self.detail, revealed=self.detail.clip_id in self.revealed)

    def set_blind_mode(self, on: bool) -> None:
        self.blind_mode = on
        self.settings.setValue("blind_mode", on)
        self.browser.set_blind_mode(on)  # no judge-derived numbers in the browser either
        self._show_detail()

    def reveal_current(self) -> None:
        """Blind mode: reveal the judges once the clip is rated."""
        if self.detail is None:
            return
        if self.detail.own_label.rating is None:
            self.show_status("rate the clip (1–5) before revealing the judges")
            return
        self.revealed.add(self.detail.clip_id)
        self._show_detail()

    # ------------------------------------------------------------------ commands

    def _grid_edit(self, category_id: str, field: str, value: object) -> None:
        if self.detail is None:
            return
        if field == "category_polarity":
            # Pool-wide: the expert's P / N / neutral for the category on every clip (None = fitted).
            self.execute(SetCategoryPolarity(self.labels, self.annotator.id, category_id, value))  # type: ignore[arg-type]
            return
        # Based on the version shown: if another window or process changed the label since, the
        # edit is refused with both values instead of overwriting theirs.
        seen = self.detail.category(category_id).expert_version
        self.execute(SetCategoryLabel(self.labels, self.annotator.id, self.detail.clip_id, category_id,
                                      base_version=seen, **{field: value}))

    def _clip_edit(self, **values: object) -> None:
        if self.detail is None:
            return
        self.execute(SetClipLabel(self.labels, self.annotator.id, self.detail.clip_id,
                                  base_version=self.detail.own_label.version, **values))

    def _show_conflict(self, exc: ConflictError) -> None:
        """Both values, in a dialog; nothing was written. The view reloads to show the stored value."""
        stored = ", ".join(f"{k}: {'empty' if v is None else v}" for k, v in exc.stored.items())
        yours = ", ".join(f"{k}: {'empty' if v is None else v}" for k, v in exc.yours.items())
        box = self._box(QMessageBox.Icon.Warning, "Changed elsewhere",
                        "This label was changed in another window or by another process since you read it. "
                        "Nothing was overwritten.",
                        f"Stored now: {stored}\nYour change: {yours}\nThe view now shows the stored value.")
        self.show_status(f"conflict: {str(exc).splitlines()[0]}")
        box.exec()
        self._refresh()

    def execute(self, command: Command) -> bool:
        """Run a command through the stack; on a failed write it stays pending with a visible error."""
        try:
            self.stack.push(command)
        except WriteFailed as exc:
            self._show_write_error(str(exc))
            return False
        except ConflictError as exc:
            self._show_conflict(exc)
            return False
        self.show_status(f"saved: {command.description}")
        self._refresh(command)
        return True

    def undo(self) -> None:
        try:
            command = self.stack.undo()
        except WriteFailed as exc:
            self._show_write_error(str(exc))
            return
        except ConflictError as exc:
            self._show_conflict(exc)
            return
        if command is not None:
            self.show_status(f"undone: {command.description}")
            self._refresh(command)

    def redo(self) -> None:
        try:
            command = self.stack.redo()
        except WriteFailed as exc:
            self._show_write_error(str(exc))
            return
        except ConflictError as exc:
            self._show_conflict(exc)
            return
        if command is not None:
            self.show_status(f"redone: {command.description}")
            self._refresh(command)

    def retry_pending(self) -> None:
        try:
            saved = self.stack.retry_pending()
        except WriteFailed as exc:
            self._show_write_error(str(exc))
            return
        except ConflictError as exc:
            self._show_conflict(exc)
            return
        self.show_status(f"saved {saved} pending edit(s)")
        self._refresh()

    # ------------------------------------------------------------------ projects

    def ask_open_project(self) -> None:
        """Project ▸ Open project…: a SQLite file or a PostgreSQL URL."""
        target, ok = QInputDialog.getText(self, "Open project", "SQLite file path or postgresql:// URL:")
        if ok and target.strip():
            self.open_project(target.strip())

    def open_project(self, target: str) -> MainWindow | None:
        """Open another project (file or PostgreSQL URL) in a new window for the same annotator.

        This window is closed (its jobs and workers stop) and its store disposed, so no
        connection to the old project stays open; the new window disposes the store it opened
        when it closes in turn. When the new project cannot be opened, this one stays.
        """
        from storage import display_url, open_store

        store = None
        try:
            store = open_store(target)
            info = LabelService(store).ensure_annotator(self.annotator.name)
        except Exception as exc:  # noqa: BLE001 - any failure to open is shown, the current project stays open
            if store is not None:
                store.dispose()
            self.statusBar().showMessage(f"could not open {display_url(target)}: {exc}", 15_000)
            return None
        old_store = self.store
        replacement = MainWindow(store, info)
        replacement.cockpit.owned_store = store
        replacement.show()
        self.close()
        # Deleted now, in the GUI thread: left to the garbage collector, the closed window's
        # widgets could be destroyed in whatever thread happens to collect them.
        self.deleteLater()
        old_store.dispose()
        return replacement

    # ------------------------------------------------------------------ audio

    def ask_link_audio(self) -> None:
        """Project ▸ Link audio…: pick the folder that holds the recordings, then link."""
        folder = QFileDialog.getExistingDirectory(self, "Folder with the recordings")
        if folder:
            self.link_audio(Path(folder))

    def link_audio(self, folder: Path | None = None) -> LinkReport | None:
        """Find the recordings of clips without audio, by the same rule as `aglw media link`.

        The folder becomes a media root of each dataset it serves. The summary is shown in
        plain text; the list and the clip under review are reloaded so new audio shows at once.
        """
        from workbench.errors import InputError
        from workbench.media import link_media

        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            report = link_media(self.store, root=folder)
        except InputError as exc:
            QApplication.restoreOverrideCursor()
            self._message(QMessageBox.Icon.Warning, "Link audio", str(exc))
            return None
        QApplication.restoreOverrideCursor()
        lines = [f"Linked {len(report.linked)} clip(s); {report.already} already had audio; "
                 f"{len(report.missing)} not found; {len(report.ambiguous)} ambiguous (not linked)."]
        lines += [f"ambiguous: {e['key']}: {' | '.join(e['candidates'])}" for e in report.ambiguous[:10]]
        self.show_status(lines[0])
        self.reload_rows()
        if self.detail is not None:
            self.open_clip(self.detail.clip_id)
        self._message(QMessageBox.Icon.Information, "Link audio", "\n".join(lines))
        return report

    def _box(self, icon: QMessageBox.Icon, title: str, text: str, details: str = "",
             buttons: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok) -> QMessageBox:
        """The window's one dialog builder: plain text (keys, paths and errors are data, never markup)."""
        box = QMessageBox(icon, title, text, buttons, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        if details:
            box.setInformativeText(details)
        return box

    def _message(self, icon: QMessageBox.Icon, title: str, text: str) -> None:
        self._box(icon, title, text).exec()

    def _show_write_error(self, message: str) -> None:
        self.banner.message.setText(f"{message} ({len(self.stack.pending)} edit(s) pending)")
        self.banner.setVisible(True)
        self.show_status(message)

    def _stack_changed(self) -> None:
        self.undo_action.setEnabled(self.stack.can_undo)
        self.redo_action.setEnabled(self.stack.can_redo)
        self.undo_action.setText(f"Undo {self.stack.undo_text}" if self.stack.undo_text else "Undo")
        self.redo_action.setText(f"Redo {self.stack.redo_text}" if self.stack.redo_text else "Redo")
        if not self.stack.pending and self.stack.last_error is None:
            self.banner.setVisible(False)

    def _refresh(self, command: Command | None = None) -> None:
        """Re-read the current clip's labels and the browser rows after an edit.

        After one command only the row of the clip it changed is re-read (a pool-wide polarity
        changes no row until a refit): re-reading every row cost 1.9 s per edit at 60,000
        judgments (bench P10). Without a command (retry, conflict) every row is re-read.
        """
        self.refresh_detail()
        if command is None:
            self.reload_rows()
        elif command.clip_id is not None:
            self.browser.update_rows(self.review.clip_rows(self.annotator.id, [command.clip_id]))

    def refresh_detail(self) -> None:
        """Re-read the shown clip's texts (answers, judgments, tags, labels); its audio stays as it is."""
        if self.detail is not None:
            self.detail = self.review.clip_detail(self.detail.clip_id, self.annotator.id)
            self._show_detail()

    # ------------------------------------------------------------------ misc

    def show_status(self, message: str) -> None:
        self.statusBar().showMessage(message, 10_000)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._layout_pending:
            self._layout_pending = False
            self.apply_default_layout()

    def apply_default_layout(self) -> None:
        """Give the player most of the window: clips ¼ of the width, evidence and judgment about
        a fifth, the attribution grid a quarter of the height."""
        clips, evidence, grid = self._default_docks
        width, height = max(self.width(), 800), max(self.height(), 600)
        self.resizeDocks([clips, evidence], [int(width * 0.25), int(width * 0.22)], Qt.Orientation.Horizontal)
        self.resizeDocks([grid], [int(height * 0.24)], Qt.Orientation.Vertical)

    def commit_typed_note(self) -> None:
        """Save the note being typed (the box saves on Enter or focus loss, which moving on by
        keyboard or closing the window does not always give)."""
        if self.detail is not None:
            self.clip_panel._note_finished()

    def ask_about_pending(self) -> str:
        """Ask what to do with edits that are not saved: ``retry``, ``discard`` or ``cancel``."""
        count = len(self.stack.pending)
        box = self._box(QMessageBox.Icon.Warning, "Unsaved edits",
                        f"{count} edit(s) could not be saved yet: {self.stack.last_error or 'the write failed'}.",
                        "Retry saving them now, close and lose them, or keep the window open?",
                        QMessageBox.StandardButton.NoButton)
        retry = box.addButton("Retry", QMessageBox.ButtonRole.AcceptRole)
        discard = box.addButton("Close without saving", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(retry)
        box.exec()
        clicked = box.clickedButton()
        return "retry" if clicked is retry else "discard" if clicked is discard else "cancel"

    def ask_about_running_job(self) -> bool:
        """Whether to close while a cockpit job runs: it then stops after the clip in flight,
        keeping everything finished so far (starting it again resumes)."""
        from ui.cockpit.jobs import confirm

        jobs = self.cockpit.jobs
        name = jobs.current.name if jobs.current is not None else "a job"
        done = jobs.context.done if jobs.context is not None else 0
        total = jobs.context.total if jobs.context is not None else 0
        return confirm(self, "A job is running",
                       f"{name} is running ({done} of {total or '?'} done). Close and stop it after the item "
                       "in flight? Everything finished so far is stored; starting it again resumes.")

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        """Close, unless edits are still pending and the expert does not want them lost, or a
        job is running and the expert wants it to go on."""
        if self.cockpit.jobs.running and not self.ask_about_running_job():
            event.ignore()
            return
        self.commit_typed_note()
        while self.stack.pending:
            choice = self.ask_about_pending()
            if choice == "cancel":
                event.ignore()
                return
            if choice == "discard":
                log.warning("closed with %d unsaved edit(s) discarded", len(self.stack.pending))
                break
            self.retry_pending()  # a failure shows the banner again and the question repeats
        self.shutdown()
        super().closeEvent(event)

    def shutdown(self) -> None:
        """Cancel running work, join the workers, release audio, remember the layout."""
        self.loader.shutdown()
        self.player_view.shutdown()
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("window_state", self.saveState())
        self.settings.sync()
