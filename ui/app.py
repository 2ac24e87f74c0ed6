"""QApplication setup and the entry points the CLI calls (`aglw gui`, `aglw demo`)."""

from __future__ import annotations

import ctypes
import logging
import os
import sys

import shiboken6
from PySide6.QtWidgets import QApplication, QInputDialog, QWidget

from storage import Store, open_store
from workbench.errors import AglwError
from workbench.labels import AnnotatorInfo, LabelService


log = logging.getLogger(__name__)

# glibc mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# prctl option that stops the kernel from backing this process with transparent huge pages
_PR_SET_THP_DISABLE = 41
GIL_SWITCH_INTERVAL_S = 0.001


def tune_process() -> None:
    """Process settings for the GUI, applied once when the QApplication is created.

    - The GIL switch interval drops from 5 ms to 1 ms: the GUI thread and the audio worker
      threads hand the interpreter over sooner, so a worker's short Python steps between long
      numpy calls do not wait behind the GUI thread's painting (and the other way round).
    - On glibc, arrays up to 32 MiB are served from the heap and up to 64 MiB of freed memory
      is kept there instead of being handed back to the system at once. Opening a clip streams
      the file through blocks of a few MiB; without this, glibc maps and unmaps them, and every
      first touch of a fresh page costs a page fault (on virtual machines, a costly one). It
      measured about 45 ms less CPU per cold open of a 140 s MP3 (P2).
    - On Linux, no transparent huge pages for this process (as Redis and several databases do):
      where the kernel gives them to every large mapping (``always``, Debian's default), the
      first touch of a clip's buffers sometimes waits for the kernel to compact memory. P2, 5
      fresh processes each, alternating: cold first clip median 269 ms with them, 220 ms
      without; next uncached clip 274 ms, 193 ms (the decode itself is ~25 ms slower on small
      pages; the stalls cost more).
    """
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    if libc.prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:  # kernels before 3.15 do not know it
        log.debug("prctl(PR_SET_THP_DISABLE) refused (errno %d); keeping huge pages", ctypes.get_errno())
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:  # not glibc (e.g. musl has no mallopt)
        return
    if not (mallopt(_M_MMAP_THRESHOLD, 32 << 20) and mallopt(_M_TRIM_THRESHOLD, 64 << 20)):
        log.debug("mallopt refused the allocator settings; keeping the defaults")


def ensure_application(offscreen_if_headless: bool = False) -> QApplication:
    """The running QApplication, created if needed (offscreen when there is no display).

    Creating it also applies :func:`tune_process`.
    """
    if offscreen_if_headless and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance()
    if app is None:
        tune_process()
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


def dispose_window(window: QWidget | None) -> None:
    """Shut a main window down and delete its C++ object now, while the QApplication lives.

    Left to Python's garbage collector at interpreter exit, the window (and its pyqtgraph
    scene) could be destroyed after the application object, which can crash on exit.
    """
    if window is None or not shiboken6.isValid(window):
        return
    shutdown = getattr(window, "shutdown", None)
    if shutdown is not None:
        shutdown()
    window.hide()
    shiboken6.delete(window)


def run_gui(db: str, annotator: str | None = None, *, clip_key: str | None = None) -> int:
    """Open the workbench on project ``db`` and run the event loop; returns the exit code.

    The main window is shut down and deleted explicitly before this returns (see
    :func:`dispose_window`).
    """
    from ui.main_window import MainWindow

    app = ensure_application()
    store: Store = open_store(db)
    window = None
    try:
        info = choose_annotator(LabelService(store), annotator)
        window = MainWindow(store, info)
        window.show()
        if clip_key is not None:
            window.open_clip(window.review.clip_id_for_key(clip_key))
        elif window.browser.visible_clip_ids():
            window.open_clip(window.browser.visible_clip_ids()[0])
        code = app.exec()
        return int(code)
    finally:
        dispose_window(window)
        window = None
        store.dispose()
