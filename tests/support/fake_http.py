"""The scaffolding every fake web service of the tests shares: a local HTTP server on 127.0.0.1.

A fake (the ALM APIs of :mod:`tests.support.fake_alm`, the Anthropic API of
:mod:`tests.support.fake_anthropic`) subclasses :class:`FakeHTTPServer` and answers requests in
:meth:`FakeHTTPServer._route`; the base starts and stops the server on a free port (also as a
context manager), reads each request's body, keeps the request log under a lock, hands out
scripted behaviours one per request, and writes responses. An SDK under test is pointed at
:attr:`FakeHTTPServer.origin` and runs unchanged.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self


@dataclass
class FakeHTTPServer:
    """Base of the fake services; subclasses implement :meth:`_route`.

    Attributes
    ----------
    requests
        Every request the fake recorded (:meth:`_record`), in arrival order; its shape is the fake's.
    """

    requests: list[Any] = field(default_factory=list)
    # Every request's arrival and the moment its response was written, on the monotonic clock
    # (a kill test compares them with its kills): [(event, time, request)], event "received" or "delivered".
    timeline: list[tuple[str, float, Any]] = field(default_factory=list)
    delay_s: float = 0.0  # every request waits this long before it is answered (a server that takes time)
    # A broken server: every request whose "METHOD /path" starts with ``fail_route`` ("": every request)
    # is answered with HTTP ``fail_status`` (in the fake API's own error shape) and nothing else.
    fail_status: int | None = None
    fail_route: str = ""
    hits: int = 0  # every request that arrived, on any route (counted before any delay or fault)
    _local: threading.local = field(default_factory=threading.local)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    thread_name = "fake-http"  # the serving thread's name, for a hung test's thread dump

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Self:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                return

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                api._dispatch(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                api._dispatch(self, "POST")

            def do_DELETE(self) -> None:  # noqa: N802
                api._dispatch(self, "DELETE")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name=self.thread_name, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server."""
        assert self._server is not None, "start() the fake server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # ------------------------------------------------------------------ requests
    def _dispatch(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        self._local.arrived = time.monotonic()
        self._local.request = None
        path = handler.path.split("?", 1)[0]
        with self._lock:
            self.hits += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        try:
            if self.fail_status is not None and f"{method} {path}".startswith(self.fail_route):
                self._fail(handler, self.fail_status)
                return
            self._route(handler, method, path, raw)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a time-out test): fine
            pass

    def _route(self, handler: BaseHTTPRequestHandler, method: str, path: str, raw: bytes) -> None:
        """Answer one request (``path`` without its query, ``raw`` its body)."""
        raise NotImplementedError

    def _fail(self, handler: BaseHTTPRequestHandler, status: int) -> None:
        """Answer ``status`` as a broken server does (a fake overrides this with its API's error body)."""
        self._send(handler, status, {"error": {"message": "internal error"}})

    def _record(self, request: Any) -> None:
        self._local.request = request
        with self._lock:
            self.requests.append(request)
            self.timeline.append(("received", getattr(self._local, "arrived", time.monotonic()), request))

    def _take(self, queue: deque[str] | None, default: str = "ok", *, sticky: tuple[str, ...] = ()) -> str:
        """The next scripted behaviour of ``queue`` (``default`` once it is empty).

        A behaviour in ``sticky`` stays at the head and answers every later request too.
        """
        with self._lock:
            if not queue:
                return default
            return queue[0] if queue[0] in sticky else queue.popleft()

    # ------------------------------------------------------------------ responses
    def _send(self, handler: BaseHTTPRequestHandler, status: int, body: Any, *,
              content_type: str = "application/json", headers: dict[str, str] | None = None) -> None:
        """Write a response: ``body`` as bytes, text, or anything else as JSON."""
        data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()
        request = getattr(self._local, "request", None)
        if request is not None:
            with self._lock:
                self.timeline.append(("delivered", time.monotonic(), request))


@contextmanager
def serve_folder(folder: str | Path, handler: type[SimpleHTTPRequestHandler] = SimpleHTTPRequestHandler) -> Iterator[str]:
    """Serve the files of ``folder`` on 127.0.0.1 (a download source for the code under test);
    yields the base URL, ``http://127.0.0.1:PORT`` without a trailing slash. ``handler`` may be a
    subclass that scripts faults (a body shorter than its Content-Length, say)."""
    quiet = type("QuietHandler", (handler,), {"log_message": lambda self, *args: None})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(quiet, directory=str(folder)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-http-files", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
