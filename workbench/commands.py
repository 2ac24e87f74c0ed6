"""Edits as commands with undo/redo (house rule 1), shared by the GUI and the CLI.

A command persists its change immediately, in its own transaction, through a service
(:class:`workbench.labels.LabelService`, the error-mode, guess and event services) whose write is
the one versioned write of this module's helper :mod:`workbench.versioned_rows`: read the row,
check its version (:class:`~storage.errors.ConflictError`), write the next version and its
history rows. A new undoable edit adds a service method on that helper and a
:class:`VersionedCommand` here; neither loop is written again. :class:`CommandStack` records executed
commands for undo/redo; a write that fails (locked or read-only database, full
disk) leaves the command *pending* so the user can retry it — the edit is never
silently dropped. An undo or redo whose write fails is kept pending the same way: a
retry performs the undo (or redo) that was asked for, then the history moves.
"""

from __future__ import annotations

import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from storage.errors import ConflictError, StoreError
from workbench.errors import AglwError
from workbench.labels import LabelChange, LabelService

log = logging.getLogger(__name__)

# Errors that mean "the store could not take the write now"; the command stays pending.
WRITE_ERRORS: tuple[type[BaseException], ...] = (SQLAlchemyError, StoreError, OSError)


class WriteFailed(AglwError):
    """A command could not be persisted; it is kept pending for a retry."""

    def __init__(self, command: "Command", cause: BaseException, action: str = "do") -> None:
        self.command = command
        self.cause = cause
        self.action = action
        verb, what = {"do": ("save", "edit"), "undo": ("undo", "undo"), "redo": ("redo", "redo")}[action]
        super().__init__(f"could not {verb} '{command.description}': {_short(cause)} — the {what} is kept; retry")


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.splitlines()[0] if text else type(exc).__name__


class Command(ABC):
    """One user edit. ``execute`` applies it (first time or redo), ``undo`` reverts it."""

    description: str = "edit"
    # What the edit writes, for the stack's version checks and the views' refresh: the label row
    # (None: no versioned row), its version as this command last left it, and the clip it
    # touches (None: pool-wide, e.g. a forced polarity).
    row_key: tuple[Any, ...] | None = None
    version: int | None = None
    clip_id: int | None = None

    def __init__(self) -> None:
        self.command_id = uuid.uuid4().hex
        self.executed = False

    @abstractmethod
    def execute(self) -> None:
        """Apply (or re-apply) the edit; persists before returning."""

    @abstractmethod
    def undo(self) -> None:
        """Restore the values that were there before; persists before returning."""


class VersionedCommand(Command):
    """Shared mechanics: remember the old values on first execution, write them back on undo.

    Every write is version-checked (optimistic concurrency): the first one against
    ``base_version``, the row version the person saw (None: unchecked, as a one-off CLI edit),
    each undo and redo against the version this command itself left. When another window,
    process or annotator changed the row in between, the write raises
    :class:`~storage.errors.ConflictError` and nothing is overwritten.
    """

    def __init__(self, service: Any, values: dict[str, Any], base_version: int | None = None) -> None:
        super().__init__()
        self.service = service
        self.values = dict(values)
        self.previous: dict[str, Any] | None = None
        self.version = base_version

    @abstractmethod
    def _write(self, values: dict[str, Any], action: str, expected_version: int | None) -> LabelChange: ...

    def execute(self) -> None:
        change = self._write(self.values, "redo" if self.executed else "do", self.version)
        if self.previous is None:
            self.previous = change.old
        self.version = change.version
        self.executed = True

    def undo(self) -> None:
        if self.previous is None:
            raise RuntimeError("cannot undo a command that never ran")
        self.version = self._write(self.previous, "undo", self.version).version


class SetCategoryLabel(VersionedCommand):
    """Set an expert's contribution / effect / per-clip polarity for one category of a clip."""

    def __init__(
        self, service: LabelService, annotator_id: int, clip_id: int, category_id: str,
        base_version: int | None = None, **values: Any,
    ) -> None:
        super().__init__(service, values, base_version)
        self.annotator_id, self.clip_id, self.category_id = annotator_id, clip_id, category_id
        self.row_key = ("category_label", annotator_id, clip_id, category_id)
        fields = ", ".join(f"{k}={v}" for k, v in values.items())
        self.description = f"set {fields} for {category_id}"

    def _write(self, values: dict[str, Any], action: str, expected_version: int | None) -> LabelChange:
        return self.service.set_category_label(
            self.annotator_id, self.clip_id, self.category_id, command_id=self.command_id, action=action,
            expected_version=expected_version, **values,
        )


