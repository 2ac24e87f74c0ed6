"""The review window's Project menu: open another project, and link the audio of clips without it.

A mixin of :class:`ui.main_window.MainWindow`, split from it to keep that file to the window's
frame. Linking audio is a job of the cockpit's jobs panel (:mod:`ui.cockpit.jobs`): it runs in
the panel's worker through the task protocol, with progress and Cancel there, and closing the
window while it runs asks first. A cancelled link keeps the links found so far; linking again
goes on from there (clips that have their audio are skipped).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from workbench.errors import AglwError
from workbench.labels import LabelService
from workbench.media import LinkReport
from workbench.review.views import ClipDetail
from workbench.tasks import TaskResult

if TYPE_CHECKING:
    from storage import Store
    from ui.cockpit import Cockpit
    from ui.main_window import MainWindow
    from ui.session import ReviewSession

LINK_JOB_NAME = "link audio"


def link_summary(report: LinkReport) -> list[str]:
    """The lines shown after linking: counts first, then the ambiguous clips (ten at most)."""
    lines = [f"Linked {len(report.linked)} clip(s); {report.already} already had audio; "
             f"{len(report.missing)} not found; {len(report.ambiguous)} ambiguous (not linked)."]
    lines += [f"ambiguous: {e['key']}: {' | '.join(e['candidates'])}" for e in report.ambiguous[:10]]
    return lines


class ProjectsMixin:
    """Project ▸ Open project… and Link audio… of the main window."""

    store: Store
    session: ReviewSession
    cockpit: Cockpit
    detail: ClipDetail | None

    def ask_open_project(self) -> None:
        """Project ▸ Open project…: a SQLite file or a PostgreSQL URL."""
        target, ok = QInputDialog.getText(self, "Open project", "SQLite file path or postgresql:// URL:")
        if ok and target.strip():
            self.open_project(target.strip())

    def open_project(self, target: str) -> MainWindow | None:
        """Open another project (file or PostgreSQL URL) in a new window for the same annotator.

        This window is closed (its jobs and workers stop) and its store disposed, so no
        connection to the old project stays open; the new window disposes the store it opened
        when it closes in turn. When the new project cannot be opened, or the expert keeps this
        window open (a job running, edits not saved), this one stays.
        """
        from storage import display_url, open_store

        store = None
        try:
            store = open_store(target)
            info = LabelService(store).ensure_annotator(self.session.annotator.name)
        except Exception as exc:  # noqa: BLE001 - any failure to open is shown, the current project stays open
            if store is not None:
                store.dispose()
            self.statusBar().showMessage(f"could not open {display_url(target)}: {exc}", 15_000)
            return None
        old_store = self.store
        replacement = type(self)(store, info)  # a window like this one (no import of its module)
        replacement.cockpit.owned_store = store
        replacement.show()
        if not self.close():
            # Kept open (its job goes on, or its edits are kept): the new window goes instead.
            replacement.close()
            replacement.deleteLater()
            return None
        # Deleted now, in the GUI thread: left to the garbage collector, the closed window's
        # widgets could be destroyed in whatever thread happens to collect them.
        self.deleteLater()
        old_store.dispose()
        return replacement

    def ask_link_audio(self) -> None:
        """Project ▸ Link audio…: pick the folder that holds the recordings, then link."""
        folder = QFileDialog.getExistingDirectory(self, "Folder with the recordings")
        if folder:
            self.link_audio(Path(folder))

    def link_audio(self, folder: Path | None = None) -> bool:
        """Find the recordings of clips without audio, by the same rule as `aglw media link`.

        The folder becomes a media root of each dataset it serves. The search runs as a job of
        the jobs panel (its dock is raised to show the progress; Cancel keeps the links found
        so far). When it ends, :meth:`link_ended` shows the summary and reloads the list and the
        clip under review. Returns whether the job started (not while another job runs); tests
        wait for ``cockpit.jobs.finished``.
        """
        from ui.cockpit.jobs import JobSpec
        from workbench.media import link_media

        store = self.store
        spec = JobSpec(LINK_JOB_NAME, lambda task: link_media(store, root=folder, task=task),
                       summary=lambda report: link_summary(report)[0], on_end=self.link_ended)
        jobs = self.cockpit.jobs
        if not jobs.start(spec):
            self.show_status(jobs.status.text())
            return False
        if jobs.running:
            self.cockpit.show("jobs")
            self.show_status(f"linking audio{f' from {folder}' if folder else ''}… (Cancel in the Jobs panel)")
        return True

    def link_ended(self, result: TaskResult) -> None:
        """The link job ended: the summary in plain text, and the list and current clip re-read."""
        if result.status == "failed":
            # The service's own words for a wrong folder or a dataset without media roots.
            text = str(result.error) if isinstance(result.error, AglwError) else result.message
            self._message(QMessageBox.Icon.Warning, "Link audio", text)
            return
        self.reload_rows()
        if self.detail is not None:
            self.open_clip(self.detail.clip_id)
        if result.status == "cancelled":
            self.show_status(result.message)  # the links found so far are stored: no dialog needed
            return
        lines = link_summary(result.value)
        self.show_status(lines[0])
        self._message(QMessageBox.Icon.Information, "Link audio", "\n".join(lines))
