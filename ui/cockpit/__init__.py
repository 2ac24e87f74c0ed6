"""The curation cockpit: jobs, curation, selection, map, leaderboard, agreement and team views.

:func:`install_cockpit` adds them to the review workbench's main window as tabbed docks,
wires clip links into the review workbench, and adds the Refresh (F5) and
"Open project…" actions.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QInputDialog, QMainWindow, QScrollArea, QWidget

from storage import Store
from ui.cockpit.agreement_view import AgreementView
from ui.cockpit.curation_view import CurationView
from ui.cockpit.jobs import JobsPanel, confirm, fit_job, judge_job, judging_cost_text, tag_job
from ui.cockpit.leaderboard_view import LeaderboardView
from ui.cockpit.map_view import MapView
from ui.cockpit.selection_view import SelectionView
from ui.cockpit.team import TeamView
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
        self.jobs.shutdown()
        self.curation.shutdown()
        if self.owned_store is not None:
            self.owned_store.dispose()


class _CloseWatcher(QObject):
    def __init__(self, cockpit: Cockpit, parent: QObject) -> None:
        super().__init__(parent)
        self.cockpit = cockpit

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Close:
            # once is enough, and the filter must not outlive the window's close
            watched.removeEventFilter(self)
            self.cockpit.shutdown()
        return False


def install_cockpit(window: QMainWindow, *, force_sync: bool = False) -> Cockpit:
    """Add the cockpit views to ``window`` (a :class:`ui.main_window.MainWindow`)."""
    store = window.store  # type: ignore[attr-defined]
    jobs = JobsPanel(store, force_sync=force_sync)
    curation = CurationView(store, window.annotator.id, window.stack, execute=window.execute)  # type: ignore[attr-defined]
    selection = SelectionView(store)
    world = MapView(store)
    board = LeaderboardView(store)
    agreement = AgreementView(store, jobs)
    team = TeamView(store)
    docks: dict[str, QDockWidget] = {}
    titles = {"curation": "Curation", "selection": "Selection", "map": "Map", "leaderboard": "Leaderboard",
              "agreement": "Agreement", "jobs": "Jobs", "team": "Team"}
    widgets = {"curation": curation, "selection": selection, "map": world, "leaderboard": board,
               "agreement": agreement, "jobs": jobs, "team": team}
    # tabbed with the review's bottom dock, so the cockpit adds no minimum size to the window
    first: QDockWidget | None = window.findChild(QDockWidget, "dock-Attribution")
    for name in VIEW_NAMES:
        dock = QDockWidget(titles[name], window)
        dock.setObjectName(f"dock-cockpit-{name}")
        # in a scroll area the views never force a minimum size on the main window
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(widgets[name])
        dock.setWidget(scroll)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        if first is None:
            first = dock
        else:
            window.tabifyDockWidget(first, dock)
        docks[name] = dock
    cockpit = Cockpit(jobs, curation, selection, world, board, agreement, team, docks)
    window.cockpit = cockpit  # type: ignore[attr-defined]

    def open_key(key: str) -> None:
        window.open_clip(window.review.clip_id_for_key(key))  # type: ignore[attr-defined]

    for view in (curation, selection):
        view.clipActivated.connect(open_key)
    window.clipShown.connect(lambda _clip_id: world.set_clip(window.detail))  # type: ignore[attr-defined]
    curation.runStored.connect(lambda _run: selection.refresh())
    jobs.finished.connect(lambda _status, _message: cockpit.refresh())

    def start_judging() -> None:
        from workbench.attribution.config import load_judges

        try:
            config = load_judges()
            text = judging_cost_text(store, config)
        except AglwError as exc:
            jobs.status.setText(str(exc))
            return
        if confirm(window, "Send to the judges?", text):
            jobs.start(judge_job(store, config))

    def start_fit() -> None:
        jobs.start(fit_job(store, curation.parameters(), alm_model=curation.alm.currentData(),
                           created_by=window.annotator.id))  # type: ignore[attr-defined]

    jobs.add_starter("Tag clips (mn10_as)", lambda: jobs.start(tag_job(store)))
    jobs.add_starter("Judge clips… (dry run first)", start_judging)
    jobs.add_starter("Fit curation model", start_fit)

    def refresh_all() -> None:
        window.reload_rows()  # type: ignore[attr-defined]
        if window.detail is not None:  # type: ignore[attr-defined]
            window.open_clip(window.detail.clip_id)  # type: ignore[attr-defined]
        cockpit.refresh()
        window.statusBar().showMessage("reloaded from the project store", 5000)

    menu = window.menuBar().addMenu("&Project")
    refresh = QAction("Refresh", window)
    refresh.setShortcut(QKeySequence("F5"))
    refresh.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    refresh.triggered.connect(refresh_all)
    open_action = QAction("Open project…", window)
    open_action.triggered.connect(lambda: _ask_and_open(window))
    link_action = QAction("Link audio…", window)  # the same rule as `aglw media link`
    link_action.triggered.connect(window.ask_link_audio)  # type: ignore[attr-defined]
    for act in (open_action, link_action, refresh):
        menu.addAction(act)
        window.addAction(act)
    view_menu = window.menuBar().addMenu("&Cockpit")
    for name in VIEW_NAMES:
        view_menu.addAction(docks[name].toggleViewAction())
    cockpit.refresh_action = refresh  # type: ignore[attr-defined]
    window.installEventFilter(_CloseWatcher(cockpit, window))
    if first is not docks[VIEW_NAMES[0]]:
        first.raise_()  # the review's own grid stays in front
    return cockpit


def _ask_and_open(window: QMainWindow) -> None:
    target, ok = QInputDialog.getText(window, "Open project", "SQLite file path or postgresql:// URL:")
    if ok and target.strip():
        open_project(window, target.strip())


def open_project(window: QMainWindow, target: str) -> QMainWindow | None:
    """Open another project (file or PostgreSQL URL) in a new window for the same annotator.

    The current window is closed (its jobs and workers stop) and its store disposed, so no
    connection to the old project stays open; the new window disposes the store it opened
    when it closes in turn. When the new project cannot be opened, the current one stays.
    """
    from storage import open_store
    from ui.main_window import MainWindow
    from workbench.labels import LabelService

    store = None
    try:
        store = open_store(target)
        info = LabelService(store).ensure_annotator(window.annotator.name)  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - any failure to open is shown, the current project stays open
        if store is not None:
            store.dispose()
        window.statusBar().showMessage(f"could not open {_without_password(target)}: {exc}", 15_000)
        return None
    old_store: Store = window.store  # type: ignore[attr-defined]
    replacement = MainWindow(store, info)
    replacement.cockpit.owned_store = store  # type: ignore[attr-defined]
    replacement.show()
    window.close()
    # Deleted now, in the GUI thread: left to the garbage collector, the closed window's widgets
    # could be destroyed in whatever thread happens to collect them.
    window.deleteLater()
    old_store.dispose()
    return replacement


def _without_password(target: str) -> str:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(target).render_as_string(hide_password=True)
    except ArgumentError:
        return target
