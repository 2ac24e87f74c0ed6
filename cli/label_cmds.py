"""`aglw label` commands: expert labels through the same service the GUI uses.

Each command is one transaction; the acknowledgement is printed only after the
commit returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Optional

import typer

from cli.context import app_context, emit_json, show
from storage.errors import ConflictError
from workbench.errors import AglwError

if TYPE_CHECKING:
    from workbench.labels import AnnotatorInfo, LabelChange, LabelService

label_app = typer.Typer(help="Record expert labels (each edit is committed before it is acknowledged).")

_CLEAR = {"", "none", "null", "-"}


def _optional_text(value: Optional[str]) -> object:
    """CLI value → service value: absent = leave as is, 'none' = clear."""
    from workbench.labels import UNSET  # the store loads when a command runs, not at start-up

    if value is None:
        return UNSET
    return None if value.strip().lower() in _CLEAR else value.strip()


def _optional_choice(value: Optional[str], choices: tuple[object, ...], name: str) -> object:
    """As :func:`_optional_text`, and a value outside ``choices`` is a usage error (exit 2)."""
    from workbench.labels import UNSET

    text = _optional_text(value)
    if text is UNSET or text is None or text in choices:
        return text
    shown = ", ".join(str(c) for c in choices)
    raise typer.BadParameter(f"{value!r} is not one of: {shown} (or 'none' to clear)", param_hint=name)


def _optional_int(value: Optional[str], name: str, choices: tuple[int, ...] = ()) -> object:
    from workbench.labels import UNSET

    text = _optional_text(value)
    if text is UNSET or text is None:
        return text
    try:
        number = int(str(text))
    except ValueError:
        raise typer.BadParameter(f"must be an integer or 'none', got {value!r}", param_hint=name) from None
    if choices and number not in choices:
        shown = ", ".join(str(c) for c in choices)
        raise typer.BadParameter(f"{value!r} is not one of: {shown} (or 'none' to clear)", param_hint=name)
    return number


def _value(value: object) -> str:
    """A label value as a reader writes it down: none for empty, text as it is (no Python repr)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return f'"{value}"' if value == "" or value != value.strip() else value
    return str(value)


def _labelling(ctx: typer.Context) -> tuple[LabelService, AnnotatorInfo]:
    """The label service of the project and the annotator who labels (created on first use)."""
    from workbench.labels import LabelService

    app = app_context(ctx)
    service = LabelService(app.store())
    return service, service.ensure_annotator(app.annotator_name())


def _acknowledge(ctx: typer.Context, change: LabelChange, what: str) -> None:
    app = app_context(ctx)
    if app.json:
        emit_json(
            {
                "ok": True,
                "entity": change.entity,
                "clip_id": change.clip_id,
                "category_id": change.category_id,
                "old": change.old,
                "new": change.new,
                "version": change.version,
                "command_id": change.command_id,
            }
        )
    else:
        show(f"saved: {what} (version {change.version})")


_EXPECT_HELP = (
    "Only write if the stored label still has this version (0: none yet), as printed by the last "
    "save or `label history`; otherwise exit 1 with both values and change nothing."
)


@contextmanager
def _conflict_named(ctx: typer.Context, what: str) -> Iterator[None]:
    """Name the label (clip key, category) in a conflict's one-line message."""
    try:
        yield
    except ConflictError as exc:
        raise ConflictError(f"{what}: {exc}", stored=exc.stored, yours=exc.yours,
                            stored_version=exc.stored_version) from None


@label_app.command("set")
def label_set(
    ctx: typer.Context,
    clip: str = typer.Option(..., "--clip", help="Clip key, e.g. aporee_43130_49161."),
    category: str = typer.Option(..., "--category", help="AudioSet category id, e.g. /m/09x0r."),
    contribution: Optional[str] = typer.Option(None, "--contribution", help="0-3, or 'none' to clear."),
    effect: Optional[str] = typer.Option(None, "--effect", help="helped|misled|neutral, or 'none'."),
    polarity: Optional[str] = typer.Option(None, "--polarity", help="Per-clip polarity P|N|neutral, or 'none'."),
    expect_version: Optional[int] = typer.Option(None, "--expect-version", min=0, help=_EXPECT_HELP),
) -> None:
    """Record an expert's label for one category of one clip."""
    from workbench.labels import CONTRIBUTIONS, EFFECTS, POLARITIES
    from workbench.project import check_category_id

    service, annotator = _labelling(ctx)
    clip_id = service.clip_id_for_key(clip)
    category = check_category_id(service.store, category)
    with _conflict_named(ctx, f"clip {clip}, category {category}"):
        change = service.set_category_label(
            annotator.id,
            clip_id,
            category,
            contribution=_optional_int(contribution, "--contribution", CONTRIBUTIONS),
            effect=_optional_choice(effect, EFFECTS, "--effect"),
            polarity=_optional_choice(polarity, POLARITIES, "--polarity"),
            expected_version=expect_version,
        )
    from workbench.project import category_names

    name = category_names(service.store).get(category)
    fields = ", ".join(f"{field} {_value(value)}" for field, value in change.new.items())
    _acknowledge(ctx, change, f"{annotator.name}: {clip}, {name + ' (' + category + ')' if name else category}: {fields}")


