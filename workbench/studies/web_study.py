"""Web studies, the researcher's side: create one, invite people, see the participant flow.

design/web-study.md. A study fixes, before anyone enters: its clips (a stored selection, a list of
keys or every clip with playable audio: the one rule of :mod:`workbench.media`), its mode
(``study``: blind; ``game``: reveals after each stored guess), how many clips each participant
gets and how many guesses each clip should collect, the headphone check, the attention clips, the
practice clip, the consent text, the completion code or URL, and the exclusion rules. The
participant's side (entering, consenting, guessing) is :mod:`workbench.studies.web_session`.
"""

from __future__ import annotations

import re
import secrets
import string
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import func, select

from storage import Store
from storage import tables as T
from workbench.errors import InputError

MODES = ("study", "game")
HEADPHONE_CHECKS = ("screen", "record", "off")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Woods et al. (2017): six trials, pass with at least five right.
HEADPHONE_TRIALS = 6
HEADPHONE_PASS = 5
DEFAULT_RULES = {"headphones_failed": True, "max_attention_missed": 0, "min_median_listen_s": 0.0,
                 "attention_radius_km": 1000.0}
MAX_CONSENT_CHARS = 20_000
MAX_PER_PARTICIPANT = 500
PSEUDONYM_ALPHABET = string.ascii_lowercase + string.digits


@dataclass(frozen=True)
class StudyConfig:
    """A stored web study as the server and the commands read it (``secret`` never leaves them)."""

    id: int
    name: str
    mode: str
    per_participant: int
    target_per_clip: int
    headphone_check: str
    practice_clip_id: int | None
    consent: str
    completion_code: str | None
    completion_url: str | None
    rules: dict[str, Any]
    secret: str
    seed: int
    n_items: int
    n_attention: int
    # schema 0011 (issues 44-46): lifecycle, panel, screen-out, further options, questionnaire
    status: str = "open"  # open | paused | closed
    panel_study_id: str | None = None
    screen_out_code: str | None = None
    screen_out_url: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    questionnaire: dict[str, Any] | None = None

    def public(self) -> dict[str, Any]:
        """Everything but the secret (for `--json` outputs)."""
        out = asdict(self)
        out.pop("secret")
        return out


def new_pseudonym(taken: set[str]) -> str:
    """``p-`` and 8 random characters, not in ``taken``."""
    while True:
        pseudonym = "p-" + "".join(secrets.choice(PSEUDONYM_ALPHABET) for _ in range(8))
        if pseudonym not in taken:
            return pseudonym


def check_name(name: str) -> str:
    """A study's name as stored, or the one-line error (it appears in row names such as ``human (NAME)``)."""
    name = (name or "").strip()
    if not NAME_PATTERN.match(name):
        raise InputError(f"study name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter "
                         "or digit")
    return name


def load_study(store: Store, name: str) -> StudyConfig:
    """The stored web study ``name``; a one-line error naming the known studies when there is none."""
    study, role = T.web_study.c, T.web_study_clip.c
    with store.read() as connection:
        row = connection.execute(select(T.web_study).where(study.name == name)).first()
        if row is None:
            known = [n for (n,) in connection.execute(select(study.name).order_by(study.name))]
            raise InputError(f"no web study {name!r}; known: {', '.join(known) or 'none (aglw study web NAME first)'}")
        counts = dict(connection.execute(select(role.role, func.count()).where(role.study_id == row.id)
                                         .group_by(role.role)).all())
    return StudyConfig(id=int(row.id), name=row.name, mode=row.mode, per_participant=int(row.per_participant),
                       target_per_clip=int(row.target_per_clip), headphone_check=row.headphone_check,
                       practice_clip_id=row.practice_clip_id, consent=row.consent or "",
                       completion_code=row.completion_code, completion_url=row.completion_url,
                       rules={**DEFAULT_RULES, **(row.rules or {})}, secret=row.secret, seed=int(row.seed),
                       n_items=int(counts.get("item", 0)), n_attention=int(counts.get("attention", 0)),
                       status=row.status or "open", panel_study_id=row.panel_study_id,
                       screen_out_code=row.screen_out_code, screen_out_url=row.screen_out_url,
                       options=dict(row.options or {}), questionnaire=row.questionnaire)


