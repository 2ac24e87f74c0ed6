"""The curation cockpit: jobs, curation, selection, map, leaderboard, agreement and team views.

:func:`install_cockpit` adds them as tabbed docks through the window's
:class:`ui.docking.DockHost`, works on the :class:`ui.session.ReviewSession` (the store, the
annotator, the stack, the shown clip), asks the session to open a clip its views link to, and
adds Project ▸ Refresh (F5) and the Cockpit menu. It never sees the review window itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMenu, QScrollArea, QWidget

from storage import Store
from ui.cockpit.agreement_view import AgreementView
from ui.cockpit.curation_view import CurationView
from ui.cockpit.jobs import JobsPanel, confirm, judge_job, judging_cost_text, tag_job
from ui.cockpit.leaderboard_view import LeaderboardView
from ui.cockpit.map_view import MapView
from ui.cockpit.selection_view import SelectionView
from ui.cockpit.team import TeamView
from ui.docking import DockHost
from ui.session import ReviewSession
from workbench.errors import AglwError

VIEW_NAMES = ("curation", "selection", "map", "leaderboard", "agreement", "jobs", "team")


@dataclass
class Cockpit:
    """The installed views (``window.cockpit``)."""

    jobs: JobsPanel
    curation: CurationView
    selection: SelectionView
    map: MapView
    leaderboard: LeaderboardView
    agreement: AgreementView
    team: TeamView
    docks: dict[str, QDockWidget]
    # A store this window opened itself ("Open project…"): disposed when the window closes.
    owned_store: Store | None = None
    refresh_action: QAction | None = None  # Project ▸ Refresh (F5)
    closed: bool = False  # shut down (the window closed)

    def view(self, name: str) -> QWidget:
        if name not in VIEW_NAMES:
            raise AglwError(f"unknown view {name!r}; use one of {', '.join(VIEW_NAMES)}")
        return getattr(self, name)

    def show(self, name: str) -> None:
        """Bring a view's dock to the front."""
        dock = self.docks[name]
        dock.show()
        dock.raise_()

    def detach(self, name: str, size: tuple[int, int]) -> QWidget:
        """Float a view's dock at ``size`` (for `aglw screenshot --view`); returns the dock."""
        self.view(name)
        dock = self.docks[name]
        dock.setFloating(True)
        dock.resize(*size)
        dock.show()
        dock.raise_()
        return dock

    def refresh(self) -> None:
        for view in (self.curation, self.selection, self.map, self.leaderboard, self.agreement, self.team):
            view.refresh()

    def shutdown(self) -> None:
        """Stop the running job (kept so far, resumable) and dispose an owned store; once.

        Called by the window's shutdown once its close is decided: a close the expert declines
        (a job running, edits unsaved) must leave the job running and the store open.
        """
        if self.closed:
            return
        self.closed = True
        self.jobs.shutdown()
        self.curation.shutdown()
        self.leaderboard.shutdown()
        if self.owned_store is not None:
            self.owned_store.dispose()


def install_cockpit(session: ReviewSession, host: DockHost, *, anchor: QDockWidget | None,
                    project_menu: QMenu, visible_clip_ids: Callable[[], list[int]],
                    force_sync: bool = False) -> Cockpit:
    """Add the cockpit views as docks tabbed beside ``anchor`` (the review's bottom dock), Refresh
    to ``project_menu`` and a Cockpit menu; ``visible_clip_ids`` are the clips an ALM run is
    offered (the browser's). The window keeps the returned object."""
    store = session.store
    jobs = JobsPanel(store, force_sync=force_sync)
    curation = CurationView(store, session.annotator.id, session.stack, execute=session.execute, jobs=jobs)
    selection = SelectionView(store)
    world = MapView(store)
    board = LeaderboardView(store, force_sync=force_sync)
    agreement = AgreementView(store, jobs)
    team = TeamView(store)
    docks: dict[str, QDockWidget] = {}
    titles = {"curation": "Curation", "selection": "Selection", "map": "Map", "leaderboard": "Leaderboard",
              "agreement": "Agreement", "jobs": "Jobs", "team": "Team"}
    widgets = {"curation": curation, "selection": selection, "map": world, "leaderboard": board,
               "agreement": agreement, "jobs": jobs, "team": team}
    # tabbed with the review's bottom dock, so the cockpit adds no minimum size to the window
    first = anchor
    for name in VIEW_NAMES:
        # in a scroll area the views never force a minimum size on the main window
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(widgets[name])
        dock = host.add_dock(titles[name], scroll, Qt.DockWidgetArea.BottomDockWidgetArea,
                             name=f"dock-cockpit-{name}")
        if first is None:
            first = dock
        else:
            host.tab_beside(first, dock)
        docks[name] = dock
    cockpit = Cockpit(jobs, curation, selection, world, board, agreement, team, docks)

    def open_key(key: str) -> None:
        session.request_clip(session.review.clip_id_for_key(key))

    for view in (curation, selection):
        view.clipActivated.connect(open_key)
    session.clipShown.connect(lambda _clip_id: world.set_clip(session.detail))
    curation.runStored.connect(lambda _run: selection.refresh())
    # Answers, tags and judgments appear while a job runs, not only when it ends: the leaderboard
    # and the shown clip are re-read at most every 2 s while items finish (an ALM run's answers
    # reach the leaderboard and the review view's ALM chooser as they arrive). Both reads (every
    # model's metrics; the shown clip's texts) run off the GUI thread, the latest read alone is shown.
    live = QTimer(host.parent)
    live.setObjectName("cockpit-live-refresh")
    live.setSingleShot(True)
    live.setInterval(2000)

    def live_refresh() -> None:
        board.refresh_in_background()
        session.request_live_refresh()

    live.timeout.connect(live_refresh)
    jobs.clipFinished.connect(lambda *_: None if live.isActive() else live.start())

    def job_ended(_status: str, _message: str) -> None:
        live.stop()
        cockpit.refresh()
        session.refresh_detail()

    jobs.finished.connect(job_ended)

    def start_judging() -> None:
        from workbench.attribution.config import load_judges

        try:
            config = load_judges()
            text = judging_cost_text(store, config)
        except AglwError as exc:
            jobs.status.setText(str(exc))
            return
        if confirm(host.parent, "Send to the judges?", text):
            jobs.start(judge_job(store, config))

    def start_fit() -> None:
        curation.fit_and_store()  # the curation view's job: it shows the stored run and its diff

    jobs.add_starter("Tag clips (mn10_as)", lambda: jobs.start(tag_job(store)))
    jobs.add_starter("Judge clips… (dry run first)", start_judging)
    jobs.add_starter("Fit curation model", start_fit)

    def start_alm() -> None:
        from ui.cockpit.alm_job import start_alm_run

        start_alm_run(host.parent, store, jobs, visible_clip_ids)

    jobs.add_starter("Ask an ALM… (estimate first)", start_alm)

    def refresh_all() -> None:
        session.request_reload()  # the window re-reads its clip list and re-opens the shown clip
        cockpit.refresh()
        session.show_status("reloaded from the project store")

    refresh = QAction("Refresh", host.parent)
    refresh.setShortcut(QKeySequence("F5"))
    refresh.triggered.connect(refresh_all)
    project_menu.addAction(refresh)
    host.add_shortcut(refresh)
    view_menu = host.add_menu("&Cockpit")
    for name in VIEW_NAMES:
        view_menu.addAction(docks[name].toggleViewAction())
    cockpit.refresh_action = refresh
    if first is not docks[VIEW_NAMES[0]]:
        first.raise_()  # the review's own grid stays in front
    return cockpit
