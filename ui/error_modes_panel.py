"""The error-mode column of the review view: AGL1K's taxonomy on the shown ALM answer, by keyboard.

The column is the "Error modes" tab of the Evidence panel, beside the reasoning it judges. With it
focused, each mode's letter toggles it (L, C, R, B, M, G, F; O for "other",
which asks for a note first, Enter saves it); Delete clears every mode.  Every change is a
:class:`~workbench.commands.SetErrorModes` command run through the window's stack, so it is
saved at once, kept in the label history and undone with the window's Undo (Ctrl+Z).  The
column shows only the annotator's own tags: nothing here can reveal another person's labels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, Qt, Signal, SignalInstance
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.commands import SetErrorModes
from workbench.labels import INTERACTIVE_WAIT_S
from workbench.studies.error_modes import MODES, TAXONOMY, ErrorModeService

if TYPE_CHECKING:
    from ui.session import ReviewSession

KEYS = {TAXONOMY[m][1]: m for m in MODES}


class ErrorModesPanel(QWidget):
    """A checklist of the taxonomy driven by single keys; ``editRequested(modes, note)`` asks for a change.

    ``note`` is None when the note is left as it is.
    """

    editRequested = Signal(object, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.modes: tuple[str, ...] = ()
        self.note: str | None = None
        self.version = 0
        self.enabled_for_answer = False
        self.title = QLabel("No ALM answer shown")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.title.setWordWrap(True)
        self.list = QListWidget()
        self.list.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # keys go to the panel, not the list
        for mode in MODES:
            name, key, meaning = TAXONOMY[mode]
            item = QListWidgetItem(f"[{key}] {name}")
            item.setToolTip(meaning)
            item.setData(Qt.ItemDataRole.UserRole, mode)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.list.itemClicked.connect(lambda item: self.toggle(item.data(Qt.ItemDataRole.UserRole)))
        self.note_edit = QLineEdit()
        self.note_edit.setPlaceholderText("note (needed with Other; Enter saves)")
        self.note_edit.returnPressed.connect(self._note_entered)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.title)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.note_edit)
        self._pending_other = False
        self.set_answer(None)

    # ------------------------------------------------------------------ state

    def set_answer(self, title: str | None, modes: tuple[str, ...] = (), note: str | None = None,
                   version: int = 0) -> None:
        """Show one ALM answer's own tags (``title`` None: no answer, the column is disabled)."""
        self.enabled_for_answer = title is not None
        self.title.setText(title or "No ALM answer shown")
        self.modes, self.note, self.version = tuple(modes), note, version
        self._pending_other = False
        for i in range(self.list.count()):
            item = self.list.item(i)
            chosen = item.data(Qt.ItemDataRole.UserRole) in self.modes
            item.setCheckState(Qt.CheckState.Checked if chosen else Qt.CheckState.Unchecked)
        if not self.note_edit.hasFocus():
            self.note_edit.setText(note or "")
        self.list.setEnabled(self.enabled_for_answer)
        self.note_edit.setEnabled(self.enabled_for_answer)

    def toggle(self, mode: str) -> None:
        """Add or remove one mode; "other" without a note first asks for the note."""
        if not self.enabled_for_answer:
            return
        if mode == "other" and mode not in self.modes and not (self.note or self.note_edit.text().strip()):
            self._pending_other = True
            self.note_edit.setFocus()
            return
        chosen = set(self.modes) ^ {mode}
        self.editRequested.emit([m for m in MODES if m in chosen], None)

    def clear(self) -> None:
        if self.enabled_for_answer and self.modes:
            self.editRequested.emit([], None)

    def _note_entered(self) -> None:
        if not self.enabled_for_answer:
            return
        text = self.note_edit.text().strip() or None
        chosen = set(self.modes) | ({"other"} if self._pending_other else set())
        self._pending_other = False
        self.editRequested.emit([m for m in MODES if m in chosen], text)
        self.setFocus()

    # ------------------------------------------------------------------ keys

    def event(self, event: QEvent) -> bool:  # noqa: D401 - Qt override
        # The window's single-key shortcuts (L loops, J/K step clips) must not take the column's keys.
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) and self._handles(event):
            event.accept()
            return True
        return super().event(event)

    def _handles(self, event: QKeyEvent) -> bool:
        if event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier & ~Qt.KeyboardModifier.ShiftModifier:
            return False
        return event.text().upper() in KEYS or event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if not self._handles(event):
            super().keyPressEvent(event)
            return
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.clear()
        else:
            self.toggle(KEYS[event.text().upper()])
        event.accept()


def install_error_modes(session: ReviewSession, evidence_tabs: QTabWidget,
                        alm_chosen: SignalInstance) -> ErrorModesPanel:
    """Add the error-mode column to the ``evidence_tabs`` and keep it on the session's shown ALM
    answer (``alm_chosen``: the Clip tab's choice of ALM); edits run through the session's stack."""
    panel = ErrorModesPanel()
    service = ErrorModeService(session.store, write_wait_s=INTERACTIVE_WAIT_S)
    # A tab of the Evidence panel, beside the reasoning it judges: a dock of its own (or a tab
    # group of docks) would raise the window's minimum size.
    scroller = QScrollArea()
    scroller.setWidgetResizable(True)
    scroller.setWidget(panel)
    evidence_tabs.addTab(scroller, "Error modes")

    def answer() -> tuple[int, int] | None:
        detail = session.detail
        if detail is None or getattr(detail, "alm_run_id", None) is None or detail.prediction is None:
            return None
        return detail.clip_id, detail.alm_run_id

    def refresh(*_: Any) -> None:
        current = answer()
        if current is None:
            panel.set_answer(None)
            return
        clip_id, alm_run_id = current
        detail = session.detail
        assert detail is not None and detail.prediction is not None  # answer() checked both
        own = service.labels(clip_id=clip_id, alm_run_id=alm_run_id, annotator_id=session.annotator.id)
        panel.set_answer(f"{detail.key} · {detail.prediction.model}", own[0].modes if own else (),
                         own[0].note if own else None, service.version(session.annotator.id, clip_id, alm_run_id))

    def edit(modes: list[str], note: str | None) -> None:
        current = answer()
        if current is None:
            return
        values: dict[str, Any] = {"modes": modes}
        if note is not None:
            values["note"] = note
        session.execute(SetErrorModes(service, session.annotator.id, current[0], current[1],
                                      base_version=panel.version, **values))

    panel.editRequested.connect(edit)
    session.clipShown.connect(refresh)
    alm_chosen.connect(refresh)
    session.stack.subscribe(refresh)
    refresh()
    return panel