@label_app.command("clip")
def label_clip(
    ctx: typer.Context,
    clip: str = typer.Option(..., "--clip", help="Clip key."),
    rating: Optional[str] = typer.Option(None, "--rating", help="1-5: how well could a careful listener place it."),
    decision: Optional[str] = typer.Option(None, "--decision", help="accept|reject|unsure, or 'none'."),
    note: Optional[str] = typer.Option(None, "--note", help="Free text note ('none' clears it)."),
    expect_version: Optional[int] = typer.Option(None, "--expect-version", min=0, help=_EXPECT_HELP),
) -> None:
    """Record an expert's judgment of a whole clip."""
    from workbench.labels import DECISIONS, RATINGS

    service, annotator = _labelling(ctx)
    clip_id = service.clip_id_for_key(clip)
    with _conflict_named(ctx, f"clip {clip}"):
        change = service.set_clip_label(
            annotator.id,
            clip_id,
            rating=_optional_int(rating, "--rating", RATINGS),
            decision=_optional_choice(decision, DECISIONS, "--decision"),
            note=_optional_text(note),
            expected_version=expect_version,
        )
    _acknowledge(ctx, change, f"{annotator.name}: {clip}: "
                 + ", ".join(f"{field} {_value(value)}" for field, value in change.new.items()))


@label_app.command("polarity")
def label_polarity(
    ctx: typer.Context,
    category: str = typer.Option(..., "--category", help="AudioSet category id."),
    polarity: str = typer.Option(..., "--polarity", help="P|N|neutral, or 'none' to return to the fitted one."),
    expect_version: Optional[int] = typer.Option(None, "--expect-version", min=0, help=_EXPECT_HELP),
) -> None:
    """Force a category's polarity across the pool (an expert override of the fit)."""
    from workbench.labels import POLARITIES, UNSET
    from workbench.project import check_category_id

    value = _optional_choice(polarity, POLARITIES, "--polarity")
    service, annotator = _labelling(ctx)
    category = check_category_id(service.store, category)
    with _conflict_named(ctx, f"category {category} polarity"):
        change = service.set_category_polarity(
            annotator.id, category, None if value is UNSET else value, expected_version=expect_version  # type: ignore[arg-type]
        )
    from workbench.project import category_names

    name = category_names(service.store).get(category)
    _acknowledge(ctx, change, f"{annotator.name}: {name + ' (' + category + ')' if name else category} "
                              f"polarity {_value(change.new['polarity'])}")


@label_app.command("history")
def label_history(
    ctx: typer.Context,
    clip: Optional[str] = typer.Option(None, "--clip", help="Only this clip."),
    mine: bool = typer.Option(False, "--mine", help="Only the current annotator's edits."),
) -> None:
    """Show the append-only label history (who, when, clip key, category name, old -> new).

    ``--annotator NAME`` (before or after the command) shows only that annotator's edits.
    """
    from workbench.labels import LabelService
    from workbench.project import category_names, clip_keys

    app = app_context(ctx)
    service = LabelService(app.store())
    annotator_id = None
    if mine or app.annotator:
        name = app.annotator_name()
        found = service.find_annotator(name)
        if found is None:
            known = ", ".join(a.name for a in service.list_annotators()) or "none yet"
            raise AglwError(f"no annotator named {name!r} in this project (annotators: {known})")
        annotator_id = found.id
    clip_id = service.clip_id_for_key(clip) if clip else None
    names = {a.id: a.name for a in service.list_annotators()}
    entries = service.history(annotator_id=annotator_id, clip_id=clip_id)
    keys = clip_keys(app.store(), {e.clip_id for e in entries if e.clip_id is not None})
    categories = category_names(app.store()) if any(e.category_id for e in entries) else {}
    rows = [
        {
            "at": e.at.isoformat(),
            "annotator": names.get(e.annotator_id, str(e.annotator_id)),
            "entity": e.entity,
            "clip_id": e.clip_id,
            "clip": keys.get(e.clip_id) if e.clip_id is not None else None,
            "category_id": e.category_id,
            "category": categories.get(e.category_id) if e.category_id else None,
            "field": e.field,
            "old": e.old_value,
            "new": e.new_value,
            "action": e.action,
            "command_id": e.command_id,
        }
        for e in entries
    ]
    # The version each label has now, beside its latest edit (what `--expect-version` takes).
    latest: dict[tuple, int] = {}
    for index, e in enumerate(entries):
        latest[(e.entity, e.annotator_id, e.clip_id, e.category_id)] = index
    for (entity, annotator, clip_id_, category_id), index in latest.items():
        rows[index]["current_version"] = service.stored_version(entity, annotator, clip_id_, category_id)
    if app.json:
        emit_json(rows)
        return
    for row in rows:
        category = ""
        if row["category_id"]:
            category = f" {row['category']} ({row['category_id']})" if row["category"] else f" {row['category_id']}"
        clip_text = f" {row['clip']}" if row["clip"] else ""
        version = f"  [now version {row['current_version']}]" if "current_version" in row else ""
        show(
            f"{row['at']}  {row['annotator']}  {row['entity']}{clip_text}{category} {row['field']}: "
            f"{_value(row['old'])} -> {_value(row['new'])} ({row['action']}){version}"
        )


def register(app: typer.Typer) -> None:
    """Add the `label` command group to the root app."""
    app.add_typer(label_app, name="label")
