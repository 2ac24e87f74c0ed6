"""Reading back what the project holds (`clips list/show`, `judgments show`) and linking audio
(`media link`). Results on stdout; with --json exactly one JSON value."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from cli.context import app_context, emit_json, run_task, say, show

clips_app = typer.Typer(help="List and show the clips of the project.")
media_app = typer.Typer(help="Find the recordings of clips under the media roots.")
judgments_app = typer.Typer(help="Show what the LLM judges said.")

# How many keys a human summary lists before "… and N more" (JSON always lists all).
_SHOWN = 20


def _table(columns: list[str], rows: list[list[Any]]):  # type: ignore[no-untyped-def]
    """A rich table whose cells are data, never markup (a title "[b]x" prints as written)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(*columns, show_lines=False)
    for row in rows:
        table.add_row(*(Text("" if value is None else str(value)) for value in row))
    return table


def _quality_line(record: dict) -> str:
    """The quality metrics as a reader writes them down, with the flags the clip has now (the one
    answer, `workbench.audio.flags`) and, where the pool-relative flag was not raised, why."""
    from workbench.audio.quality import describe_flag
    from workbench.formatting import db, ratio, score

    q, flags, pool = record["quality"], record["quality_flags"], record["quality_pool"] or {}
    shown = f"flags: {'; '.join(describe_flag(f) for f in flags)}" if flags else "no quality flags"
    if pool.get("why_not"):
        shown += f" ({pool['why_not']})"
    return (f"quality: rms {db(q['rms_dbfs'])}, flatness {ratio(q['spectral_flatness'])}, "
            f"clipping {ratio(q['clipping_ratio'])}, ACI {score(q['aci'])}; {shown}")


@clips_app.command("list")
def clips_list(
    ctx: typer.Context,
    search: Optional[str] = typer.Option(None, "--search", help="Key, title or city contains this (any case)."),
    has_audio: Optional[bool] = typer.Option(
        None, "--has-audio/--no-audio", help="Only clips whose recording is (or is not) usable."
    ),
    has_prediction: Optional[str] = typer.Option(None, "--has-prediction", help="Only clips this ALM answered."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="At most this many clips."),
) -> None:
    """Clips with key, title, city, country and audio path (null when there is none)."""
    from workbench.project import list_clips

    app = app_context(ctx)
    rows = list_clips(app.store(), search=search, has_audio=has_audio, has_prediction=has_prediction, limit=limit)
    if app.json:
        emit_json(rows)
        return
    show(
        _table(
            ["key", "title", "city", "country", "audio"],
            [[r["key"], r["title"], r["city"], r["country"],
              r["audio_path"] or (f"missing (last known {r['last_known_audio_path']})"
                                  if r["audio"] == "missing" else "none")] for r in rows],
        ),
        min_width=160,
    )
    say(f"{len(rows)} clip(s)")


@clips_app.command("show")
def clips_show(ctx: typer.Context, key: str = typer.Argument(..., help="The clip's dataset key.")) -> None:
    """Everything about one clip: metadata, audio, quality, tags (names), predictions, judgments, labels."""
    from workbench.formatting import coordinate, count, km, probability, score
    from workbench.project import clip_record

    app = app_context(ctx)
    record = clip_record(app.store(), key)
    if app.json:
        emit_json(record)
        return
    audio = record["audio"]
    derived = " [" + ", ".join(record["derived"]) + " derived from the coordinates]" if record["derived"] else ""
    lines = [
        f"{record['key']}  ({record['dataset']})",
        f"title: {record['title'] or ''}",
        f"place: {record['city'] or '?'}, {record['country'] or '?'} ({record['continent'] or '?'})  "
        f"lat {coordinate(record['latitude'], '?')}, lon {coordinate(record['longitude'], '?')}{derived}",
        f"audio: {audio['path'] if audio['state'] == 'ok' else audio['message']}",
    ]
    credits = [f"{name} {record[name]}" for name in ("licence", "recordist", "url", "recorded_at") if record[name]]
    if credits:
        lines.append("source: " + "; ".join(credits))
    if record["extra"]:
        import json

        lines.append("extra: " + json.dumps(record["extra"], ensure_ascii=False, sort_keys=True))
    if audio["sample_rate"]:
        lines.append(f"       {audio['n_channels']} ch, {count(audio['sample_rate'])} Hz, {score(audio['duration_s'])} s, "
                     f"layout {audio['layout'] or 'unknown'}")
    if record["quality"]:
        lines.append(_quality_line(record))
    if record["tags"]:
        top = ", ".join(f"{t['name'] or t['id']} {probability(t['probability'])}" for t in record["tags"][:10])
        lines.append(f"tags ({record['tagger']['model']}): {top}")
    for p in record["predictions"]:
        error = "distance undefined" if p.get("error_km") is None else f"{km(p['error_km'])} from the clip"
        position = (f"{coordinate(p['predicted_latitude'], str(p['predicted_latitude']))}, "
                    f"{coordinate(p['predicted_longitude'], str(p['predicted_longitude']))}")
        lines.append(f"prediction {p['model']}: {p['predicted_city'] or '?'}, {p['predicted_country'] or '?'} "
                     f"({position}); {error}"
                     + ("; refused" if p.get("refused") else ""))
    for j in record["judgments"]:
        what = (f"{j['contribution']} {j['effect'] or ''}".strip() if j["status"] == "ok"
                else f"failed: {j['failure_reason']}")
        lines.append(f"judgment {j['judge']} on {j['alm']}: {j['category'] or j['category_id']}: {what}")
    for label in record["clip_labels"]:
        lines.append(f"label {label['annotator']}: rating {label['rating']}, decision {label['decision']}, "
                     f"note {label['note'] or ''} (version {label['version']})")
    for label in record["category_labels"]:
        lines.append(f"label {label['annotator']}: {label['category'] or label['category_id']}: "
                     f"contribution {label['contribution']}, effect {label['effect']} (version {label['version']})")
    for line in lines:
        show(line)


