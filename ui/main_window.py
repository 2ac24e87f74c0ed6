"""The review workbench main window: dockable panels, commands, blind mode, remembered layout.

The window is the frame: it builds the review session (:class:`ui.session.ReviewSession`: the
store, the annotator, the undo stack and ``execute``, the shown clip, the visibility policy and
the signals every panel follows), composes the panels and docks around it, the keyboard actions,
the remembered layout and what closing does. Panels receive the session, never the window:
those that add docks or menus get a :class:`ui.docking.DockHost` and the docks or menus they
attach to, and ask for a clip, a reload or a live re-read through the session's requests.
Its other jobs live in mixins of their own:
showing a clip and its audio (:mod:`ui.window_clips`), edits with undo/redo and pending
writes (:mod:`ui.window_edits`), the Project menu's open and link-audio jobs
(:mod:`ui.window_projects`) and its dialogs (:mod:`ui.window_dialogs`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer, SignalInstance
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QMainWindow,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from storage import Store
from workbench.audio.playback import Player
from workbench.commands import CommandStack
from workbench.config import config_dir
from workbench.labels import AnnotatorInfo, LabelService
from workbench.review.direction import ab_spacing_from_config
from workbench.review.service import ReviewService
from workbench.review.views import AudioSource, ClipDetail
from workbench.review.visibility import VisibilityPolicy
from ui.attribution_grid import AttributionGrid
from ui.browser import ClipBrowser
from ui.cockpit import Cockpit, install_cockpit
from ui.error_modes_panel import install_error_modes
from ui.evidence import ClipInfoPanel, ClipPanel, ReasoningView, TagsPanel, plain_label
from ui.events_panel import install_events_panel
from ui.heap import exclude_from_collections
from ui.cockpit.guess_mode import install_guess_mode
from ui.docking import DockHost
from ui.player import PlayerView
from ui.session import ReviewSession
from ui.window_clips import ClipViewMixin, ViewState
from ui.window_dialogs import DialogsMixin
from ui.window_edits import EditsMixin, ErrorBanner
from ui.window_projects import ProjectsMixin
from ui.workers import AudioLoader, AudioResult

SETTINGS_VERSION = 1

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


class MainWindow(ClipViewMixin, EditsMixin, ProjectsMixin, DialogsMixin, QMainWindow):
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

    def __init__(
        self,
        store: Store,
        annotator: AnnotatorInfo,
        *,
        player: Player | None = None,
        force_sync: bool = False,
        remember_layout: bool = True,
    ) -> None:
        super().__init__()
        self.settings = open_settings()
        # A window that does not remember (`aglw screenshot`) starts from the default layout at
        # the size it is given and leaves the reviewer's remembered layout as it was.
        self.remember_layout = remember_layout
        from workbench.studies.planning import plan_for_annotator

        # What may be shown is the policy's alone (blind mode, the plan's blind flag, guess mode,
        # reveal); every panel asks it. A blind plan starts the window blind.
        self.study_plan = plan_for_annotator(store, annotator.id)
        visibility = VisibilityPolicy(
            blind_mode=str(self.settings.value("blind_mode", True)).lower() in ("true", "1"),
            plan_blind=self.study_plan is not None and bool(self.study_plan[1]),
        )
        self.session = ReviewSession(store, annotator, visibility, self)
        self._audio_clip: AudioSource | None = None  # the clip whose audio views are wanted
        # A clip's playback and direction view that arrived before its spectrogram was painted:
        # applied right after that paint, so they never delay it.
        self._after_paint: AudioResult | None = None
        self.scale = "linear"
        self._restore: ViewState | None = None  # view and playback to restore after an axis switch
        # AB pairs need a microphone spacing for their direction view (config.toml ab_spacing_m).
        self.ab_spacing_m, self.ab_spacing_problem = ab_spacing_from_config()
        self.setObjectName("MainWindow")
        self.dock_host = DockHost(self)

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
        evidence.addTab(self.tags.with_legend(), "Tags")
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
        self.clip_panel.qualityVoted.connect(self._quality_vote)
        self.clip_panel.revealRequested.connect(self.reveal_current)
        self.info.almChosen.connect(self._alm_chosen)
        self.banner.retry.clicked.connect(self.retry_pending)
        self._connect_session()
        self.stack.subscribe(self._stack_changed)
        self._make_actions()
        self._show_modes()
        self.statusBar().showMessage(f"annotator {annotator.name}")

        geometry = self.settings.value("geometry") if remember_layout else None
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1500, 950)
        state = self.settings.value("window_state") if remember_layout else None
        # Without a remembered layout the docks are sized on the first show, when the window
        # has its real size (sizes given before that are not kept). A remembered one is restored
        # once every dock exists and the Events dock sits in its tab (below).
        self._layout_pending = True
        self._saved_state = state
        self.reload_rows()
        self.cockpit: Cockpit = install_cockpit(self.session, self.dock_host, anchor=grid_dock,
                                                project_menu=self.project_menu,
                                                visible_clip_ids=self.browser.visible_clip_ids)
        self._show_modes_in_cockpit()
        # the error-mode column (issue 18), a tab of the Evidence panel
        self.error_modes = install_error_modes(self.session, self.evidence_tabs, self.info.almChosen)
        # spatial sound events (issue 17), a dock beside the Evidence dock
        self.spatial_events = install_events_panel(self.session, self.dock_host, self.player_view,
                                                   beside=evidence_dock)
        # humans as localizers on the map (issue 18)
        self.guess_mode = install_guess_mode(self.session, self.cockpit.map, self.review_menu,
                                             lambda: self.cockpit.show("map"))
        self.visibility.subscribe(self._visibility_changed)
        if state is not None:
            # After the events panel's deferred tab (one turn of the event loop): restored before
            # the cockpit's and the Events docks existed, the layout left a stray copy of the
            # Evidence tab bar over the menu bar and the Evidence dock squeezed.
            QTimer.singleShot(0, self, self._restore_saved_layout)
        # The window and everything it was built with live as long as it: a full collection
        # walking them during the first clip's open cost that open ~150 ms (ui/heap.py).
        exclude_from_collections()

    # ------------------------------------------------------------------ the session

    # What the mixins, the cockpit and the tests read of the session, under the window's names.
    @property
    def store(self) -> Store:
        return self.session.store

    @property
    def annotator(self) -> AnnotatorInfo:
        return self.session.annotator

    @property
    def review(self) -> ReviewService:
        return self.session.review

    @property
    def labels(self) -> LabelService:
        return self.session.labels

    @property
    def stack(self) -> CommandStack:
        return self.session.stack

    @property
    def visibility(self) -> VisibilityPolicy:
        return self.session.visibility

    @property
    def detail(self) -> ClipDetail | None:
        return self.session.detail

    @detail.setter
    def detail(self, detail: ClipDetail | None) -> None:
        self.session.detail = detail

    @property
    def clipShown(self) -> SignalInstance:  # noqa: N802 - the signal's name
        return self.session.clipShown

    @property
    def audioShown(self) -> SignalInstance:  # noqa: N802 - the signal's name
        return self.session.audioShown

    def _connect_session(self) -> None:
        """The window's answers to the session: the panels, the banner, dialogs and status line."""
        session = self.session
        session.edited.connect(self._refresh)
        session.writeFailed.connect(self._show_write_error)
        session.conflicted.connect(self._show_conflict)
        session.status.connect(self.show_status)
        session.detailChanged.connect(self._detail_changed)
        session.openClipRequested.connect(self.open_clip)
        session.reloadRequested.connect(self.reload_from_store)
        session.liveRefreshRequested.connect(self.refresh_detail_in_background)

    def reload_from_store(self) -> None:
        """Re-read the clip list and re-open the shown clip (another window or process wrote)."""
        self.reload_rows()
        if self.detail is not None:
            self.open_clip(self.detail.clip_id)

    # ------------------------------------------------------------------ construction

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        return self.dock_host.add_dock(title, widget, area)

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
        self.review_menu = menu  # panels add their actions here (never found by its text)
        for act in (self.play_action, self.undo_action, self.redo_action, self.blind_action):
            menu.addAction(act)
        # Project ▸ Open project… and Link audio… (ui.window_projects); the cockpit adds Refresh (F5).
        self.project_menu = self.menuBar().addMenu("&Project")
        open_action = QAction("Open project…", self)
        open_action.triggered.connect(self.ask_open_project)
        link_action = QAction("Link audio…", self)  # the same rule as `aglw media link`
        link_action.triggered.connect(self.ask_link_audio)
        for act in (open_action, link_action):
            self.project_menu.addAction(act)
            self.addAction(act)
        self._stack_changed()

    # ------------------------------------------------------------------ blind and guess mode

    @property
    def blind_mode(self) -> bool:
        return self.visibility.blind_mode

    def judges_visible(self) -> bool:
        """Judges and other experts of the shown clip (the visibility policy decides)."""
        self.sync_visibility()
        return self.visibility.judges_visible()

    def set_blind_mode(self, on: bool) -> None:
        self.settings.setValue("blind_mode", on)
        self.visibility.set_blind_mode(on)  # the policy's listeners redraw

    def reveal_current(self) -> None:
        """Blind mode: reveal the judges once the clip is rated."""
        self.sync_visibility()
        reason = self.visibility.reveal()
        if reason is not None and self.detail is not None:
            self.show_status(reason)

    def sync_visibility(self) -> None:
        """Tell the policy the shown clip and whether the annotator's guess of it is stored."""
        self.session.sync_visibility()

    def _visibility_changed(self) -> None:
        """A mode switched or a clip was revealed: every view asks the policy again."""
        self._show_modes()
        self._show_modes_in_cockpit()
        self._show_detail()
        self.guess_mode.refresh()

    def _show_modes_in_cockpit(self) -> None:
        """The cockpit's views of every clip: the Selection view's experts' votes follow blind mode."""
        selection = self.cockpit.selection
        hidden = self.visibility.pool_votes_hidden()
        if hidden != selection.decisions_hidden:
            selection.decisions_hidden = hidden
            selection.refresh()

    def _show_modes(self) -> None:
        """The browser's columns and filters, the menu's check marks and the title follow the modes."""
        policy = self.visibility
        self.browser.set_visibility(policy)
        self.blind_action.blockSignals(True)
        self.blind_action.setChecked(policy.blind_mode)
        self.blind_action.blockSignals(False)
        self.setWindowTitle(" — ".join(["AGL Workbench", self.annotator.name, *policy.mode_names()]))

    # ------------------------------------------------------------------ misc

    def show_status(self, message: str) -> None:
        self.statusBar().showMessage(message, 10_000)

    def _restore_saved_layout(self) -> None:
        if self._saved_state is not None and self.restoreState(self._saved_state):
            self._layout_pending = False
        self._saved_state = None

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._layout_pending:
            self._layout_pending = False
            self.apply_default_layout()

    def apply_default_layout(self) -> None:
        """Give the player most of the window: clips about a fifth of the width, evidence and
        judgment about a quarter (so every Evidence tab fits), the attribution grid a quarter of the height."""
        clips, evidence, grid = self._default_docks
        width, height = max(self.width(), 800), max(self.height(), 600)
        self.resizeDocks([clips, evidence], [int(width * 0.22), int(width * 0.26)], Qt.Orientation.Horizontal)
        self.resizeDocks([grid], [int(height * 0.24)], Qt.Orientation.Vertical)

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
        """Cancel running work, join the workers, release audio, remember the layout.

        The cockpit goes last: its running job stops after the item in flight (what it finished
        is stored) and a store this window opened itself is disposed.
        """
        self.loader.shutdown()
        self.stop_live_detail()
        self.player_view.shutdown()
        if self.remember_layout:
            self.settings.setValue("geometry", self.saveGeometry())
            self.settings.setValue("window_state", self.saveState())
            self.settings.sync()
        self.cockpit.shutdown()
