"""`aglw quality overrule|restore`: the annotator's vote on one quality flag of a clip.

Curation-model.md section 1: every flag is shown with its value and a curator can overrule it.
The vote is a label like the others: per annotator, versioned (``--expect-version``), in the
label history (entity ``quality_overrule``, the flag name in the category column), resolved
across annotators like every clip vote; ``select`` reads it as it is now.
"""

from __future__ import annotations

from typing import Any, Optional

import typer

from cli.context import app_context, emit_json, show

_EXPECT_HELP = "Only write if the stored vote still has this version (0: none yet); otherwise exit 1, change nothing."


def _flag_option() -> typer.models.OptionInfo:
    return typer.Option(..., "--flag", help="low_level | flat_spectrum | clipping | low_complexity.")


def _vote(ctx: typer.Context, clip: str, flag: str, overruled: bool, note: Optional[str],
          expect_version: Optional[int]) -> None:
    from cli.context import check_choice
    from workbench.audio.quality import QUALITY_FLAGS
    from workbench.labels import UNSET, LabelService

    check_choice(flag, QUALITY_FLAGS, "--flag")
    app = app_context(ctx)
    service = LabelService(app.store())
    clip_id = service.clip_id_for_key(clip)
    if overruled:
        _check_flag_raised(app.store(), clip, clip_id, flag)
    annotator = service.ensure_annotator(app.annotator_name())
    change = service.set_quality_overrule(
        annotator.id, clip_id, flag, overruled=overruled,
        note=UNSET if note is None else (note.strip() or None), expected_version=expect_version)
    if app.json:
        emit_json({"ok": True, "clip": clip, "clip_id": clip_id, "flag": flag, "annotator": annotator.name,
                   "old": change.old, "new": change.new, "version": change.version,
                   "command_id": change.command_id})
    else:
        verb = "overruled" if overruled else "restored (the flag stands)"
        show(f"saved: {annotator.name}: {clip} {flag} {verb} (version {change.version})")


def _check_flag_raised(store: Any, clip: str, clip_id: int, flag: str) -> None:
    """Refuse an overrule of a flag the clip does not have now (its flags come from their one owner,
    workbench/audio/flags.py): such a vote would be saved and count for nothing."""
    from workbench.audio.flags import clip_quality_flags_now
    from workbench.errors import InputError

    raised = [f["flag"] for f in clip_quality_flags_now(store, clip_id)]
    if flag not in raised:
        raise InputError(
            f"clip {clip} has no {flag} flag (its quality flags now: {', '.join(raised) or 'none'}); "
            "overrule a flag it has (`aglw clips show` lists them). Nothing was saved."
        )


def register(app: typer.Typer) -> None:
    """Add the ``quality`` command group to the root app."""
    quality = typer.Typer(help="Overrule or restore a clip's quality flag (per annotator, versioned, in the label history).",
                          no_args_is_help=True)
    app.add_typer(quality, name="quality")

    @quality.command("overrule")
    def overrule_cmd(
        ctx: typer.Context,
        clip: str = typer.Option(..., "--clip", help="Clip key."),
        flag: str = _flag_option(),
        note: Optional[str] = typer.Option(None, "--note", help="Why the clip is kept despite the flag."),
        expect_version: Optional[int] = typer.Option(None, "--expect-version", min=0, help=_EXPECT_HELP),
    ) -> None:
        """Keep a clip despite one of its quality flags (your vote; `select` respects it)."""
        _vote(ctx, clip, flag, True, note, expect_version)

    @quality.command("restore")
    def restore_cmd(
        ctx: typer.Context,
        clip: str = typer.Option(..., "--clip", help="Clip key."),
        flag: str = _flag_option(),
        note: Optional[str] = typer.Option(None, "--note", help="Why the flag stands."),
        expect_version: Optional[int] = typer.Option(None, "--expect-version", min=0, help=_EXPECT_HELP),
    ) -> None:
        """Withdraw an overrule: your vote says the flag stands."""
        _vote(ctx, clip, flag, False, note, expect_version)
