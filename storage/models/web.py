"""Web studies (issue [W], design/web-study.md): a crowd human baseline collected in the browser.

A study names its clips and rules before it starts; participants enter by a signed invitation or
an open panel link, get a pseudonym, consent, take the headphone check and guess the clips
assigned to them.  Items are addressed by opaque per-participant ids (``web_assignment.item_id``),
never by clip keys.  A guess belongs to one assignment (unique): a double submit stores one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.models._base import _json, _text, utcnow
from storage.models import clips as _clips  # noqa: F401  (tables its foreign keys name)


class WebStudy(SQLModel, table=True):
    """A web study: its clips, mode and rules, fixed when it is created (workbench/studies/web_study.py)."""

    __tablename__ = "web_study"

    id: Optional[int] = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    mode: str = "study"  # study (blind) | game (reveals after each stored guess)
    per_participant: int = 20
    target_per_clip: int = 5
    headphone_check: str = "record"  # screen | record | off
    practice_clip_id: Optional[int] = Field(default=None, foreign_key="clip.id")
    consent: Optional[str] = _text()  # the study's consent text (Markdown, rendered as plain HTML)
    completion_code: Optional[str] = None
    completion_url: Optional[str] = _text()
    # exclusion rules fixed before the study starts: {headphones_failed, max_attention_missed,
    # min_median_listen_s}
    rules: Optional[dict] = _json()
    # the signing key of the study's links and cookies (never leaves the project and the server)
    secret: str
    seed: int = 0
    parameters: Optional[dict] = _json()  # where the clips came from (selection id, keys, all)
    created_at: datetime = Field(default_factory=utcnow)
    # lifecycle (issue 44): open | paused | closed; a paused or closed study stores nothing new
    status: str = "open"
    # the panel's own study id (Prolific's STUDY_ID): given at creation or stored at the first entry
    panel_study_id: Optional[str] = None
    # where a participant ended by a screen goes: the panel's screen-out code and/or return URL
    screen_out_code: Optional[str] = None
    screen_out_url: Optional[str] = _text()
    # further settings fixed at creation, typed by workbench/studies/web_study.StudyConfig
    # (score shown at the end, slot time-out, must-hear seconds, languages, loudness target, ...)
    options: Optional[dict] = _json()
    # the researcher's questionnaire (its questions, validated at creation), shown after consent
    questionnaire: Optional[dict] = _json()


class WebStudyClip(SQLModel, table=True):
    """A clip of a web study: a scored item or an attention check."""

    __tablename__ = "web_study_clip"
    __table_args__ = (UniqueConstraint("study_id", "clip_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="web_study.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    role: str = "item"  # item | attention
    stratum: Optional[str] = None  # continent × speech, fixed at creation (assignment balances over it)


class WebParticipant(SQLModel, table=True):
    """One participant of a web study, known by a pseudonym; the panel id only as a salted hash."""

    __tablename__ = "web_participant"
    __table_args__ = (UniqueConstraint("study_id", "pseudonym"), UniqueConstraint("study_id", "invite_nonce"),
                      UniqueConstraint("study_id", "panel_hash"))

    id: Optional[int] = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="web_study.id", index=True)
    pseudonym: str  # "p-" + 8 characters
    invite_nonce: Optional[str] = None  # the invitation link's nonce (None: entered by the open link)
    panel_hash: Optional[str] = None  # salted hash of the panel's participant id (Prolific's PROLIFIC_PID)
    invited_at: Optional[datetime] = None
    started_at: Optional[datetime] = None
    consented_at: Optional[datetime] = None
    headphone_correct: Optional[int] = None  # trials answered right (of 6)
    headphone_passed: Optional[bool] = None
    screened_out_at: Optional[datetime] = None  # ended politely by a failed check in `screen` mode
    finished_at: Optional[datetime] = None
    order_seed: int = 0
    # the session cookie names this random key, never the sequential row id (issue 44)
    session_key: Optional[str] = Field(default=None, index=True, unique=True)
    pilot: bool = False  # entered by a --pilot link: counted apart, never analysed
    revoked_at: Optional[datetime] = None  # her invitation was revoked: she can do nothing more
    last_seen_at: Optional[datetime] = None  # last request; frees her clips' slots after a time-out
    released_at: Optional[datetime] = None  # her unanswered slots were freed (she left)
    language: Optional[str] = None  # the page language she saw
    answers: Optional[dict] = _json()  # the questionnaire's answers (issue 45)
    device: Optional[dict] = _json()  # device class, browser and OS family (never the raw user agent)
    huggins_correct: Optional[int] = None  # Huggins-pitch trials answered right (headphone check "huggins"/"both")
    calibration: Optional[dict] = _json()  # the volume-calibration step's record


class WebAssignment(SQLModel, table=True):
    """One clip assigned to one participant, in her order, under an opaque id minted for her."""

    __tablename__ = "web_assignment"
    __table_args__ = (UniqueConstraint("participant_id", "position"), UniqueConstraint("item_id"))

    id: Optional[int] = Field(default=None, primary_key=True)
    participant_id: int = Field(foreign_key="web_participant.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    position: int = 0
    kind: str = "item"  # practice | item | attention
    item_id: str  # opaque, random; the only name the page ever uses for the clip
    shown_at: Optional[datetime] = None  # first time the item's page was served to her
    # the listening record so far (plays, seconds heard, seeks), kept across reloads (issue 45)
    listening: Optional[dict] = _json()


class WebGuess(SQLModel, table=True):
    """A participant's stored answer to one assignment (a refusal has no position)."""

    __tablename__ = "web_guess"
    __table_args__ = (UniqueConstraint("assignment_id"),)

    id: Optional[int] = Field(default=None, primary_key=True)
    assignment_id: int = Field(foreign_key="web_assignment.id")
    participant_id: int = Field(foreign_key="web_participant.id", index=True)
    clip_id: int = Field(foreign_key="clip.id", index=True)
    latitude: Optional[float] = None
    longitude: Optional[float] = None
    refused: bool = False  # "I can't tell"
    confidence: Optional[float] = None  # 0..1
    clue: Optional[str] = _text()  # "what gave it away?"
    listen_s: Optional[float] = None  # seconds the audio played
    answer_s: Optional[float] = None  # seconds from the item's page to the submit
    n_plays: Optional[int] = None
    created_at: datetime = Field(default_factory=utcnow)
    placed_by: Optional[str] = None  # click | search | keyboard (None: a refusal, or before issue 45)
    place_name: Optional[str] = _text()  # for a search: the gazetteer place she chose
    heard_s: Optional[float] = None  # seconds of the recording actually heard (union of played spans)
    n_seeks: Optional[int] = None
    recognised: Optional[dict] = _json()  # the optional "I recognise this place / language" item
