"""The error vocabulary every provider speaks, and the one ``Provider`` protocol.

A provider sends one request and returns the reply, or raises one of:

- :class:`RetryableError` — 429, 5xx/529/503, 408/409, time-outs, connection errors (with the
  server's ``retry-after`` when it sent one); ``connection`` marks a server not reached at all
  (refused, DNS, TLS), which on a run's first requests stops the run (:class:`Unreachable`);
- :class:`AnswerError` — this item failed for good (HTTP 400, a 200 whose body is not the API's);
  a stored failure, the run goes on;
- :class:`RunStopped` — 401/403 (key) or 404 (model): the whole run stops with one line.

An :class:`AnswerError` marked ``transient`` is a transient fault that outlasted a provider's own
retries (the judges' SDK retries by itself): the engine counts it as the server's failure, as it counts
a :class:`RetryableError` that outlasted its retries, and :class:`ServerFailing` stops a run after
:data:`workbench.llm.engine.FAILING_SERVER_CLIPS` clips in a row failed so. A provider's error body is
put in words by :func:`error_words`, never shown as a dict.
"""

from __future__ import annotations

import json
from typing import Protocol

from workbench.errors import AglwError


class RunStopped(AglwError):
    """The provider refused the key or does not know the model: the run stops (one line)."""


class Unreachable(RunStopped):
    """The server was not reached on the run's first requests (refused, DNS, TLS): nothing was asked."""

    @classmethod
    def at(cls, where: str, reason: str) -> Unreachable:
        """The one line for a server ``where`` (an endpoint in words) that ``reason`` kept out of reach."""
        return cls(f"cannot reach {where}: {reason.rstrip('.')}. Nothing was asked; check --base-url and the network")


class ServerFailing(RunStopped):
    """The server failed a run of clips in a row (5xx, time-outs, ...): the run stops, nothing more is sent."""


class AnswerError(Exception):
    """This item's request failed for good; the reason is safe to store.

    ``transient``: a transient fault (429, 5xx, a time-out, a lost connection) that outlasted the
    provider's own retries, i.e. the server's failure rather than this item's.
    """

    def __init__(self, reason: str = "", *, transient: bool = False) -> None:
        super().__init__(reason)
        self.transient = transient


class RetryableError(Exception):
    """A transient fault; ``retry_after`` is the server's wish in seconds, if it said one."""

    def __init__(self, reason: str, retry_after: float | None = None, *, connection: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.connection = connection


_NOT_REACHED = frozenset({"ConnectError", "ConnectionRefusedError", "gaierror", "SSLError", "SSLCertVerificationError",
                          "ProxyError", "NameResolutionError", "ConnectTimeout"})


def not_reached(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) says the server was never reached:
    connection refused, a name that does not resolve, a TLS handshake that failed."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ in _NOT_REACHED or isinstance(current, ConnectionRefusedError):
            return True
        current = current.__cause__ or current.__context__
    return False


def connection_problem(exc: BaseException) -> str:
    """What went wrong below an SDK's connection error, in the words of the error it was raised
    from (``[Errno 111] Connection refused``), not the SDK's own "Connection error."."""
    seen: set[int] = set()
    current: BaseException | None = exc
    words = str(exc).strip()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current).strip()
        if text and current is not exc:
            words = text
        current = current.__cause__ or current.__context__
    return words.rstrip(".") or type(exc).__name__


def timeout_words(timeout_s: float, option: str) -> str:
    """A time-out named as one: the time-out in force and the setting that sets it."""
    return f"timeout: no reply within the time-out of {timeout_s:g} s ({option})"


def error_words(body: object, fallback: str = "no details") -> str:
    """A provider's error body in words: its message and kind (``Internal server error (api_error)``).

    Reads the shapes the APIs use (``{"error": {"message", "type"}}``, ``{"message", "type"}``,
    ``{"detail": ...}``, Google's ``{"error": {"message", "status"}}``), JSON text, or plain text; an
    HTML page is named as one. Never a dict's repr; ``fallback`` when the body says nothing.
    """
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        text = body.strip()
        try:
            body = json.loads(text)
        except ValueError:
            if "<html" in text[:500].lower() or "<!doctype" in text[:100].lower():
                return "an HTML page"
            return " ".join(text.split())[:300] or fallback
        if isinstance(body, str):
            return " ".join(body.split())[:300] or fallback
    if isinstance(body, list):
        return error_words(body[0], fallback) if body else fallback
    if not isinstance(body, dict):
        return fallback
    error = body.get("error", body)
    if isinstance(error, str):
        error = {"message": error, "type": body.get("type")}
    if not isinstance(error, dict):
        return fallback
    message = error.get("message") or error.get("detail") or body.get("message") or body.get("detail")
    if isinstance(message, (dict, list)):
        message = error_words(message, "")
    kind = error.get("type") or error.get("status") or error.get("code")
    words = " ".join(str(message).split())[:300] if message else ""
    if isinstance(kind, str) and kind and kind.lower() not in ("error", words.lower()):
        words = f"{words} ({kind})" if words else kind
    return words or fallback


def retry_after(response: object) -> float | None:
    """Seconds from a ``retry-after`` header (seconds form; an HTTP date is ignored)."""
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def takes_body_hook(method: object) -> bool:
    """Whether a provider's ``ask``/``complete`` accepts ``on_body`` (the raw body, before parsing)."""
    import inspect

    try:
        return "on_body" in inspect.signature(method).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


class Provider(Protocol):
    """What every backend asked by the engine offers; the question kinds add their ``ask``."""

    name: str

    def close(self) -> None:
        """Release connections or memory."""
        ...


__all__ = ["AnswerError", "Provider", "RetryableError", "RunStopped", "ServerFailing", "Unreachable", "connection_problem",
           "error_words", "not_reached", "retry_after", "takes_body_hook", "timeout_words"]
