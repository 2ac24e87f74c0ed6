"""Render the main window with one clip open, off-screen, to a PNG (`aglw screenshot`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEventLoop, qInstallMessageHandler

from storage import open_store
from workbench.audio.playback import NullSink, Player
from workbench.errors import AglwError
from workbench.labels import AnnotatorInfo, LabelService
from workbench.outputs import check_file_target, output_file


# What the offscreen platform says each time a window shows, resizes or is raised: it cannot do
# what a window system would, which a picture never needs (stderr stays quiet on success).
OFFSCREEN_NOTES = ("This plugin does not support propagateSizeHints()", "This plugin does not support raise()")


@contextlib.contextmanager
def quiet_offscreen_notes() -> Iterator[None]:
    """Drop the offscreen platform's :data:`OFFSCREEN_NOTES` while rendering; every other Qt
    message reaches the handler before (or stderr, as Qt writes it) unchanged."""
    previous = None

    def handler(mode, context, message):  # type: ignore[no-untyped-def]
        if message in OFFSCREEN_NOTES:
            return
        if previous is not None:
            previous(mode, context, message)
        else:
            sys.stderr.write(f"{message}\n")
            sys.stderr.flush()

    previous = qInstallMessageHandler(handler)
    try:
        yield
    finally:
        qInstallMessageHandler(previous)


def _show_view(window, view: str, size: tuple[int, int]):  # type: ignore[no-untyped-def]
    """Bring ``view`` to the front in ``window``; returns the widget to grab."""
    if view == "events":
        window.spatial_events.dock.show()
        window.spatial_events.dock.raise_()
        return window
    if view == "error-modes":
        tabs = window.evidence_tabs
        tabs.setCurrentIndex([tabs.tabText(i) for i in range(tabs.count())].index("Error modes"))
        return window
    if view == "guess":
        window.guess_mode.action.setChecked(True)
        return window.cockpit.detach("map", size)
    if view == "review":
        return window
    return window.cockpit.detach(view, size)


def screenshot_viewer(store, annotator: str | None) -> AnnotatorInfo:  # type: ignore[no-untyped-def]
    """Who the rendered window sees the project as; nothing is stored.

    ``annotator`` when that expert exists, else a viewer of that name (default ``screenshot``) who is
    not stored. Without a name, a demo project is seen as ``aglw demo`` opens it, as the demo's
    expert: events are per annotator, and the demo's are that expert's (anyone else sees an empty
    Events dock).
    """
    from workbench.demo import DEMO_ANNOTATOR

    info = LabelService(store).find_annotator(annotator or DEMO_ANNOTATOR)  # that expert exists in a demo project only
    if info is None:
        info = AnnotatorInfo(id=-1, name=annotator or "screenshot", role="expert", pseudonym="viewer")
    return info


def render_screenshot(db: str, clip_key: str, out: Path, size: tuple[int, int] = (1600, 1000),
                      annotator: str | None = None, view: str = "review", *,
                      overwrite: bool = False) -> tuple[Path, tuple[int, int]]:
    """Open ``clip_key`` of project ``db`` in the main window and save ``window.grab()`` as PNG;
    returns the file and the size of the picture written.

    The picture has the size asked unless the view cannot be that small (the review window's
    docks give it a minimum size): then it has the smallest size the view takes, and the size
    returned says so.

    The clip's audio is loaded synchronously so the picture shows the spectrogram and
    direction view; nothing is played (a silent sink). ``view`` (one of the CLI's ``--view`` choices)
    other than ``review`` saves that cockpit view (curation, selection, map, leaderboard, agreement,
    jobs, team) or the guess mode's map instead, with the clip open; ``events`` and ``error-modes``
    save the review window with that panel in front.

    The window has the default layout (a layout remembered by ``aglw gui`` is neither used nor
    changed). Rendering writes nothing to the project: the window sees it as ``annotator`` when that
    expert exists, else as a viewer who is not stored (no annotator row is added); without
    ``annotator`` a demo project as its expert (:func:`screenshot_viewer`). An existing
    ``out`` is refused unless ``overwrite``.
    """
    out = check_file_target(out, force=overwrite)  # before the window is built; links never followed
    from ui.app import ensure_application
    from ui.main_window import MainWindow

    app = ensure_application(offscreen_if_headless=True)
    with quiet_offscreen_notes():
        return _render(app, MainWindow, db, clip_key, out, size, annotator, view, overwrite)


def _render(app, main_window, db: str, clip_key: str, out: Path, size: tuple[int, int],  # type: ignore[no-untyped-def]
            annotator: str | None, view: str, overwrite: bool) -> tuple[Path, tuple[int, int]]:
    """:func:`render_screenshot`'s work, inside :func:`quiet_offscreen_notes`."""
    store = open_store(db)
    window = None
    try:
        info = screenshot_viewer(store, annotator)
        # The default layout at the size asked; the reviewer's remembered layout is neither used nor changed.
        window = main_window(store, info, player=Player(NullSink()), force_sync=True, remember_layout=False)
        window.resize(*size)
        window.show()
        window.open_clip(window.review.clip_id_for_key(clip_key))
        for _ in range(3):
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        target = _show_view(window, view, size)
        for _ in range(3):
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        picture = target.grab()
        # Qt writes to the temporary file beside ``out``, which then replaces ``out`` (or a link there)
        with output_file(out, force=overwrite, suffix=".png") as temporary:
            if not picture.save(str(temporary), "PNG"):
                raise AglwError(f"{out}: could not write the PNG; check the folder is writable and has space")
        return out, (picture.width(), picture.height())
    finally:
        if window is not None:
            window.shutdown()
            window.close()
            window.deleteLater()
            QCoreApplication.sendPostedEvents(None, 0)
        store.dispose()
