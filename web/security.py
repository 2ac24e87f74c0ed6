"""The study page's guards that sit around every request: headers, body size, rate limits, origin.

design/web-study.md, "Security". These are plain ASGI wrappers so that they also cover the
responses Starlette makes itself (a 500 from its error middleware, a 404 of the router): the
headers middleware is the outermost layer of the app.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

# default-src 'self' and nothing looser (no CDN, no tiles, no inline script or style); the other
# directives only narrow it further (they are not covered by default-src).
CSP = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
MAX_BODY_BYTES = 16 * 1024

Scope = dict[str, Any]


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every HTTP response, errors included; drops ``server``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names
                           and k.lower() != b"server"]
                message = {**message, "headers": [*headers, *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BodyTooLarge(Exception):
    """A request body over the limit (the app answers 413)."""


class BodyLimit:
    """Refuses request bodies over ``limit`` bytes with 413: by Content-Length up front, else while reading."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    too_large = int(value) > self.limit
                except ValueError:
                    too_large = True
                if too_large:
                    await _plain(send, 413, "The request is too large.")
                    return
        received = 0

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge()
            return message

        await self.app(scope, limited_receive, send)


async def _plain(send: Any, status: int, sentence: str) -> None:
    body = sentence.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


class RateLimiter:
    """Token buckets by key (a participant, an address): ``rate`` per second, bursts of ``burst``.

    In-process: with ``aglw serve --workers N`` each worker limits on its own, so a client may get
    up to N times the rate in all. The table keeps the ``max_keys`` most recently seen keys.
    """

    def __init__(self, rate: float, burst: float, max_keys: int = 100_000) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: str, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens from ``key``'s bucket; False when it has too few (answer 429)."""
        if self.rate <= 0:
            return True
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.pop(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            allowed = tokens >= cost
            if allowed:
                tokens -= cost
            self._buckets[key] = (tokens, now)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        return allowed


def same_origin(headers: Any) -> bool:
    """False when the request names an ``Origin`` whose host is not the one it was sent to.

    The host is compared, not the scheme: behind a TLS proxy the app sees http while the browser
    says https. A request without ``Origin`` (an old browser, a same-origin GET) passes; CSRF
    tokens guard those. A browser's ``Sec-Fetch-Site`` other than ``same-origin`` is refused.
    """
    # The browser's own word first: Chromium and Firefox send Sec-Fetch-Site on every request.
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site != "same-origin":
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    if origin == "null":
        # Under Referrer-Policy: no-referrer a same-origin form POST says "Origin: null"; only the
        # browser's Sec-Fetch-Site tells it from a sandboxed frame's or a file's request.
        return fetch_site == "same-origin"
    return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()
