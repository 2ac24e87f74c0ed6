"""`aglw study web / invite / participants`: the researcher's side of a web study (design/web-study.md).

Registered into the ``study`` group by :mod:`cli.study_cmds` (its own module to keep that file
one job). Serving the page is ``aglw serve`` (cli/web_cmds.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import typer

from cli.context import app_context, check_choice, emit_json, show, usage_error
from workbench.errors import AglwError

DEFAULT_BASE_URL = "http://127.0.0.1:8765"
MAX_LISTED = 20  # clips left out listed in the text output (a big dataset without audio would scroll away)
# Prolific's placeholders: the panel fills them in for each participant.
PROLIFIC_QUERY = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def _keys(text: str | None) -> list[str]:
    return [k.strip() for k in (text or "").split(",") if k.strip()]


def _must_hear(text: str) -> dict[str, float]:
    """``--must-hear 20`` (seconds) or ``--must-hear 50%`` (share of each clip), as the study's options."""
    value = text.strip()
    share = value.endswith("%")
    try:
        number = float(value.removesuffix("%")) if value.removesuffix("%").strip().isascii() else float("nan")
    except ValueError:
        number = float("nan")
    if share:
        if not 0 < number <= 100:
            raise usage_error(f"{text!r}: give a share above 0% and at most 100%", "--must-hear")
        return {"must_hear_share": number / 100}
    from workbench.studies.web_study import MAX_MUST_HEAR_S

    if not 0 < number <= MAX_MUST_HEAR_S:
        raise usage_error(f"{text!r}: give seconds (1 to {MAX_MUST_HEAR_S:.0f}) or a share such as 50%", "--must-hear")
    return {"must_hear_s": number}