def study_names(store: Store) -> list[str]:
    """Names of the project's web studies, alphabetically (the leaderboard's crowd rows ask this)."""
    with store.read() as connection:
        return [n for (n,) in connection.execute(select(T.web_study.c.name).order_by(T.web_study.c.name))]


def _keys_of_selection(store: Store, selection: str) -> list[str]:
    from workbench.curation.selection import load_selection

    if selection != "latest" and not selection.isdigit():
        raise InputError(f"--selection {selection!r}: give a stored selection id or 'latest'")
    return load_selection(store, None if selection == "latest" else int(selection)).keys


def _check_url(url: str | None) -> str | None:
    if url is None:
        return None
    url = url.strip()
    if not re.match(r"^https?://[^\s<>\"']+$", url):
        raise InputError(f"--completion-url {url!r}: give an http(s) URL without spaces or quotes")
    return url


MAX_MUST_HEAR_S = 3600.0


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """The further settings as stored (``must_hear_s`` or ``must_hear_share``, ``recognise``); one line on a bad one."""
    import math

    out = dict(options)
    seconds, share = out.get("must_hear_s"), out.get("must_hear_share")
    if seconds is not None and share is not None:
        raise InputError("--must-hear: give seconds or a share of the clip, not both")
    if seconds is not None and not (isinstance(seconds, (int, float)) and math.isfinite(seconds)
                                    and 0 < seconds <= MAX_MUST_HEAR_S):
        raise InputError(f"--must-hear {seconds}: give 1 to {MAX_MUST_HEAR_S:.0f} seconds")
    if share is not None and not (isinstance(share, (int, float)) and 0 < share <= 1):
        raise InputError(f"--must-hear {share}: give a share of the clip above 0% and at most 100%")
    if "recognise" in out and not isinstance(out["recognise"], bool):
        raise InputError("recognise must be true or false")
    return out


