"""A small stand-in for the Anthropic Messages, Batches, Models and token-counting API on 127.0.0.1.

It answers like the real service closely enough for the official SDK (pointed at it through
``base_url``) to run unchanged, so tests and demos exercise judging end to end without a network.
Replies are derived from the request: every listed category is judged, and the evidence quotes the
chain-of-thought. Faults are scripted per request (``script``) or per batch entry (``batch_script``),
and every request is counted.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.fake_http import FakeHTTPServer
from workbench.attribution.prompts import COT_BEGIN, COT_END

_CATEGORY_LINE = re.compile(r"^- (\S+) \| ", re.MULTILINE)

MESSAGE_BEHAVIOURS = (
    "ok",  # a valid reply
    "429",  # rate limited
    "529",  # overloaded
    "500",  # internal error
    "401",  # bad key
    "slow",  # answers after `slow_s` seconds (a client timeout)
    "malformed_body",  # HTTP 200 whose body is not JSON
    "html_body",  # HTTP 200 with an HTML page (a proxy's or captive portal's answer)
    "bad_json",  # a reply whose text is not JSON
    "unknown_id",  # a reply naming a category that was not listed
    "missing_id",  # a reply leaving out a listed category
    "refusal",  # stop_reason refusal
    "max_tokens",  # stop_reason max_tokens with a cut-off reply
)
BATCH_OUTCOMES = ("succeeded", "errored", "expired", "canceled", "unknown_id")


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeAnthropicAPI(FakeHTTPServer):
    """The fake service; use as a context manager or call :meth:`start` / :meth:`stop`.

    Attributes
    ----------
    script
        Behaviours (see ``MESSAGE_BEHAVIOURS``) consumed one per ``POST /v1/messages``; "ok" once empty.
    batch_script
        Outcomes (see ``BATCH_OUTCOMES``) consumed one per batch entry in submission order.
    models
        Model ids ``GET /v1/models`` lists.
    expected_key
        When set, requests presenting another key (``x-api-key`` or bearer token) get HTTP 401.
    batches_end_after
        Number of ``retrieve`` calls a batch stays ``in_progress`` before it ends.
    route_faults
        Faults for the other routes, keyed by ``"METHOD /path-prefix"`` (e.g. ``"GET /v1/models"``,
        ``"POST /v1/messages/count_tokens"``, ``"POST /v1/messages/batches"``, ``"GET /v1/messages/batches"``):
        each request to a matching route consumes one of ``"401"``, ``"500"``, ``"529"``, ``"html"``.
        ``"POST /v1/messages"`` itself is scripted by ``script``.
    """

    models: list[str] = field(default_factory=lambda: ["claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"])
    expected_key: str | None = None
    slow_s: float = 1.0
    batches_end_after: int = 0
    script: deque[str] = field(default_factory=deque)
    batch_script: deque[str] = field(default_factory=deque)
    route_faults: dict[str, deque[str]] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    _batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    _cached_systems: set[str] = field(default_factory=set)

    thread_name = "fake-anthropic"

    @property
    def base_url(self) -> str:
        return self.origin

    def count(self, method: str, path_prefix: str) -> int:
        """How many requests with this method had a path starting with ``path_prefix``."""
        with self._lock:
            return sum(1 for r in self.requests if r.method == method and r.path.startswith(path_prefix))

    def message_requests(self) -> list[RecordedRequest]:
        """The ``POST /v1/messages`` requests received (interactive calls only)."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path == "/v1/messages"]

    # ------------------------------------------------------------------ HTTP

    def _route(self, handler: BaseHTTPRequestHandler, method: str, path: str, raw: bytes) -> None:
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        self._record(RecordedRequest(method, path, dict(handler.headers.items()), body))
        bearer = (handler.headers.get("authorization") or "").removeprefix("Bearer ")
        presented = handler.headers.get("x-api-key") or bearer
        if self.expected_key is not None and presented != self.expected_key:
            self._send_error(handler, 401, "authentication_error", "invalid API key")
            return
        if self._route_fault(handler, method, path):
            return
        if method == "GET" and path == "/v1/models":
            data = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z", "lifecycle": "active"}
                for m in self.models
            ]
            self._send_json(handler, {"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                                      "last_id": data[-1]["id"] if data else None})
        elif method == "POST" and path == "/v1/messages":
            self._messages(handler, body)
        elif method == "POST" and path == "/v1/messages/count_tokens":
            self._send_json(handler, {"input_tokens": _token_count(body)})
        elif method == "POST" and path == "/v1/messages/batches":
            self._send_json(handler, self._create_batch(body))
        elif method == "GET" and re.fullmatch(r"/v1/messages/batches/[^/]+", path):
            self._retrieve_batch(handler, path.rsplit("/", 1)[1])
        elif method == "GET" and re.fullmatch(r"/v1/messages/batches/[^/]+/results", path):
            self._batch_results(handler, path.split("/")[4])
        else:
            self._send_error(handler, 404, "not_found_error", f"no route {method} {path}")

    def _route_fault(self, handler: BaseHTTPRequestHandler, method: str, path: str) -> bool:
        """Answer with the next scripted fault of the longest matching route, if any."""
        with self._lock:
            routes = [r for r, q in self.route_faults.items() if q and f"{method} {path}".startswith(r)]
            if not routes or (method == "POST" and path == "/v1/messages"):
                return False
            fault = self.route_faults[max(routes, key=len)].popleft()
        if fault == "html":
            self._send_html(handler)
        else:
            kinds = {"401": "authentication_error", "500": "api_error", "529": "overloaded_error"}
            self._send_error(handler, int(fault), kinds[fault], f"scripted {fault} on {method} {path}")
        return True

    def _send_html(self, handler: BaseHTTPRequestHandler) -> None:
        page = b"<!DOCTYPE html><html><head><title>Gateway</title></head><body><h1>Sign in</h1></body></html>"
        self._send_bytes(handler, page, 200, "text/html; charset=utf-8")

    def _send_json(self, handler: BaseHTTPRequestHandler, payload: Any, status: int = 200) -> None:
        self._send_bytes(handler, json.dumps(payload).encode("utf-8"), status, "application/json")

    def _send_bytes(self, handler: BaseHTTPRequestHandler, data: bytes, status: int, content_type: str,
                    extra: dict[str, str] | None = None) -> None:
        self._send(handler, status, data, content_type=content_type,
                   headers={"request-id": f"req_fake_{len(self.requests)}", **(extra or {})})

    def _fail(self, handler: BaseHTTPRequestHandler, status: int) -> None:
        kinds = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
        self._send_error(handler, status, kinds.get(status, "api_error"), "Internal server error")

    def _send_error(self, handler: BaseHTTPRequestHandler, status: int, kind: str, message: str) -> None:
        payload = {"type": "error", "error": {"type": kind, "message": message}}
        # A tiny retry-after keeps the SDK's backoff from slowing tests down.
        self._send_bytes(handler, json.dumps(payload).encode(), status, "application/json", {"retry-after-ms": "5"})

    # ------------------------------------------------------------------ messages

    def _messages(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        behaviour = self._take(self.script)
        if behaviour in ("429", "529", "500", "401"):
            kinds = {"429": "rate_limit_error", "529": "overloaded_error", "500": "api_error", "401": "authentication_error"}
            self._send_error(handler, int(behaviour), kinds[behaviour], f"scripted {behaviour}")
            return
        if behaviour == "slow":
            time.sleep(self.slow_s)
            behaviour = "ok"
        if behaviour == "malformed_body":
            self._send_bytes(handler, b'{"id": "msg_broken", "content": [', 200, "application/json")
            return
        if behaviour == "html_body":
            self._send_html(handler)
            return
        self._send_json(handler, self.message_for(body, behaviour))

    def message_for(self, body: Any, behaviour: str = "ok") -> dict[str, Any]:
        """The Message the fake returns for a request body under a behaviour."""
        system = "".join(block.get("text", "") for block in body.get("system") or [] if isinstance(block, dict))
        user = _user_text(body)
        ids = _CATEGORY_LINE.findall(user.split("## The ALM's prediction")[0])
        cot = user.split(COT_BEGIN, 1)[-1].split(COT_END, 1)[0].strip()
        evidence = " ".join(cot.split()[:6])
        verdicts = [
            {"id": cid, "contribution": 2 if i == 0 else 0, "effect": "helped" if i == 0 else "neutral",
             "mentioned": i == 0, "evidence": evidence if i == 0 else ""}
            for i, cid in enumerate(ids)
        ]
        if behaviour == "unknown_id":
            verdicts.append({"id": "/m/not_listed", "contribution": 1, "effect": "misled", "mentioned": False, "evidence": ""})
        if behaviour == "missing_id" and verdicts:
            verdicts.pop()
        text = json.dumps({"categories": verdicts, "unlisted_cues": ["station announcement"]})
        if "error-mode taxonomy" in system:
            # the error-modes prompt (issue 18): modes read off the request, so tests can predict them
            modes = ["bird_bias"] if "bird" in cot.lower() else []
            modes += ["language_ambiguity"] if ("swedish" in cot.lower() or "speech" in cot.lower()) else []
            modes = ["refusal"] if "(refusal)" in user else modes
            text = json.dumps({"modes": modes or ["over_commitment"], "note": ""})
            if behaviour == "unknown_id":
                text = json.dumps({"modes": ["wild_guess"], "note": ""})
        stop = "end_turn"
        if behaviour == "bad_json":
            text = "Here is my analysis: the categories " + text[:40]
        elif behaviour == "refusal":
            text, stop = "", "refusal"
        elif behaviour == "max_tokens":
            text, stop = text[: len(text) // 2], "max_tokens"
        with self._lock:
            cached = system in self._cached_systems
            self._cached_systems.add(system)
        system_tokens = max(1, len(system) // 4)
        return {
            "id": f"msg_fake_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [{"type": "text", "text": text}] if text else [],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(1, len(user) // 4),
                "output_tokens": max(1, len(text) // 4),
                "cache_creation_input_tokens": 0 if cached else system_tokens,
                "cache_read_input_tokens": system_tokens if cached else 0,
            },
        }

    # ------------------------------------------------------------------ batches

    def _create_batch(self, body: Any) -> dict[str, Any]:
        with self._lock:
            batch_id = f"msgbatch_fake_{len(self._batches) + 1}"
            entries = []
            for request in body.get("requests", []):
                outcome = self.batch_script.popleft() if self.batch_script else "succeeded"
                entries.append((request["custom_id"], request["params"], outcome))
            self._batches[batch_id] = {"entries": entries, "polls": 0}
        return self._batch_object(batch_id)

    def _batch_object(self, batch_id: str) -> dict[str, Any]:
        batch = self._batches[batch_id]
        ended = batch["polls"] > self.batches_end_after
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for _cid, _params, outcome in batch["entries"]:
            if not ended:
                counts["processing"] += 1
            else:
                counts["succeeded" if outcome in ("succeeded", "unknown_id") else outcome] += 1
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:10:00Z" if ended else None,
            "results_url": f"{self.base_url}/v1/messages/batches/{batch_id}/results" if ended else None,
        }

    def _retrieve_batch(self, handler: BaseHTTPRequestHandler, batch_id: str) -> None:
        with self._lock:
            if batch_id not in self._batches:
                self._send_error(handler, 404, "not_found_error", f"no batch {batch_id}")
                return
            self._batches[batch_id]["polls"] += 1
            payload = self._batch_object(batch_id)
        self._send_json(handler, payload)

    def _batch_results(self, handler: BaseHTTPRequestHandler, batch_id: str) -> None:
        batch = self._batches.get(batch_id)
        if batch is None:
            self._send_error(handler, 404, "not_found_error", f"no batch {batch_id}")
            return
        lines = []
        for custom_id, params, outcome in batch["entries"]:
            if outcome in ("succeeded", "unknown_id"):
                result = {"type": "succeeded", "message": self.message_for(params, "ok" if outcome == "succeeded" else outcome)}
            elif outcome == "errored":
                result = {"type": "errored", "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "scripted error"}}}
            else:
                result = {"type": outcome}
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        self._send_bytes(handler, ("\n".join(lines) + "\n").encode(), 200, "application/binary")


def _user_text(body: Any) -> str:
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(block.get("text", "") for block in content if isinstance(block, dict))
    return "\n".join(parts)


def _token_count(body: Any) -> int:
    system = "".join(block.get("text", "") for block in (body or {}).get("system") or [] if isinstance(block, dict))
    return max(1, (len(system) + len(_user_text(body or {}))) // 4)