class SetClipLabel(VersionedCommand):
    """Set an expert's rating / decision / note / quality overrule for a clip."""

    def __init__(
        self, service: LabelService, annotator_id: int, clip_id: int, base_version: int | None = None, **values: Any
    ) -> None:
        super().__init__(service, values, base_version)
        self.annotator_id, self.clip_id = annotator_id, clip_id
        self.row_key = ("clip_label", annotator_id, clip_id)
        self.description = "set " + ", ".join(f"{k}" for k in values) + " of clip"

    def _write(self, values: dict[str, Any], action: str, expected_version: int | None) -> LabelChange:
        return self.service.set_clip_label(
            self.annotator_id, self.clip_id, command_id=self.command_id, action=action,
            expected_version=expected_version, **values,
        )


class SetQualityOverrule(VersionedCommand):
    """Overrule a clip's quality flag (``overruled=True``), say it stands (False) or withdraw (None)."""

    def __init__(self, service: LabelService, annotator_id: int, clip_id: int, flag: str,
                 base_version: int | None = None, **values: Any) -> None:
        super().__init__(service, values, base_version)
        self.annotator_id, self.clip_id, self.flag = annotator_id, clip_id, flag
        self.row_key = ("quality_overrule", annotator_id, clip_id, flag)
        verb = {True: "overrule", False: "keep", None: "withdraw the vote on"}.get(values.get("overruled"), "note")
        self.description = f"{verb} the {flag} flag"

    def _write(self, values: dict[str, Any], action: str, expected_version: int | None) -> LabelChange:
        return self.service.set_quality_overrule(
            self.annotator_id, self.clip_id, self.flag, command_id=self.command_id, action=action,
            expected_version=expected_version, **values,
        )


class SetCategoryPolarity(VersionedCommand):
    """Force a category's polarity (P / N / neutral, or ``None`` to remove the override)."""

    def __init__(
        self, service: LabelService, annotator_id: int, category_id: str, polarity: str | None,
        base_version: int | None = None,
    ) -> None:
        super().__init__(service, {"polarity": polarity}, base_version)
        self.annotator_id, self.category_id = annotator_id, category_id
        self.row_key = ("category_polarity", annotator_id, category_id)
        self.description = f"force {category_id} to {polarity or 'fitted'}"

    def _write(self, values: dict[str, Any], action: str, expected_version: int | None) -> LabelChange:
        return self.service.set_category_polarity(
            self.annotator_id, self.category_id, values["polarity"], command_id=self.command_id, action=action,
            expected_version=expected_version,
        )


class SetErrorModes(VersionedCommand):
    """Set an expert's error modes (AGL1K's taxonomy) and/or note on one ALM answer (clip × ALM run).

    ``service`` is a :class:`workbench.studies.error_modes.ErrorModeService`; ``modes`` a list of
    codes, None or [] to clear.
    """

    def __init__(
        self, service: Any, annotator_id: int, clip_id: int, alm_run_id: int, base_version: int | None = None,
        **values: Any,
    ) -> None:
        super().__init__(service, values, base_version)
        self.annotator_id, self.clip_id, self.alm_run_id = annotator_id, clip_id, alm_run_id
        self.row_key = ("error_mode_label", annotator_id, clip_id, alm_run_id)
        shown = values.get("modes")
        self.description = "set error modes " + (", ".join(shown) if shown else "none") if "modes" in values \
            else "set error-mode note"

    def _write(self, values: dict[str, Any], action: str, expected_version: int | None) -> LabelChange:
        return self.service.set_error_modes(
            self.annotator_id, self.clip_id, self.alm_run_id, command_id=self.command_id, action=action,
            expected_version=expected_version, **values,
        )


class SetHumanGuess(VersionedCommand):
    """Set an annotator's blind location guess of a clip (``latitude``, ``longitude``, ``confidence``...).

    ``service`` is a :class:`workbench.studies.localizers.GuessService`.
    """

    def __init__(self, service: Any, annotator_id: int, clip_id: int, base_version: int | None = None,
                 **values: Any) -> None:
        super().__init__(service, values, base_version)
        self.annotator_id, self.clip_id = annotator_id, clip_id
        self.row_key = ("human_guess", annotator_id, clip_id)
        self.description = "set location guess (" + ", ".join(values) + ")"

    def _write(self, values: dict[str, Any], action: str, expected_version: int | None) -> LabelChange:
        return self.service.set_guess(self.annotator_id, self.clip_id, command_id=self.command_id, action=action,
                                      expected_version=expected_version, **values)


