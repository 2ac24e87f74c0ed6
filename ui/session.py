"""One review session: what every panel of the review window works with (issue [O]).

A :class:`ReviewSession` is one annotator reviewing one project: the store, the annotator, the
read service, the label service, the undo stack and :meth:`ReviewSession.execute`, the shown
clip's detail, the visibility policy (:class:`workbench.review.visibility.VisibilityPolicy`)
and the signals a panel follows. Panels receive the session (and the one widget they attach
to, or a :class:`ui.docking.DockHost` to add docks and menus), never the window: the window
builds the session, composes the docks and answers the session's signals with its own widgets
(the error banner, the conflict dialog, the status line) and its navigation requests (open a
clip, reload from the store, re-read the shown clip off the GUI thread).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QObject, Signal

from storage import Store
from storage.errors import ConflictError
from workbench.commands import Command, CommandStack, WriteFailed
from workbench.errors import InputError
from workbench.labels import INTERACTIVE_WAIT_S, AnnotatorInfo, LabelService
from workbench.review.service import ReviewService
from workbench.review.views import ClipDetail
from workbench.review.visibility import VisibilityPolicy

T = TypeVar("T")


class ReviewSession(QObject):
    """One annotator's review of one project.

    Signals
    -------
    clipShown(int)
        A clip was opened and its texts are shown.
    audioShown(int)
        A clip's audio is ready to play.
    detailChanged()
        The shown clip's detail was re-read (after an edit, a job, a mode switch).
    edited(object)
        A command was done, undone or redone (the command; None for a retry of pending edits).
    writeFailed(str)
        A write failed; the stack keeps the edit pending.
    conflicted(object)
        An edit was refused because the label changed elsewhere (the ConflictError).
    status(str)
        A line for the status bar.
    openClipRequested(int)
        A panel asks for a clip to be shown (a link in a view); the window opens it.
    reloadRequested()
        A panel asks for the clip list and the shown clip to be re-read from the store.
    liveRefreshRequested()
        A panel asks for the shown clip to be re-read off the GUI thread (a job stores answers).
    """

    clipShown = Signal(int)
    audioShown = Signal(int)
    detailChanged = Signal()
    edited = Signal(object)
    writeFailed = Signal(str)
    conflicted = Signal(object)
    status = Signal(str)
    openClipRequested = Signal(int)
    reloadRequested = Signal()
    liveRefreshRequested = Signal()

    def __init__(self, store: Store, annotator: AnnotatorInfo, visibility: VisibilityPolicy,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.annotator = annotator
        self.review = ReviewService(store)
        # Edits are written on the GUI thread: a project locked by another writer fails fast
        # (the edit stays pending with a retry) instead of freezing the window.
        self.labels = LabelService(store, write_wait_s=INTERACTIVE_WAIT_S)
        self.stack = CommandStack()
        self.visibility = visibility
        self.detail: ClipDetail | None = None

    # ------------------------------------------------------------------ the shown clip

    def read_detail(self, clip_id: int) -> ClipDetail:
        """Read a clip's detail and make it the shown one (the panels follow on clipShown)."""
        self.detail = self.review.clip_detail(clip_id, self.annotator.id)
        self.sync_visibility()
        return self.detail

    def refresh_detail(self) -> None:
        """Re-read the shown clip's texts now; the panels follow on ``detailChanged``."""
        if self.detail is not None:
            self.detail = self.review.clip_detail(self.detail.clip_id, self.annotator.id)
            self.sync_visibility()
        self.detailChanged.emit()

    def sync_visibility(self) -> None:
        """Tell the policy the shown clip and whether the annotator's guess of it is stored."""
        detail = self.detail
        saved = False
        if self.visibility.guess_mode and detail is not None:
            from workbench.studies.localizers import guess_for

            saved = guess_for(self.store, self.annotator.id, detail.clip_id).placed
        self.visibility.set_clip(detail, guess_saved=saved)

    def show_status(self, message: str) -> None:
        self.status.emit(message)

    # ------------------------------------------------------------------ navigation requests
    # A panel asks; the window, which owns the browser, the player and the live reader, answers.

    def request_clip(self, clip_id: int) -> None:
        self.openClipRequested.emit(clip_id)

    def request_reload(self) -> None:
        self.reloadRequested.emit()

    def request_live_refresh(self) -> None:
        self.liveRefreshRequested.emit()

    # ------------------------------------------------------------------ edits

    def _through_stack(self, write: Callable[[], T]) -> tuple[bool, T | None]:
        """Run a stack operation that writes: ``(True, its answer)``, or ``(False, None)`` once a
        failed write (the stack keeps it pending), a conflict or a refusal has been announced."""
        try:
            return True, write()
        except WriteFailed as exc:
            self.writeFailed.emit(str(exc))
        except ConflictError as exc:
            self.conflicted.emit(exc)
        except InputError as exc:
            # The service refused the edit as asked (nothing was written, the history is as it
            # was): its one line goes to the status bar instead of escaping the panel's slot.
            self.show_status(f"not saved: {exc}")
        return False, None

    def execute(self, command: Command) -> bool:
        """Run a command through the stack; on a failed write it stays pending with a visible error."""
        ok, _ = self._through_stack(lambda: self.stack.push(command))
        if not ok:
            return False
        self.show_status(f"saved: {command.description}")
        self.edited.emit(command)
        return True

    def undo(self) -> None:
        self._step(self.stack.undo, "undone")

    def redo(self) -> None:
        self._step(self.stack.redo, "redone")

    def _step(self, step: Callable[[], Command | None], verb: str) -> None:
        ok, command = self._through_stack(step)
        if ok and command is not None:
            self.show_status(f"{verb}: {command.description}")
            self.edited.emit(command)

    def retry_pending(self) -> None:
        ok, saved = self._through_stack(self.stack.retry_pending)
        if ok:
            self.show_status(f"saved {saved} pending edit(s)")
            self.edited.emit(None)
