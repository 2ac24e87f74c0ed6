"""The review window's edits as the window shows them: the panels' edits become commands of the
session (:class:`ui.session.ReviewSession`, which runs them through its undo stack), failed
writes are kept pending with a retry banner, conflicts are shown with both values, and the
shown clip is re-read (at once after an edit; off the GUI thread for the live refresh while a
job runs).

A mixin of :class:`ui.main_window.MainWindow` (which builds the widgets and the session named
below), split from it to keep that file to the window's frame.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QHBoxLayout, QMessageBox, QPushButton, QWidget

from storage.errors import ConflictError
from workbench.commands import (
    Command,
    CommandStack,
    SetCategoryLabel,
    SetCategoryPolarity,
    SetClipLabel,
)
from workbench.review.views import ClipDetail
from ui.evidence import plain_label
from ui.workers import LatestResult

if TYPE_CHECKING:
    from PySide6.QtGui import QAction

    from ui.browser import ClipBrowser
    from ui.evidence import ClipPanel
    from ui.session import ReviewSession


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


log = logging.getLogger(__name__)


class EditsMixin:
    """Label edits in the main window: execute, undo, redo, retry, and what is shown after them."""

    session: ReviewSession
    stack: CommandStack
    detail: ClipDetail | None
    banner: ErrorBanner
    browser: ClipBrowser
    clip_panel: ClipPanel
    undo_action: QAction
    redo_action: QAction
    # The live refresh's background read of the shown clip; made on its first use.
    _live_detail: LatestResult | None = None
    _live_detail_stopped = False

    def _grid_edit(self, category_id: str, field: str, value: object) -> None:
        if self.detail is None:
            return
        if field == "category_polarity":
            # Pool-wide: the expert's P / N / neutral for the category on every clip (None = fitted).
            session = self.session
            self.execute(SetCategoryPolarity(session.labels, session.annotator.id, category_id, value))  # type: ignore[arg-type]
            return
        # Based on the version shown: if another window or process changed the label since, the
        # edit is refused with both values instead of overwriting theirs.
        seen = self.detail.category(category_id).expert_version
        self.execute(SetCategoryLabel(self.session.labels, self.session.annotator.id, self.detail.clip_id,
                                      category_id, base_version=seen, **{field: value}))

    def _clip_edit(self, **values: object) -> None:
        if self.detail is None:
            return
        self.execute(SetClipLabel(self.session.labels, self.session.annotator.id, self.detail.clip_id,
                                  base_version=self.detail.own_label.version, **values))

    def _quality_vote(self, flag: str, overruled: bool) -> None:
        """The annotator's vote on one quality flag of the clip, as a command (undo, history)."""
        from workbench.commands import SetQualityOverrule

        if self.detail is None:
            return
        labels, annotator = self.labels, self.annotator.id
        mine = [v for v in labels.quality_overrules(self.detail.clip_id)
                if v["annotator_id"] == annotator and v["flag"] == flag]
        self.execute(SetQualityOverrule(labels, annotator, self.detail.clip_id, flag,
                                        base_version=mine[0]["version"] if mine else 0, overruled=overruled))

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
        """Run a command through the session's stack; on a failed write it stays pending with a visible error."""
        return self.session.execute(command)

    def undo(self) -> None:
        self.session.undo()

    def redo(self) -> None:
        self.session.redo()

    def retry_pending(self) -> None:
        self.session.retry_pending()

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

    def _refresh(self, command: Command | None = None) -> None:  # the session's ``edited``
        """Re-read the current clip's labels and the browser rows after an edit.

        After one command only the row of the clip it changed is re-read (a pool-wide polarity
        changes no row until a refit): re-reading every row cost 1.9 s per edit at 60,000
        judgments (bench P10). Without a command (retry, conflict) every row is re-read.
        """
        self.refresh_detail()
        if command is None:
            self.reload_rows()
        elif command.clip_id is not None:
            self.browser.update_rows(self.session.review.clip_rows(self.session.annotator.id, [command.clip_id]))

    def refresh_detail(self) -> None:
        """Re-read the shown clip's texts (answers, judgments, tags, labels); its audio stays as it is.

        At once, on the GUI thread: after an edit, in guess mode and at a job's end the panels
        must show the new state before anything else happens. A live read still under way
        (:meth:`refresh_detail_in_background`) is older than this one and is dropped.
        """
        self.session.refresh_detail()  # the panels follow on its detailChanged

    def _detail_changed(self) -> None:
        """The session re-read the shown clip: a live read under way is older; the panels follow."""
        if self._live_detail is not None:
            self._live_detail.invalidate()
        if self.detail is not None:
            self._show_detail()

    def refresh_detail_in_background(self) -> None:
        """:meth:`refresh_detail` for the live refresh while a job stores answers (every 2 s).

        The read (4–15 ms of SQL) runs off the GUI thread, which would otherwise hitch at each
        refresh; the panels follow when it arrives, and only if the same clip is still shown to
        the same annotator. Opening a clip or a synchronous re-read drops a read under way
        (the generation rule of :class:`ui.workers.LatestResult`).
        """
        if self.detail is None or self._live_detail_stopped:
            return
        clip_id, annotator_id, review = self.detail.clip_id, self.session.annotator.id, self.session.review
        # The service opens a session per call and touches no widget: safe on the pool thread.
        self._live_reader().submit(lambda: (clip_id, annotator_id, review.clip_detail(clip_id, annotator_id)))

    def _live_reader(self) -> LatestResult:
        if self._live_detail is None:
            reader = LatestResult(self)  # type: ignore[arg-type]
            reader.delivered.connect(self._live_detail_read)
            reader.failed.connect(lambda message: log.warning("live refresh of the shown clip failed: %s", message))
            # Another clip's synchronous read is newer than any live read under way.
            self.clipShown.connect(lambda _clip_id: reader.invalidate())
            self._live_detail = reader
        return self._live_detail

    def _live_detail_read(self, result: tuple[int, int, ClipDetail]) -> None:
        clip_id, annotator_id, detail = result
        if self.detail is None or self.detail.clip_id != clip_id or self.session.annotator.id != annotator_id:
            return  # the user has moved on: the clip shown now was read when it was opened
        self.detail = detail
        self._show_detail()

    def stop_live_detail(self) -> None:
        """Drop a live read under way, join its thread and start no other (the window closes)."""
        self._live_detail_stopped = True
        if self._live_detail is not None:
            self._live_detail.shutdown()

    def commit_typed_note(self) -> None:
        """Save the note being typed (the box saves on Enter or focus loss, which moving on by
        keyboard or closing the window does not always give)."""
        if self.detail is not None:
            self.clip_panel._note_finished()
