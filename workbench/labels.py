"""Human labels: the one write path for expert edits (CLI and GUI alike).

Every change is one transaction that updates the annotator's own label row and
appends one :class:`storage.models.LabelHistory` row per changed field (the versioned write
every command uses: :func:`workbench.versioned_rows.write_versioned`). A call
returns only after the commit, so the caller may acknowledge the edit. Labels
are per annotator: nothing here ever writes another annotator's row.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from storage import Store
from storage.models import (
    Annotator,
    CategoryLabel,
    CategoryPolarity,
    Clip,
    ClipLabel,
    ErrorModeLabel,
    HumanGuess,
    LabelHistory,
    QualityOverrule,
)
from workbench.clip_ids import clip_id_for_key
from workbench.errors import InputError
from workbench.versioned_rows import INSERT_RETRIES, FieldHistory, write_versioned


class _Unset:
    """Marker for "leave this field as it is" (``None`` means "clear it")."""

    _instance: "_Unset | None" = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = _Unset()

CONTRIBUTIONS = (0, 1, 2, 3)
EFFECTS = ("helped", "misled", "neutral")
POLARITIES = ("P", "N", "neutral")
DECISIONS = ("accept", "reject", "unsure")
RATINGS = (1, 2, 3, 4, 5)
ROLES = ("expert", "adjudicator", "curator")


@dataclass(frozen=True)
class AnnotatorInfo:
    id: int
    name: str
    role: str
    pseudonym: str


@dataclass(frozen=True)
class LabelChange:
    """What one write changed: the fields' values before and after."""

    entity: str
    annotator_id: int
    clip_id: int | None
    category_id: str | None
    old: dict[str, Any]
    new: dict[str, Any]
    command_id: str
    version: int

    @property
    def changed(self) -> bool:
        return self.old != self.new


@dataclass(frozen=True)
class CategoryLabelView:
    annotator_id: int
    clip_id: int
    category_id: str
    contribution: int | None
    effect: str | None
    polarity: str | None
    version: int
    updated_at: datetime


@dataclass(frozen=True)
class ClipLabelView:
    annotator_id: int
    clip_id: int
    rating: int | None
    decision: str | None
    note: str | None
    quality_overruled: bool | None
    version: int
    updated_at: datetime


@dataclass(frozen=True)
class PolarityView:
    annotator_id: int
    category_id: str
    polarity: str | None
    version: int
    updated_at: datetime


@dataclass(frozen=True)
class HistoryEntry:
    id: int
    annotator_id: int
    entity: str
    clip_id: int | None
    category_id: str | None
    field: str
    old_value: Any
    new_value: Any
    command_id: str
    action: str
    at: datetime


@dataclass
class _Spec:
    """Which table an entity lives in and how its fields are validated."""

    model: type
    key_fields: tuple[str, ...]
    value_fields: dict[str, tuple[Any, ...] | None] = field(default_factory=dict)


_SPECS: dict[str, _Spec] = {
    "category_label": _Spec(
        CategoryLabel,
        ("annotator_id", "clip_id", "category_id"),
        {"contribution": CONTRIBUTIONS, "effect": EFFECTS, "polarity": POLARITIES},
    ),
    "clip_label": _Spec(
        ClipLabel,
        ("annotator_id", "clip_id"),
        {"rating": RATINGS, "decision": DECISIONS, "note": None, "quality_overruled": (True, False)},
    ),
    "category_polarity": _Spec(CategoryPolarity, ("annotator_id", "category_id"), {"polarity": POLARITIES}),
    # the flag name is the history row's category_id (an overrule is addressed by clip and flag)
    "quality_overrule": _Spec(QualityOverrule, ("annotator_id", "clip_id", "flag"),
                              {"overruled": (True, False), "note": None}),
}


def _validate(entity: str, values: dict[str, Any]) -> dict[str, Any]:
    spec = _SPECS[entity]
    clean: dict[str, Any] = {}
    for name, value in values.items():
        if value is UNSET:
            continue
        allowed = spec.value_fields[name]
        if value is not None and allowed is not None and value not in allowed:
            choices = ", ".join(str(a) for a in allowed)
            raise InputError(f"{name} must be one of {choices} (or empty), got {value!r}")
        if name == "note" and value is not None and not isinstance(value, str):
            raise InputError(f"note must be text, got {type(value).__name__}")
        clean[name] = value
    return clean