class CommandStack:
    """Undo/redo history of executed commands plus the edits still waiting to be saved."""

    def __init__(self) -> None:
        self._done: list[Command] = []
        self._undone: list[Command] = []
        self.pending: list[Command] = []
        self._pending_actions: dict[str, str] = {}  # command_id -> "undo" / "redo" ("do" when absent)
        self.last_error: str | None = None
        self._listeners: list[Callable[[], None]] = []
        self._row_versions: dict[tuple[Any, ...], int | None] = {}  # label row -> version this stack left

    # observers (the GUI refreshes its undo actions and error banner from these)
    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` after every change of the stack; returns an unsubscribe function."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback)

    def _notify(self) -> None:
        for callback in list(self._listeners):
            callback()

    @property
    def can_undo(self) -> bool:
        return bool(self._done) and not self.pending

    @property
    def can_redo(self) -> bool:
        return bool(self._undone) and not self.pending

    @property
    def undo_text(self) -> str | None:
        return self._done[-1].description if self._done else None

    @property
    def redo_text(self) -> str | None:
        return self._undone[-1].description if self._undone else None

    def push(self, command: Command) -> None:
        """Execute and record ``command``; on a failed write keep it pending and raise WriteFailed."""
        if self.pending:
            # Order matters: a new edit must not overtake an unsaved earlier one.
            self._keep(command, "do")
            self.last_error = "earlier edits are not saved yet; retry first"
            self._notify()
            raise WriteFailed(command, StoreError(self.last_error))
        self._run(command, "do")
        self._settle(command, "do")

    def undo(self) -> Command | None:
        """Undo the last command (persisted); returns it, or None when there is nothing to undo.

        A failed write keeps the undo pending (raises WriteFailed); :meth:`retry_pending` does it.
        """
        if not self.can_undo:
            return None
        command = self._done[-1]
        self._run(command, "undo")
        self._settle(command, "undo")
        return command

    def redo(self) -> Command | None:
        """Redo the last undone command (persisted); a failed write keeps it pending like undo."""
        if not self.can_redo:
            return None
        command = self._undone[-1]
        self._run(command, "redo")
        self._settle(command, "redo")
        return command

    def pending_action(self, command: Command) -> str:
        """What a pending command waits for: ``do`` (a new edit), ``undo`` or ``redo``."""
        return self._pending_actions.get(command.command_id, "do")

    def retry_pending(self) -> int:
        """Try to save the pending edits (and undos/redos) in order; returns how many were saved."""
        saved = 0
        while self.pending:
            command = self.pending[0]
            action = self.pending_action(command)
            try:
                self._attempt(command, action)
            except ConflictError:
                # The pending edit is based on a row that has moved on: drop it, let the caller show both.
                self.pending.pop(0)
                self._pending_actions.pop(command.command_id, None)
                self._notify()
                raise
            except WRITE_ERRORS as exc:
                self.last_error = _short(exc)
                self._notify()
                raise WriteFailed(command, exc, action) from exc
            self.pending.pop(0)
            self._pending_actions.pop(command.command_id, None)
            self._settle(command, action, notify=False)
            saved += 1
        self.last_error = None
        self._notify()
        return saved

    def _keep(self, command: Command, action: str) -> None:
        self.pending.append(command)
        self._pending_actions[command.command_id] = action

    def _settle(self, command: Command, action: str, *, notify: bool = True) -> None:
        """Move ``command`` in the history once its ``action`` is persisted."""
        if action == "do":
            self._done.append(command)
            self._undone.clear()
        elif action == "undo":
            self._done.remove(command)
            self._undone.append(command)
        else:
            self._undone.remove(command)
            self._done.append(command)
        if notify:
            self._notify()

    def _attempt(self, command: Command, action: str) -> None:
        """One write of ``command``, version-checked against what this stack last left on its row.

        Several commands of one stack may edit the same row (contribution, then effect): an undo
        or redo expects the version the stack's latest write left, not the one its own first
        write left. A new edit ("do") keeps the version the person saw."""
        key = command.row_key
        if key is not None and action != "do" and key in self._row_versions:
            command.version = self._row_versions[key]
        (command.undo if action == "undo" else command.execute)()
        if key is not None:
            self._row_versions[key] = command.version

    def _run(self, command: Command, action: str) -> None:
        try:
            self._attempt(command, action)
        except ConflictError as exc:
            # Not a write to retry: the row moved on. Nothing was written and the history is
            # unchanged; the person sees both values and decides.
            self.last_error = None
            self._notify()
            raise exc
        except WRITE_ERRORS as exc:
            log.warning("write failed for %s (%s): %s", command.description, action, _short(exc))
            self.last_error = _short(exc)
            self._keep(command, action)
            self._notify()
            raise WriteFailed(command, exc, action) from exc
        self.last_error = None