@judgments_app.command("show")
def judgments_show(
    ctx: typer.Context,
    clip: Optional[str] = typer.Option(None, "--clip", help="Only this clip (key)."),
    judge: Optional[str] = typer.Option(None, "--judge", help="Only this judge (name)."),
    alm: Optional[str] = typer.Option(None, "--alm", help="Only judgments of this ALM's reasoning."),
) -> None:
    """Stored judgments (each judge's latest per clip and ALM) with category names and status."""
    from workbench.project import judgment_records

    app = app_context(ctx)
    rows = judgment_records(app.store(), clip_key=clip, judge=judge, alm=alm)
    if app.json:
        emit_json(rows)
        return
    show(
        _table(
            ["clip", "alm", "judge", "category", "contribution", "effect", "status", "evidence / reason"],
            [[r["clip"], r["alm"], r["judge"], f"{r['category']} ({r['category_id']})" if r["category"] else r["category_id"],
              r["contribution"], r["effect"], r["status"],
              r["evidence"] if r["status"] == "ok" else r["failure_reason"]] for r in rows],
        ),
        min_width=200,
    )
    say(f"{len(rows)} judgment(s)")


@media_app.command("link")
def media_link(
    ctx: typer.Context,
    root: Optional[Path] = typer.Option(
        None, "--root", help="Also search this folder (it becomes a media root of each dataset it serves)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Report what would be linked; change nothing."),
) -> None:
    """Find the audio of clips that have none (or whose file moved) under the media roots.

    Looks for the stored path, the dataset's audio path (`<mp3name>`, `<key>/<mp3name>`), a file
    of that name anywhere below a root, then `<key>.<audio extension>`. A clip matching two
    different files is reported as ambiguous and left unlinked.
    """
    from workbench.media import link_media

    app = app_context(ctx)
    store = app.store()
    report = run_task("linking media", lambda task: link_media(store, root=root, dry_run=dry_run, task=task)).value
    if app.json:
        emit_json(report.as_dict())
        return
    verb = "would link" if dry_run else "linked"
    show(f"{verb} {len(report.linked)}, already linked {report.already}, missing {len(report.missing)}, "
         f"ambiguous {len(report.ambiguous)}")
    for entry in report.linked[:_SHOWN]:
        show(f"  {verb}: {entry['key']} -> {entry['path']}")
    for entry in report.ambiguous[:_SHOWN]:
        show(f"  ambiguous: {entry['key']}: {' | '.join(entry['candidates'])}")
    for entry in report.missing[:_SHOWN]:
        where = f" (last known {entry['last_known']})" if entry["last_known"] else ""
        show(f"  missing: {entry['key']} {entry['mp3name'] or ''}{where}")
    hidden = max(0, len(report.linked) - _SHOWN) + max(0, len(report.ambiguous) - _SHOWN) + max(0, len(report.missing) - _SHOWN)
    if hidden:
        say(f"{hidden} more line(s) not shown; --json lists every clip")
    for added in report.added_roots:
        say(f"{'would add' if dry_run else 'added'} media root {added['path']} to dataset {added['dataset']}")
    if dry_run:
        say("dry run: nothing was changed")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.add_typer(clips_app, name="clips")
    app.add_typer(media_app, name="media")
    app.add_typer(judgments_app, name="judgments")

