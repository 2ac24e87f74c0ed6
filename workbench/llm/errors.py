"""The error vocabulary every provider speaks, and the one ``Provider`` protocol.

A provider sends one request and returns the reply, or raises one of:

- :class:`RetryableError` — 429, 5xx/529/503, 408/409, time-outs, connection errors (with the
  server's ``retry-after`` when it sent one); ``connection`` marks a server not reached at all
  (refused, DNS, TLS), which on a run's first requests stops the run (:class:`Unreachable`);
- :class:`AnswerError` — this item failed for good (HTTP 400, a 200 whose body is not the API's);
  a stored failure, the run goes on;
- :class:`RunStopped` — 401/403 (key) or 404 (model): the whole run stops with one line.
"""

from __future__ import annotations

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


class AnswerError(Exception):
    """This item's request failed for good; the reason is safe to store."""


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


__all__ = ["AnswerError", "Provider", "RetryableError", "RunStopped", "Unreachable", "connection_problem", "not_reached", "retry_after", "takes_body_hook"]
