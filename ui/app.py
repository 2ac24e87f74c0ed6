"""QApplication setup and the entry points the CLI calls (`aglw gui`, `aglw demo`)."""

from __future__ import annotations

import os
import sys

from PySide6.QtWidgets import QApplication, QInputDialog, QWidget

from storage import Store, open_store
from workbench.errors import AglwError
from workbench.labels import AnnotatorInfo, LabelService


def ensure_application(offscreen_if_headless: bool = False) -> QApplication:
    """The running QApplication, created if needed (offscreen when there is no display)."""
    if offscreen_if_headless and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("AGL Workbench")
    return app  # type: ignore[return-value]


def choose_annotator(labels: LabelService, explicit: str | None, parent: QWidget | None = None) -> AnnotatorInfo:
    """``--annotator`` wins; else the one remembered in the GUI settings; else ask with a dialog."""
    from ui.main_window import open_settings

    settings = open_settings()
    name = explicit or settings.value("annotator")
    if not name:
        existing = [a.name for a in labels.list_annotators()]
        name, ok = QInputDialog.getItem(parent, "Who is reviewing?", "Annotator (choose or type a new name):",
                                        existing or [""], 0, True)
        if not ok or not str(name).strip():
            raise AglwError("no annotator chosen; pass --annotator NAME")
    info = labels.ensure_annotator(str(name))
    settings.setValue("annotator", info.name)
    settings.sync()
    return info


def run_gui(db: str, annotator: str | None = None, *, clip_key: str | None = None) -> int:
    """Open the workbench on project ``db`` and run the event loop; returns the exit code."""
    from ui.main_window import MainWindow

    app = ensure_application()
    store: Store = open_store(db)
    try:
        info = choose_annotator(LabelService(store), annotator)
        window = MainWindow(store, info)
        window.show()
        if clip_key is not None:
            window.open_clip(window.review.clip_id_for_key(clip_key))
        elif window.browser.visible_clip_ids():
            window.open_clip(window.browser.visible_clip_ids()[0])
        code = app.exec()
        window.shutdown()
        return int(code)
    finally:
        store.dispose()
