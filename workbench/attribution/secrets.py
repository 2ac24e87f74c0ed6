"""Where API keys come from, and keeping them out of everything that is stored or shown."""

from __future__ import annotations

import logging
import os

KEYRING_SERVICE = "aglw"
KEYRING_USER = "anthropic"
REDACTED = "[redacted]"


def api_key(env_var: str, keyring_user: str) -> tuple[str | None, str]:
    """A provider's key and where it came from: the environment variable, else the OS keyring.

    One rule for every provider (judges and ALMs): keys are read from these two places only and
    never stored. ``keyring_user`` is the entry's user name under the service ``aglw``.

    Returns
    -------
    (key, source)
        ``key`` is None when neither place has one; ``source`` names the place for messages
        (never the key itself).
    """
    key = os.environ.get(env_var)
    if key:
        return key, f"environment variable {env_var}"
    try:
        import keyring
        from keyring.errors import KeyringError

        try:
            key = keyring.get_password(KEYRING_SERVICE, keyring_user)
        except KeyringError:
            key = None
    except ImportError:  # pragma: no cover - keyring is a dependency; a broken install still runs
        key = None
    if key:
        return key, f"OS keyring (service {KEYRING_SERVICE!r}, user {keyring_user!r})"
    return None, "none"


def anthropic_api_key() -> tuple[str | None, str]:
    """The Anthropic key and where it came from (``ANTHROPIC_API_KEY``, else the OS keyring)."""
    return api_key("ANTHROPIC_API_KEY", KEYRING_USER)


def redact(text: str | None, secrets: list[str | None]) -> str | None:
    """``text`` with every non-empty secret replaced by a marker."""
    if text is None:
        return None
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def quiet_sdk_loggers() -> None:
    """Keep the SDK's and HTTP layer's debug logging off: request dumps do not belong in our logs."""
    for name in ("anthropic", "openai", "google_genai", "httpx2", "httpcore2", "httpx", "httpcore"):
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET or logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