def register(study: typer.Typer) -> None:
    """Add ``web``, ``invite`` and ``participants`` to the ``study`` group."""

    @study.command("web")
    def web_cmd(
        ctx: typer.Context,
        name: str = typer.Argument(..., help="Name of the new web study (letters, digits, '.', '_', '-')."),
        selection: Optional[str] = typer.Option(None, "--selection", help="A stored selection's id, or 'latest'."),
        clips: Optional[str] = typer.Option(None, "--clips", help="Comma-separated clip keys, or 'all'."),
        mode: str = typer.Option("study", "--mode", help="study (blind) | game (reveals after each stored guess)."),
        per_participant: int = typer.Option(20, "--per-participant", help="Clips each participant guesses."),
        target_per_clip: int = typer.Option(5, "--target-per-clip", help="Guesses each clip should collect."),
        headphone_check: str = typer.Option("record", "--headphone-check",
                                            help="screen (ends on a fail) | record (kept for the rules) | off."),
        attention: Optional[str] = typer.Option(None, "--attention", help="Comma-separated keys of attention clips."),
        consent: Optional[Path] = typer.Option(None, "--consent", help="The consent text (a Markdown file)."),
        practice: Optional[str] = typer.Option(None, "--practice", help="Key of a practice clip (not scored)."),
        completion_url: Optional[str] = typer.Option(None, "--completion-url",
                                                     help="Where a finished participant is sent (the panel's URL)."),
        completion_code: Optional[str] = typer.Option(None, "--completion-code",
                                                      help="The code a finished participant is shown."),
        # Option names of at most 19 characters: rich's help in an 80-column terminal cuts longer ones
        # ("--exclude-failed-he…"), and a name one cannot read cannot be typed.
        failed_headphones: str = typer.Option(
            "exclude", "--failed-headphones",
            help="Rule: exclude | keep a participant who failed the headphone check (record mode)."),
        attention_misses: int = typer.Option(0, "--attention-misses",
                                             help="Rule: more attention clips missed than this excludes."),
        attention_radius: float = typer.Option(1000.0, "--attention-radius",
                                               help="An attention guess farther than this (km) is a miss."),
        min_median_listen: float = typer.Option(0.0, "--min-median-listen",
                                                help="Rule: a median listening time below this (s) excludes; 0: off."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the participants' orders (default: random)."),
        questionnaire: Optional[Path] = typer.Option(None, "--questionnaire",
                                                     help="Questions shown after consent (a TOML file)."),
        must_hear: Optional[str] = typer.Option(None, "--must-hear",
                                                help="Seconds (20) or share (50%) of a clip heard before Submit."),
        recognise: bool = typer.Option(False, "--recognise",
                                       help="Ask per clip: I recognise this place / the language."),
    ) -> None:
        """Create a web study (clips with playable audio only); its exclusion rules are fixed now."""
        from workbench.studies.web_study import HEADPHONE_CHECKS, MAX_PER_PARTICIPANT, MODES, create_study

        check_choice(mode, MODES, "--mode")
        # out of range is a usage error (exit 2), as for every option (issue 40)
        if not 1 <= per_participant <= MAX_PER_PARTICIPANT:
            raise usage_error(f"{per_participant}: give 1 to {MAX_PER_PARTICIPANT} clips", "--per-participant")
        if target_per_clip < 1:
            raise usage_error(f"{target_per_clip}: every clip needs at least one guess", "--target-per-clip")
        check_choice(headphone_check, HEADPHONE_CHECKS, "--headphone-check")
        check_choice(failed_headphones, ("exclude", "keep"), "--failed-headphones")
        if (selection is None) == (clips is None):
            raise usage_error("give --selection ID|latest or --clips KEY,...|all (one of them)", "--selection / --clips")
        if clips is not None and not _keys(clips):
            raise usage_error("give clip keys separated by commas, or 'all'", "--clips")
        for value, option in ((attention_misses, "--attention-misses"), (min_median_listen, "--min-median-listen"),
                              (attention_radius, "--attention-radius")):
            if not value >= 0 or value == float("inf"):
                raise usage_error(f"{value}: give a finite number of 0 or more", option)
        text = None
        if consent is not None:
            try:
                text = consent.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise AglwError(f"--consent {consent}: cannot read it as UTF-8 text ({exc.__class__.__name__}); "
                                "give a Markdown file") from None
        options: dict = {"recognise": True} if recognise else {}
        if must_hear is not None:
            options.update(_must_hear(must_hear))
        questions = None
        if questionnaire is not None:
            from workbench.studies.questionnaire import load_questionnaire

            questions = load_questionnaire(questionnaire)
        context = app_context(ctx)
        rules = {"headphones_failed": failed_headphones == "exclude", "max_attention_missed": attention_misses,
                 "min_median_listen_s": float(min_median_listen), "attention_radius_km": float(attention_radius)}
        keys = None if clips is None or clips.strip().lower() == "all" else _keys(clips)
        config, excluded = create_study(
            context.store(), name, clips=keys, selection=selection, mode=mode, per_participant=per_participant,
            target_per_clip=target_per_clip, headphone_check=headphone_check, attention=_keys(attention),
            consent=text, practice=practice, completion_url=completion_url, completion_code=completion_code,
            rules=rules, seed=seed, questionnaire=questions, options=options)
        if context.json:
            emit_json({**config.public(), "excluded": excluded})
            return
        extra = "".join([f", {config.n_attention} attention clip(s)" if config.n_attention else "",
                         ", a practice clip" if config.practice_clip_id is not None else ""])
        show(f"created web study {config.name} ({config.mode} mode): {config.n_items} clips to guess{extra}; "
             + (f"{config.per_participant} per participant" if config.per_participant < config.n_items
                else f"each participant gets all {config.n_items}")
             + f", {config.target_per_clip} guesses wanted per clip; "
             f"headphone check: {config.headphone_check}")
        if excluded:
            show(f"left out {len(excluded)} clip(s) without playable audio:")
            for e in excluded[:MAX_LISTED]:
                show(f"  {e['key']}: {e['reason']}")
            if len(excluded) > MAX_LISTED:
                show(f"  and {len(excluded) - MAX_LISTED} more (--json lists every one)")
        show(f"next: aglw study invite {config.name} --n N   (or --open for a panel link)")

    @study.command("invite")
    def invite_cmd(
        ctx: typer.Context,
        name: str = typer.Argument(..., help="The web study."),
        n: Optional[int] = typer.Option(None, "--n", help="How many invitation links (one participant each)."),
        open_: bool = typer.Option(False, "--open", help="The one open link for a panel (Prolific's placeholders)."),
        base_url: str = typer.Option(DEFAULT_BASE_URL, "--base-url",
                                     help="Where participants reach `aglw serve` (the public https address)."),
    ) -> None:
        """Signed invitation links, one per line (--open: the panel link that takes PROLIFIC_PID)."""
        if open_ == (n is not None):
            raise usage_error("give --n N for invitation links or --open for the panel link (one of them)", "--n / --open")
        if n is not None and not 1 <= n <= 10_000:
            raise usage_error(f"{n}: give 1 to 10,000 invitations at a time", "--n")
        if not re.match(r"^https?://[A-Za-z0-9.\-\[\]:]+(/[^\s<>\"'?#]*)?$", base_url):
            raise usage_error(f"{base_url!r}: give an http(s) address such as {DEFAULT_BASE_URL}", "--base-url")
        from web.server import require_web_extra

        require_web_extra()  # the links are signed with itsdangerous: one line naming the extra without it
        from web import tokens
        from workbench.studies.web_study import invite, load_study

        context = app_context(ctx)
        store = context.store()
        if open_:
            config = load_study(store, name)
            links = [tokens.open_link(base_url, config) + PROLIFIC_QUERY]
        else:
            assert n is not None
            config, nonces = invite(store, name, n)
            links = [tokens.invite_link(base_url, config, nonce) for nonce in nonces]
        if context.json:
            emit_json({"study": config.name, "links": links})
            return
        for link in links:
            show(link)

    @study.command("participants")
    def participants_cmd(
        ctx: typer.Context,
        name: str = typer.Argument(..., help="The web study."),
    ) -> None:
        """The participant flow (invited, consented, passed, finished, excluded and why) and every participant."""
        from workbench.studies.web_flow import ANALYZED_RULE, participant_flow

        context = app_context(ctx)
        flow = participant_flow(context.store(), name)
        if context.json:
            emit_json(flow.to_dict())
            return
        c, d = flow.counts, flow.details
        check = flow.study.headphone_check
        passed = (f"passed the headphone check {c['passed_headphones']}" if check != "off"
                  else f"no headphone check ({c['passed_headphones']} go on)")
        show(f"{flow.study.name} ({flow.study.mode} mode, n = {len(flow.participants)} participants): "
             f"invited {c['invited']}, started {c['started']}, consented {c['consented']}, {passed}, "
             f"finished {c['finished']}, excluded {c['excluded']} of the finished, analyzed {c['analyzed']}")
        show(f"analyzed: {ANALYZED_RULE} (a participant who did not finish is not analyzed); "
             f"screened out {d['screened_out']}, in progress {d['in_progress']}")
        if not flow.participants:
            show(f"no participants yet (aglw study invite {flow.study.name} --n N)")
            return
        from rich.table import Table

        from rich.text import Text

        table = Table("participant", "status", "guesses", "excluded", "reason", show_edge=False)
        for p in flow.participants:
            table.add_row(Text(p.participant), p.status, str(p.n_guesses), "yes" if p.excluded else "no",
                          Text(p.reason or ""))
        show(table, min_width=110)