def _decode(value: str | None) -> Any:
    return None if value is None else json.loads(value)


# The fields that make a row a label: a row whose fields are all empty was undone (an undo writes
# the values back that were there before, and a first edit had none) and labels nothing.
LABEL_FIELDS: Final[dict[type, tuple[str, ...]]] = {
    CategoryLabel: ("contribution", "effect", "polarity"),
    ClipLabel: ("rating", "decision", "note"),
    ErrorModeLabel: ("modes", "note"),
    HumanGuess: ("latitude", "longitude"),
}


def labelled_pairs(session: Any, annotator_id: int | None = None) -> set[tuple[int, int]]:
    """(annotator id, clip id) of every clip an annotator has labelled: a stored, not undone,
    category label, clip judgment, error-mode tag or location guess.

    The one definition of "done" (study progress) and of "has labelled" (blind review).
    """
    from sqlalchemy import or_

    pairs: set[tuple[int, int]] = set()
    for model, fields in LABEL_FIELDS.items():
        query = select(model.annotator_id, model.clip_id).where(
            or_(*(col(getattr(model, name)).is_not(None) for name in fields)))
        if annotator_id is not None:
            query = query.where(model.annotator_id == annotator_id)
        pairs |= {(int(a), int(c)) for a, c in session.exec(query).all()}
    return pairs


# How long an edit made where a person waits (the GUI) waits for another writer's lock before
# it fails and is kept pending with a retry (seconds).
INTERACTIVE_WAIT_S = 1.5