def create_study(
    store: Store,
    name: str,
    *,
    clips: Sequence[str] | None = None,
    selection: str | None = None,
    mode: str = "study",
    per_participant: int = 20,
    target_per_clip: int = 5,
    headphone_check: str = "record",
    attention: Sequence[str] = (),
    consent: str | None = None,
    practice: str | None = None,
    completion_url: str | None = None,
    completion_code: str | None = None,
    rules: dict[str, Any] | None = None,
    seed: int | None = None,
    questionnaire: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
) -> tuple[StudyConfig, list[dict[str, str]]]:
    """Create and store a web study (one transaction); nothing is stored when anything is refused.

    ``clips`` None with ``selection`` None: every clip with playable audio. Clips without
    playable audio are left out and returned as ``{key, reason}``; attention and practice clips
    must have playable audio (a refusal otherwise). Returns the stored study and the clips left out.
    ``questionnaire``: as :func:`workbench.studies.questionnaire.load_questionnaire` returns it;
    ``options``: the further settings (:func:`check_options`).
    """
    from storage.models import WebStudy, WebStudyClip
    from workbench.studies.planning import clip_strata

    name = check_name(name)
    if mode not in MODES:
        raise InputError(f"--mode {mode!r}: use one of {', '.join(MODES)}")
    if headphone_check not in HEADPHONE_CHECKS:
        raise InputError(f"--headphone-check {headphone_check!r}: use one of {', '.join(HEADPHONE_CHECKS)}")
    if not 1 <= per_participant <= MAX_PER_PARTICIPANT:
        raise InputError(f"--per-participant {per_participant}: give 1 to {MAX_PER_PARTICIPANT}")
    if target_per_clip < 1:
        raise InputError(f"--target-per-clip {target_per_clip}: every clip needs at least one guess")
    if consent is not None and len(consent) > MAX_CONSENT_CHARS:
        raise InputError(f"--consent: the text has {len(consent):,} characters; keep it under {MAX_CONSENT_CHARS:,}")
    if selection is not None and clips is not None:
        raise InputError("give --selection or --clips, not both")
    completion_url = _check_url(completion_url)
    if completion_code is not None:
        completion_code = completion_code.strip()
        if not re.match(r"^[A-Za-z0-9_-]{1,64}$", completion_code):
            raise InputError(f"--completion-code {completion_code!r}: use 1-64 letters, digits, '_' or '-'")
    options = check_options(options or {})
    merged_rules = {**DEFAULT_RULES, **(rules or {})}
    unknown_rules = set(merged_rules) - set(DEFAULT_RULES)
    if unknown_rules:
        raise InputError(f"unknown exclusion rule(s) {', '.join(sorted(unknown_rules))}; use {', '.join(DEFAULT_RULES)}")
    with store.read() as connection:
        if connection.execute(select(T.web_study.c.id).where(T.web_study.c.name == name)).first() is not None:
            raise InputError(f"a web study called {name!r} exists already; choose another name")
    keys = _keys_of_selection(store, selection) if selection is not None else (list(clips) if clips else None)
    attention = list(dict.fromkeys(k.strip() for k in attention if k.strip()))
    special = [*attention, *([practice] if practice else [])]
    if practice and practice in attention:
        raise InputError(f"--practice {practice!r} is also an attention clip; a practice clip is not scored")
    frame, excluded = clip_strata(store, None if keys is None else [*keys, *special], who="a web study")
    usable = set(frame["clip_key"].astype(str))
    for key in special:
        if key not in usable:
            why = next((e["reason"] for e in excluded if e["key"] == key), "not in the project")
            raise InputError(f"clip {key!r} ({'practice' if key == practice else 'attention'}): {why}; "
                             "it must be playable")
    items = frame[~frame["clip_key"].isin(set(special))]
    if items.empty:
        raise InputError("the study has no clip with playable audio to guess; link the audio first (aglw media link)")
    id_of = dict(zip(frame["clip_key"].astype(str), frame["clip_id"].astype(int)))
    with store.write() as s:
        study = WebStudy(name=name, mode=mode, per_participant=per_participant, target_per_clip=target_per_clip,
                         headphone_check=headphone_check, practice_clip_id=id_of[practice] if practice else None,
                         consent=consent, completion_code=completion_code, completion_url=completion_url,
                         rules=merged_rules, secret=secrets.token_hex(32),
                         seed=secrets.randbelow(2**31) if seed is None else int(seed),
                         parameters={"clips": "all" if keys is None and selection is None else
                                     ("selection " + selection if selection else "list"),
                                     "excluded": excluded},
                         questionnaire=questionnaire, options=options)
        s.add(study)
        s.flush()
        for row in items.itertuples(index=False):
            s.add(WebStudyClip(study_id=study.id, clip_id=int(row.clip_id), role="item", stratum=str(row.stratum)))
        for key in attention:
            s.add(WebStudyClip(study_id=study.id, clip_id=id_of[key], role="attention"))
    return load_study(store, name), [e for e in excluded if e["key"] not in special]


def invite(store: Store, name: str, n: int) -> tuple[StudyConfig, list[str]]:
    """Mint ``n`` invitations (a participant row each, in state *invited*); their nonces, to sign into links."""
    from storage.models import WebParticipant, utcnow

    if not 1 <= n <= 10_000:
        raise InputError(f"--n {n}: give 1 to 10,000 invitations at a time")
    study = load_study(store, name)
    nonces = [secrets.token_urlsafe(12) for _ in range(n)]
    with store.write() as s:
        taken = {p for (p,) in s.execute(select(T.web_participant.c.pseudonym)
                                         .where(T.web_participant.c.study_id == study.id))}
        for nonce in nonces:
            pseudonym = new_pseudonym(taken)
            taken.add(pseudonym)
            s.add(WebParticipant(study_id=study.id, pseudonym=pseudonym, invite_nonce=nonce, invited_at=utcnow(),
                                 order_seed=secrets.randbelow(2**31)))
    return study, nonces
