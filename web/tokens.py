"""Signed tokens of one web study: invitation links, the open panel link, the session cookie, CSRF.

Everything is signed with the study's own secret (``StudyConfig.secret``, kept in the project), each
use under its own salt so a token of one kind never passes for another. The payloads carry only
random nonces and numbers the participant already has (her participant id, the study id): nothing
about a clip. A tampered, foreign or expired token raises :class:`BadToken`; the app answers 403
and changes nothing in the store.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any
from urllib.parse import quote

from itsdangerous import BadSignature, URLSafeTimedSerializer

from workbench.studies.web_study import StudyConfig

# An invitation is valid for a long study; a session cookie for a working week (a participant
# who comes back later enters again by her link and resumes where she left).
INVITE_MAX_AGE_S = 180 * 86_400
OPEN_MAX_AGE_S = 365 * 86_400
SESSION_MAX_AGE_S = 7 * 86_400
COOKIE_NAME = "aglw_session"


class BadToken(Exception):
    """A token that is tampered, expired or of another study (the page answers 403)."""


def _serializer(study: StudyConfig, kind: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(study.secret, salt=f"aglw-web-{kind}")


def _load(study: StudyConfig, kind: str, token: str, max_age: int) -> dict[str, Any]:
    if not token or len(token) > 512:
        raise BadToken(kind)
    try:
        payload = _serializer(study, kind).loads(token, max_age=max_age)
    except BadSignature as exc:  # SignatureExpired is a BadSignature too
        raise BadToken(kind) from exc
    if not isinstance(payload, dict) or payload.get("s") != study.id:
        raise BadToken(kind)
    return payload


def invite_token(study: StudyConfig, nonce: str) -> str:
    """The signed token of one invitation (its nonce from :func:`workbench.studies.web_study.invite`)."""
    return _serializer(study, "invite").dumps({"s": study.id, "n": nonce})


def read_invite(study: StudyConfig, token: str, *, max_age: int | None = None) -> str:
    """The nonce of a verified invitation token."""
    nonce = _load(study, "invite", token, INVITE_MAX_AGE_S if max_age is None else max_age).get("n")
    if not isinstance(nonce, str) or not nonce:
        raise BadToken("invite")
    return nonce


def open_token(study: StudyConfig) -> str:
    """The signed token of the study's open (panel) link."""
    return _serializer(study, "open").dumps({"s": study.id})


def read_open(study: StudyConfig, token: str, *, max_age: int | None = None) -> None:
    """Verify the open link's token (raises :class:`BadToken`)."""
    _load(study, "open", token, OPEN_MAX_AGE_S if max_age is None else max_age)


def invite_link(base_url: str, study: StudyConfig, nonce: str) -> str:
    """The invitation link a participant opens: ``{base_url}/i/{token}``."""
    return f"{base_url.rstrip('/')}/i/{quote(invite_token(study, nonce), safe='')}"


def open_link(base_url: str, study: StudyConfig) -> str:
    """The study's open link for a panel: ``{base_url}/o/{token}``.

    The panel appends its own parameters (Prolific: ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``);
    the page enters the participant by ``PROLIFIC_PID`` (stored only as a salted hash).
    """
    return f"{base_url.rstrip('/')}/o/{quote(open_token(study), safe='')}"


def session_cookie(study: StudyConfig, participant_id: int) -> str:
    """The signed, timed session cookie's value: the participant's id, nothing else."""
    return _serializer(study, "session").dumps({"s": study.id, "p": int(participant_id)})


def read_session(study: StudyConfig, value: str, *, max_age: int | None = None) -> int:
    """The participant id of a verified session cookie."""
    participant = _load(study, "session", value, SESSION_MAX_AGE_S if max_age is None else max_age).get("p")
    if not isinstance(participant, int) or isinstance(participant, bool):
        raise BadToken("session")
    return participant


def csrf_token(study: StudyConfig, participant_id: int) -> str:
    """The participant's CSRF token: an HMAC of her id under the study's secret (stateless, per participant)."""
    return hmac.new(study.secret.encode(), f"csrf:{study.id}:{int(participant_id)}".encode(),
                    hashlib.sha256).hexdigest()


def check_csrf(study: StudyConfig, participant_id: int, token: str | None) -> bool:
    """Whether ``token`` is her CSRF token (constant-time)."""
    return bool(token) and hmac.compare_digest(csrf_token(study, participant_id), str(token))
