"""The one write of a versioned row with its history, behind every undoable command.

A command (:mod:`workbench.commands`) persists through a service method — a label, an error-mode
tag, a location guess, a spatial event — and each of those writes is the same loop: in one
:meth:`storage.Store.write` transaction, read the row with a write lock, refuse the write with
:class:`~storage.errors.ConflictError` when its version is not the one the edit was based on,
change the fields, bump the version and append ``LabelHistory`` rows. :func:`write_versioned`
is that loop; the services say only which row, which values, and how the history names it.
:func:`write_row` is the same write inside a transaction the caller holds (several rows, one
all-or-nothing unit).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from storage import Store
from storage.errors import ConflictError
from storage.models import LabelHistory, utcnow
from workbench.errors import InputError

T = TypeVar("T")

ACTIONS = ("do", "undo", "redo")
# How often a write whose insert lost a race for the same key is retried.
INSERT_RETRIES = 5

# (row after the write, old values, new values, command id, action) -> the history rows to append
HistoryRows = Callable[[Any, dict[str, Any], dict[str, Any], str, str], Iterable[LabelHistory]]
# (row before the change, values asked for) -> the values to set (validated against the row)
Prepare = Callable[[Any, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class RowWrite(Generic[T]):
    """What one versioned write did (``row`` is detached, its attributes still readable)."""

    row: T
    old: dict[str, Any]  # the written fields' values before (None for a new row)
    new: dict[str, Any]  # and after
    version: int
    command_id: str


def encode(value: Any) -> str | None:
    """A value as the history stores it (JSON; None stays None)."""
    return None if value is None else json.dumps(value, ensure_ascii=False)


def describe_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{name}={'empty' if value is None else value!r}" for name, value in values.items())


@dataclass(frozen=True)
class FieldHistory:
    """History as one row per written field, under ``entity`` and the row's annotator/clip/category.

    A field a new edit ("do") leaves as it was gets no row; undo and redo always record theirs.
    """

    entity: str
    annotator_id: int
    clip_id: int | None = None
    category_id: str | None = None

    def __call__(self, row: Any, old: dict[str, Any], new: dict[str, Any], command_id: str,
                 action: str) -> list[LabelHistory]:
        return [
            LabelHistory(
                annotator_id=self.annotator_id, entity=self.entity, clip_id=self.clip_id,
                category_id=self.category_id, field=name, old_value=encode(old[name]), new_value=encode(value),
                command_id=command_id, action=action, at=row.updated_at,
            )
            for name, value in new.items()
            if not (old[name] == value and action == "do")
        ]


def require(s: Session, *refs: tuple[type, Any, str]) -> None:
    """Raise InputError naming the first ``(model, id, what)`` whose row does not exist (None: not asked)."""
    for model, key, what in refs:
        if key is not None and s.get(model, key) is None:
            raise InputError(f"unknown {what} id {key}")


def write_versioned(
    store: Store,
    model: type,
    keys: dict[str, Any],
    values: dict[str, Any],
    *,
    what: str,
    history: HistoryRows,
    expected_version: int | None = None,
    action: str = "do",
    command_id: str | None = None,
    wait_s: float | None = None,
    refs: tuple[tuple[type, Any, str], ...] = (),
    prepare: Prepare | None = None,
    missing: str | None = None,
) -> RowWrite[Any]:
    """Write ``values`` into the ``model`` row found by ``keys``, version-checked, with history.

    One transaction: the ``refs`` must exist (:func:`require`); the row is read with a write
    lock; when ``expected_version`` (the version the edit was based on, 0: no row yet; None:
    unchecked) is not the stored one, :class:`ConflictError` carries both sides and nothing is
    written. Otherwise the row (created from ``keys`` when absent, unless ``missing`` is the
    error to raise then) takes the values ``prepare`` returns (default: ``values``), its
    version goes up by one, and the rows ``history`` builds are appended. An insert that lost a
    race for the same key (two processes) is retried: the row exists then, and is updated.

    ``what`` names the row in the conflict message ("this guess").
    """
    command_id = command_id or uuid.uuid4().hex
    for attempt in range(INSERT_RETRIES):
        try:
            with store.write(wait_s=wait_s) as s:
                require(s, *refs)
                return write_row(s, model, keys, values, what=what, history=history,
                                 expected_version=expected_version, action=action, command_id=command_id,
                                 prepare=prepare, missing=missing)
        except IntegrityError:
            if attempt == INSERT_RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def write_row(s: Session, model: type, keys: dict[str, Any], values: dict[str, Any], *, what: str,
              history: HistoryRows, command_id: str, expected_version: int | None = None, action: str = "do",
              prepare: Prepare | None = None, missing: str | None = None) -> RowWrite[Any]:
    """:func:`write_versioned`'s write of one row, inside the transaction ``s`` the caller holds.

    For writes of several rows that stand or fall together (an import replacing an annotator's
    events, under one ``command_id``): each row gets the version check, version bump and
    history rows a write of its own gives, and the caller's transaction makes them all or
    nothing. An insert that loses a race fails the caller's transaction (no retry here).
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown history action {action!r}")
    query = select(model)
    for name, value in keys.items():
        query = query.where(getattr(model, name) == value)
    # FOR UPDATE (PostgreSQL) / the write lock taken by BEGIN IMMEDIATE (SQLite): the version
    # read here cannot change before this transaction commits.
    row = s.exec(query.with_for_update()).first()
    if row is None and missing is not None:
        raise InputError(missing)
    stored_version = 0 if row is None else (row.version or 0)
    if expected_version is not None and stored_version != expected_version:
        stored = {name: (None if row is None else getattr(row, name)) for name in values}
        when = "" if row is None else f" at {row.updated_at:%Y-%m-%d %H:%M:%S}"
        raise ConflictError(
            f"{action} refused: {what} was changed elsewhere since it was read "
            f"(version {expected_version}, now {stored_version}{when}); stored {describe_values(stored)}, "
            f"yours {describe_values(values)}. Nothing was overwritten; reload to see the stored value",
            stored=stored, yours=dict(values), stored_version=stored_version,
        )
    if row is None:
        row = model(**keys, version=0)
        old = {name: None for name in values}
    else:
        old = {name: getattr(row, name) for name in values}
    for name, value in (values if prepare is None else prepare(row, values)).items():
        setattr(row, name, value)
    row.version = (row.version or 0) + 1
    row.updated_at = utcnow()
    s.add(row)
    new = {name: getattr(row, name) for name in values}
    s.add_all(list(history(row, old, new, command_id, action)))
    s.flush()
    return RowWrite(row, old, new, int(row.version), command_id)
