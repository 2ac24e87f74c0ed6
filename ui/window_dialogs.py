"""The review window's dialogs: one plain-text message box builder and the questions asked
before closing (unsaved edits, a running job).

A mixin of :class:`ui.main_window.MainWindow`, split from it to keep that file to the window's frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

if TYPE_CHECKING:
    from ui.cockpit import Cockpit
    from workbench.commands import CommandStack


class DialogsMixin:
    """Message boxes of the main window (a QWidget: the boxes are its children)."""

    stack: CommandStack
    cockpit: Cockpit

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