class LabelService:
    """Reads and writes human labels of one project store.

    Parameters
    ----------
    store
        The project store. Each method is its own unit of work.
    """

    def __init__(self, store: Store, *, write_wait_s: float | None = None) -> None:
        self.store = store
        # How long a label write waits for another writer (None: the store's busy timeout);
        # the GUI passes a short wait so a locked project fails fast with a retry.
        self.write_wait_s = write_wait_s

    # ------------------------------------------------------------------ annotators

    def find_annotator(self, name: str) -> AnnotatorInfo | None:
        """The annotator called ``name``, or None; reads only (never adds one)."""
        with self.store.session() as s:
            found = s.exec(select(Annotator).where(Annotator.name == name.strip())).first()
        return None if found is None else _annotator_info(found)

    def ensure_annotator(self, name: str, role: str = "expert") -> AnnotatorInfo:
        """Return the annotator called ``name``, creating it (with a pseudonym) if new."""
        name = name.strip()
        if not name:
            raise InputError("annotator name is empty; pass --annotator NAME")
        if role not in ROLES:
            raise InputError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
        for _ in range(INSERT_RETRIES):
            with self.store.session() as s:
                found = s.exec(select(Annotator).where(Annotator.name == name)).first()
            if found is not None:
                return _annotator_info(found)
            try:
                with self.store.write(wait_s=self.write_wait_s) as s:
                    row = Annotator(name=name, role=role, pseudonym=f"annotator-{secrets.token_hex(4)}")
                    s.add(row)
                    s.flush()
                    info = _annotator_info(row)
                return info
            except IntegrityError:
                continue  # another process created it (or the pseudonym collided): read again
        raise InputError(f"could not create annotator {name!r}; try again")

    def list_annotators(self) -> list[AnnotatorInfo]:
        with self.store.session() as s:
            return [_annotator_info(a) for a in s.exec(select(Annotator).order_by(Annotator.id))]

    def clip_id_for_key(self, key: str) -> int:
        """The clip id of a dataset key (see :func:`clip_id_for_key`)."""
        return clip_id_for_key(self.store, key)

    # ------------------------------------------------------------------ writes

    def set_category_label(
        self,
        annotator_id: int,
        clip_id: int,
        category_id: str,
        *,
        contribution: Any = UNSET,
        effect: Any = UNSET,
        polarity: Any = UNSET,
        command_id: str | None = None,
        action: str = "do",
        expected_version: int | None = None,
    ) -> LabelChange:
        """Set an expert's contribution (0–3), effect and/or per-clip polarity for a category.

        ``expected_version`` (here and in every write) is the row version the edit was based on
        (0: no row yet); when the stored row has moved on, :class:`~storage.errors.ConflictError` is raised and
        nothing is written. None writes unconditionally.
        """
        if not category_id or not category_id.strip():
            raise InputError("category id is empty; pass an AudioSet id such as /m/09x0r")
        values = _validate(
            "category_label", {"contribution": contribution, "effect": effect, "polarity": polarity}
        )
        keys = {"annotator_id": annotator_id, "clip_id": clip_id, "category_id": category_id.strip()}
        return self._write("category_label", keys, values, command_id, action, expected_version)

    def set_clip_label(
        self,
        annotator_id: int,
        clip_id: int,
        *,
        rating: Any = UNSET,
        decision: Any = UNSET,
        note: Any = UNSET,
        quality_overruled: Any = UNSET,
        command_id: str | None = None,
        action: str = "do",
        expected_version: int | None = None,
    ) -> LabelChange:
        """Set an expert's rating (1–5), decision, note and/or quality overrule for a clip."""
        values = _validate(
            "clip_label",
            {"rating": rating, "decision": decision, "note": note, "quality_overruled": quality_overruled},
        )
        return self._write(
            "clip_label", {"annotator_id": annotator_id, "clip_id": clip_id}, values, command_id, action, expected_version
        )

    def set_category_polarity(
        self,
        annotator_id: int,
        category_id: str,
        polarity: str | None,
        *,
        command_id: str | None = None,
        action: str = "do",
        expected_version: int | None = None,
    ) -> LabelChange:
        """Force a category's polarity across the pool (``None`` removes the override)."""
        values = _validate("category_polarity", {"polarity": polarity})
        keys = {"annotator_id": annotator_id, "category_id": category_id}
        return self._write("category_polarity", keys, values, command_id, action, expected_version)

    def set_quality_overrule(
        self,
        annotator_id: int,
        clip_id: int,
        flag: str,
        *,
        overruled: Any = UNSET,
        note: Any = UNSET,
        command_id: str | None = None,
        action: str = "do",
        expected_version: int | None = None,
    ) -> LabelChange:
        """The annotator's vote on one quality flag of a clip: ``overruled`` True keeps the clip
        despite the flag, False says the flag stands, None withdraws the vote; with a note."""
        from workbench.audio.quality import QUALITY_FLAGS

        if flag not in QUALITY_FLAGS:
            raise InputError(f"quality flag must be one of {', '.join(QUALITY_FLAGS)}, got {flag!r}")
        values = _validate("quality_overrule", {"overruled": overruled, "note": note})
        keys = {"annotator_id": annotator_id, "clip_id": clip_id, "flag": flag}
        return self._write("quality_overrule", keys, values, command_id, action, expected_version)

    def quality_overrules(self, clip_id: int | None = None) -> list[dict[str, Any]]:
        """Every stored vote on a quality flag (optionally of one clip), with the annotator's name."""
        query = select(QualityOverrule, Annotator.name).join(Annotator, Annotator.id == QualityOverrule.annotator_id)
        if clip_id is not None:
            query = query.where(QualityOverrule.clip_id == clip_id)
        with self.store.session() as s:
            rows = s.exec(query.order_by(QualityOverrule.clip_id, QualityOverrule.flag, QualityOverrule.annotator_id))
            return [{"annotator_id": r.annotator_id, "annotator": name, "clip_id": r.clip_id, "flag": r.flag,
                     "overruled": r.overruled, "note": r.note, "version": r.version, "updated_at": r.updated_at}
                    for r, name in rows]

    def _write(
        self,
        entity: str,
        keys: dict[str, Any],
        values: dict[str, Any],
        command_id: str | None,
        action: str,
        expected_version: int | None = None,
    ) -> LabelChange:
        if not values:
            raise InputError("nothing to change: give at least one value")
        written = write_versioned(
            self.store, _SPECS[entity].model, keys, values, what=f"this {entity.replace('_', ' ')}",
            history=FieldHistory(entity, keys["annotator_id"], keys.get("clip_id"),
                                 keys.get("category_id", keys.get("flag"))),
            expected_version=expected_version, action=action, command_id=command_id, wait_s=self.write_wait_s,
            refs=((Annotator, keys["annotator_id"], "annotator"), (Clip, keys.get("clip_id"), "clip")),
        )
        return LabelChange(
            entity=entity,
            annotator_id=keys["annotator_id"],
            clip_id=keys.get("clip_id"),
            category_id=keys.get("category_id", keys.get("flag")),
            old=written.old,
            new=written.new,
            command_id=written.command_id,
            version=written.version,
        )

    # ------------------------------------------------------------------ reads

    def category_labels(self, clip_id: int | None = None, annotator_id: int | None = None) -> list[CategoryLabelView]:
        """Category labels, optionally for one clip and/or one annotator."""
        query = select(CategoryLabel)
        if clip_id is not None:
            query = query.where(CategoryLabel.clip_id == clip_id)
        if annotator_id is not None:
            query = query.where(CategoryLabel.annotator_id == annotator_id)
        with self.store.session() as s:
            rows = s.exec(query.order_by(CategoryLabel.clip_id, CategoryLabel.category_id, CategoryLabel.annotator_id))
            return [
                CategoryLabelView(
                    r.annotator_id, r.clip_id, r.category_id, r.contribution, r.effect, r.polarity, r.version, r.updated_at
                )
                for r in rows
            ]

    def clip_labels(self, clip_id: int | None = None, annotator_id: int | None = None) -> list[ClipLabelView]:
        """Clip labels, optionally for one clip and/or one annotator."""
        query = select(ClipLabel)
        if clip_id is not None:
            query = query.where(ClipLabel.clip_id == clip_id)
        if annotator_id is not None:
            query = query.where(ClipLabel.annotator_id == annotator_id)
        with self.store.session() as s:
            rows = s.exec(query.order_by(ClipLabel.clip_id, ClipLabel.annotator_id))
            return [
                ClipLabelView(
                    r.annotator_id, r.clip_id, r.rating, r.decision, r.note, r.quality_overruled, r.version, r.updated_at
                )
                for r in rows
            ]

    def category_polarities(self, annotator_id: int | None = None) -> list[PolarityView]:
        """Pool-wide category polarity overrides."""
        query = select(CategoryPolarity)
        if annotator_id is not None:
            query = query.where(CategoryPolarity.annotator_id == annotator_id)
        with self.store.session() as s:
            rows = s.exec(query.order_by(CategoryPolarity.category_id, CategoryPolarity.annotator_id))
            return [PolarityView(r.annotator_id, r.category_id, r.polarity, r.version, r.updated_at) for r in rows]

    def stored_version(self, entity: str, annotator_id: int, clip_id: int | None, category_id: str | None) -> int:
        """The version the label row of a history entry has now (0: no row), as ``--expect-version`` wants it.

        ``category_id`` is the history row's: the category, or the flag name of a quality overrule."""
        spec = _SPECS.get(entity)
        if spec is None:
            return 0
        values = {"annotator_id": annotator_id, "clip_id": clip_id, "category_id": category_id, "flag": category_id}
        query = select(spec.model.version)  # type: ignore[attr-defined]
        for name in spec.key_fields:
            query = query.where(getattr(spec.model, name) == values[name])
        with self.store.session() as s:
            version = s.exec(query).first()
        return int(version or 0)

    def history(
        self,
        *,
        annotator_id: int | None = None,
        clip_id: int | None = None,
        until: datetime | None = None,
    ) -> list[HistoryEntry]:
        """The append-only history in the order it was written (optionally up to ``until``)."""
        query = select(LabelHistory)
        if annotator_id is not None:
            query = query.where(LabelHistory.annotator_id == annotator_id)
        if clip_id is not None:
            query = query.where(LabelHistory.clip_id == clip_id)
        if until is not None:
            query = query.where(col(LabelHistory.at) <= until)
        with self.store.session() as s:
            rows = s.exec(query.order_by(col(LabelHistory.id)))
            return [
                HistoryEntry(
                    r.id or 0,
                    r.annotator_id,
                    r.entity,
                    r.clip_id,
                    r.category_id,
                    r.field,
                    _decode(r.old_value),
                    _decode(r.new_value),
                    r.command_id,
                    r.action,
                    r.at,
                )
                for r in rows
            ]

    def labels_as_of(self, when: datetime, annotator_id: int | None = None) -> dict[tuple, Any]:
        """Every label field's value at ``when``, replayed from the history.

        Returns a mapping ``(entity, annotator_id, clip_id, category_id, field) -> value``.
        """
        state: dict[tuple, Any] = {}
        for entry in self.history(annotator_id=annotator_id, until=when):
            state[(entry.entity, entry.annotator_id, entry.clip_id, entry.category_id, entry.field)] = entry.new_value
        return state


def _annotator_info(row: Annotator) -> AnnotatorInfo:
    assert row.id is not None
    return AnnotatorInfo(id=row.id, name=row.name, role=row.role, pseudonym=row.pseudonym)
