"""Stand-ins for an OpenAI-compatible chat API and the Gemini API on 127.0.0.1, for the ALM runner.

The official SDKs (``openai``, ``google-genai``) are pointed at them through their base URLs and
run unchanged. A request is matched to a clip by the SHA-256 of the audio it carries (tests
register each clip's file with :meth:`FakeALMServer.register_audio`); behaviours are scripted per
clip key and consumed one per request. Every request is counted, so a test can prove that a
second run sent nothing.

Behaviours (``BEHAVIOURS``): ``ok`` (the clip's registered reply, else a generated JSON answer),
``fenced`` (JSON in a code fence with text around), ``nested`` (braces inside the reason and a
nested object), ``refusal`` (text without JSON), ``zero`` (coordinates 0.0, 0.0), ``429``
(rate limited with ``retry-after``), ``500``, ``503``, ``slow`` (answers after ``slow_s``),
``html`` (HTTP 200 with an HTML page), ``401``, ``always_fail`` (HTTP 500 on every request).
An unknown model gets 404; a wrong key 401 (OpenAI) or 400 ``API_KEY_INVALID`` (Gemini, as the
real service does).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.support.fake_http import FakeHTTPServer

BEHAVIOURS = ("ok", "fenced", "nested", "refusal", "zero", "429", "500", "503", "slow", "html", "401",
              "always_fail")


def generated_answer(key: str) -> dict[str, Any]:
    """A deterministic, well-formed answer for a clip (used when no real reply is registered)."""
    digest = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    return {"reason": f"Generated answer for {key}: church bells and French speech.", "city": "Lyon",
            "country": "France", "continent": "Europe",
            "longitude": round(-170 + (digest % 34000) / 100, 4), "latitude": round(-80 + (digest % 16000) / 100, 4)}


@dataclass
class Request:
    path: str
    key: str | None
    model: str | None
    body: Any


@dataclass
class FakeALMServer(FakeHTTPServer):
    """What both ALM APIs share; use :class:`FakeOpenAIServer` or :class:`FakeGeminiServer`."""

    models: list[str] = field(default_factory=lambda: ["fake-audio-model"])
    expected_key: str | None = None
    slow_s: float = 2.0
    retry_after_s: float = 0.0
    script: dict[str, deque[str]] = field(default_factory=lambda: defaultdict(deque))
    replies: dict[str, str] = field(default_factory=dict)  # clip key -> reply text for "ok"
    requests: list[Request] = field(default_factory=list)
    input_tokens: int = 900
    audio_tokens: int = 600
    output_tokens: int = 350
    _audio: dict[str, str] = field(default_factory=dict)  # sha256 of audio -> clip key
    _files: dict[str, bytes] = field(default_factory=dict)
    _uploads: dict[str, bytearray] = field(default_factory=dict)

    thread_name = "fake-alm"

    # ------------------------------------------------------------------ set-up
    def register_audio(self, data: bytes | Path, key: str) -> None:
        raw = data.read_bytes() if isinstance(data, Path) else data
        self._audio[hashlib.sha256(raw).hexdigest()] = key

    def behave(self, key: str, *behaviours: str) -> None:
        for behaviour in behaviours:
            assert behaviour in BEHAVIOURS, behaviour
            self.script[key].append(behaviour)

    @property
    def model_requests(self) -> list[Request]:
        return [r for r in self.requests if r.key is not None or r.model is not None]

    def requests_for(self, key: str) -> int:
        return sum(1 for r in self.requests if r.key == key)

    def _next(self, key: str | None) -> str:
        return self._take(self.script.get(key or ""), sticky=("always_fail",))

    def _reply_text(self, key: str | None, behaviour: str) -> str:
        answer = generated_answer(key or "unknown")
        if behaviour == "ok":
            return self.replies.get(key or "", json.dumps(answer, indent=4))
        if behaviour == "fenced":
            return f"Here is my analysis of the recording:\n\n```json\n{json.dumps(answer, indent=2)}\n```\nHope it helps."
        if behaviour == "nested":
            nested = dict(answer, reason="I heard {bells} and a {\"nested\": \"quote\"} in the reason",
                          details={"cues": {"language": "French"}})
            return "Thinking {not json} first.\n" + json.dumps(nested)
        if behaviour == "refusal":
            return "I'm sorry, but I cannot determine where this recording was made."
        if behaviour == "zero":
            return json.dumps(dict(answer, longitude=0.0, latitude=0.0))
        raise AssertionError(behaviour)

    def _fault(self, handler: BaseHTTPRequestHandler, behaviour: str) -> bool:
        """Answer a fault behaviour; False when the behaviour is a normal reply."""
        if behaviour == "429":
            self._error(handler, 429, "rate limited", headers={"retry-after": str(self.retry_after_s)})
        elif behaviour in ("500", "always_fail"):
            self._error(handler, 500, "internal error")
        elif behaviour == "503":
            self._error(handler, 503, "overloaded")
        elif behaviour == "401":
            self._error(handler, 401, "invalid key")
        elif behaviour == "html":
            self._send(handler, 200, "<html><body>Proxy login</body></html>", content_type="text/html")
        else:
            if behaviour == "slow":
                time.sleep(self.slow_s)
            return False
        return True

    def _error(self, handler: BaseHTTPRequestHandler, status: int, message: str,
               headers: dict[str, str] | None = None) -> None:  # pragma: no cover - per API
        raise NotImplementedError

    def _fail(self, handler: BaseHTTPRequestHandler, status: int) -> None:
        self._error(handler, status, "internal error")


@dataclass
class FakeOpenAIServer(FakeALMServer):
    """``POST /v1/chat/completions`` as the OpenAI API and vLLM's server answer it."""

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def _error(self, handler: BaseHTTPRequestHandler, status: int, message: str,
               headers: dict[str, str] | None = None) -> None:
        self._send(handler, status, {"error": {"message": message, "type": "error", "code": status}}, headers=headers)

    def _route(self, handler: BaseHTTPRequestHandler, method: str, path: str, raw: bytes) -> None:
        if method == "GET" and path == "/v1/models":
            self._send(handler, 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})
            return
        if method != "POST" or path != "/v1/chat/completions":
            self._error(handler, 404, f"no route {method} {path}")
            return
        body = json.loads(raw or b"{}")
        key = None
        for part in body.get("messages", [{}])[-1].get("content", []):
            if isinstance(part, dict) and part.get("type") == "input_audio":
                audio = base64.b64decode(part["input_audio"]["data"])
                key = self._audio.get(hashlib.sha256(audio).hexdigest())
        model = body.get("model")
        self._record(Request(path, key, model, body))
        auth = handler.headers.get("Authorization", "")
        if self.expected_key is not None and auth != f"Bearer {self.expected_key}":
            self._error(handler, 401, "Incorrect API key provided")
            return
        if model not in self.models:
            self._error(handler, 404, f"The model `{model}` does not exist")
            return
        behaviour = self._next(key)
        if self._fault(handler, behaviour):
            return
        text = self._reply_text(key, "ok" if behaviour == "slow" else behaviour)
        self._send(handler, 200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:8]}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": self.input_tokens, "completion_tokens": self.output_tokens,
                      "total_tokens": self.input_tokens + self.output_tokens,
                      "prompt_tokens_details": {"audio_tokens": self.audio_tokens, "cached_tokens": 0}},
        })


@dataclass
class FakeGeminiServer(FakeALMServer):
    """``models/{m}:generateContent`` and the Files API's resumable upload, as the Gemini API answers them."""

    models: list[str] = field(default_factory=lambda: ["gemini-fake"])
    uploads: int = 0
    deleted: int = 0
    batch_polls_before_end: int = 1  # GET batches/ID answers "running" this many times first
    batch_end_state: str = "BATCH_STATE_SUCCEEDED"
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"{self.origin}/"

    def _error(self, handler: BaseHTTPRequestHandler, status: int, message: str,
               headers: dict[str, str] | None = None) -> None:
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
                 500: "INTERNAL", 503: "UNAVAILABLE"}
        self._send(handler, status, {"error": {"code": status, "message": message,
                                               "status": names.get(status, "UNKNOWN")}}, headers=headers)

    def _route(self, handler: BaseHTTPRequestHandler, method: str, path: str, raw: bytes) -> None:
        if path.startswith("/upload/"):
            self._upload_start(handler, raw)
            return
        if path.startswith("/upload-session/"):
            self._upload_chunk(handler, path.rsplit("/", 1)[1], raw)
            return
        if path.startswith(("/v1beta/files/", "/v1/files/")):
            name = "files/" + path.rsplit("/", 1)[1]
            if method == "DELETE":
                self._files.pop(name, None)
                self.deleted += 1
                self._send(handler, 200, {})
            else:
                self._send(handler, 200, self._file_json(name))
            return
        if method == "GET" and path.startswith(("/v1beta/batches/", "/v1/batches/")):
            self._batch_get(handler, "batches/" + path.rsplit("/", 1)[1])
            return
        if method == "POST" and ":batchGenerateContent" in path:
            self._batch_create(handler, path.split("/models/", 1)[1].split(":", 1)[0], json.loads(raw or b"{}"))
            return
        if method != "POST" or ":generateContent" not in path:
            self._error(handler, 404, f"no route {method} {path}")
            return
        model = path.split("/models/", 1)[1].split(":", 1)[0]
        body = json.loads(raw or b"{}")
        key = self._key_of(body)
        self._record(Request(path, key, model, body))
        if self.expected_key is not None and handler.headers.get("x-goog-api-key") != self.expected_key:
            self._send(handler, 400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                                "status": "INVALID_ARGUMENT",
                                                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                                             "reason": "API_KEY_INVALID"}]}})
            return
        if model not in self.models:
            self._error(handler, 404, f"models/{model} is not found for API version v1beta")
            return
        behaviour = self._next(key)
        if self._fault(handler, behaviour):
            return
        text = self._reply_text(key, "ok" if behaviour == "slow" else behaviour)
        self._send(handler, 200, self._response(text, model))

    def _response(self, text: str, model: str) -> dict[str, Any]:
        return {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": self.input_tokens, "candidatesTokenCount": self.output_tokens,
                              "totalTokenCount": self.input_tokens + self.output_tokens,
                              "promptTokensDetails": [{"modality": "TEXT", "tokenCount": self.input_tokens - self.audio_tokens},
                                                      {"modality": "AUDIO", "tokenCount": self.audio_tokens}]},
            "modelVersion": model,
        }

    def _key_of(self, body: dict[str, Any]) -> str | None:
        key = None
        for part in body.get("contents", [{}])[-1].get("parts", []):
            # The API reads protobuf JSON: camelCase and snake_case names are both accepted.
            inline = part.get("inlineData") or part.get("inline_data")
            file_data = part.get("fileData") or part.get("file_data")
            if inline:
                # google-genai sends bytes as URL-safe base64 without padding.
                data = inline["data"]
                audio = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
                key = self._audio.get(hashlib.sha256(audio).hexdigest())
            elif file_data:
                uri = file_data.get("fileUri") or file_data.get("file_uri")
                name = "files/" + uri.rsplit("/", 1)[1]
                key = self._audio.get(hashlib.sha256(self._files.get(name, b"")).hexdigest())
        return key

    # ------------------------------------------------------------------ Batch API
    def _batch_create(self, handler: BaseHTTPRequestHandler, model: str, body: dict[str, Any]) -> None:
        if self.expected_key is not None and handler.headers.get("x-goog-api-key") != self.expected_key:
            self._error(handler, 401, "invalid key")
            return
        entries = body["batch"]["inputConfig"]["requests"]["requests"]
        name = f"batches/{uuid.uuid4().hex[:10]}"
        requests = []
        for entry in entries:
            key = self._key_of(entry["request"])
            self._record(Request("batch", key, model, entry))
            requests.append((key, entry.get("metadata")))
        self.batches[name] = {"model": model, "requests": requests, "polls": 0}
        self._send(handler, 200, {"name": name, "metadata": {"name": name, "state": "BATCH_STATE_PENDING",
                                                             "model": f"models/{model}"}})

    def _batch_get(self, handler: BaseHTTPRequestHandler, name: str) -> None:
        batch = self.batches.get(name)
        if batch is None:
            self._error(handler, 404, f"{name} not found")
            return
        batch["polls"] += 1
        metadata: dict[str, Any] = {"name": name, "model": f"models/{batch['model']}"}
        if batch["polls"] <= self.batch_polls_before_end:
            metadata["state"] = "BATCH_STATE_RUNNING"
        else:
            metadata["state"] = self.batch_end_state
            if self.batch_end_state == "BATCH_STATE_SUCCEEDED":
                results = []
                for key, meta in batch["requests"]:
                    behaviour = self._next(key)
                    if behaviour in ("500", "503", "429", "always_fail", "html", "401"):
                        results.append({"error": {"code": 500, "message": "internal error"}, "metadata": meta})
                    else:
                        text = self._reply_text(key, "ok" if behaviour == "slow" else behaviour)
                        results.append({"response": self._response(text, batch["model"]), "metadata": meta})
                metadata["output"] = {"inlinedResponses": {"inlinedResponses": results}}
        self._send(handler, 200, {"name": name, "metadata": metadata})

    def _file_json(self, name: str) -> dict[str, Any]:
        data = self._files.get(name, b"")
        return {"name": name, "uri": f"{self.origin}/v1beta/{name}", "mimeType": "audio/wav",
                "sizeBytes": str(len(data)), "state": "ACTIVE"}

    def _upload_start(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        session = uuid.uuid4().hex[:12]
        self._uploads[session] = bytearray()
        self._send(handler, 200, {}, headers={"x-goog-upload-url": f"{self.origin}/upload-session/{session}",
                                              "x-goog-upload-status": "active"})

    def _upload_chunk(self, handler: BaseHTTPRequestHandler, session: str, raw: bytes) -> None:
        buffer = self._uploads[session]
        buffer.extend(raw)
        if "finalize" not in (handler.headers.get("X-Goog-Upload-Command") or ""):
            self._send(handler, 200, {}, headers={"x-goog-upload-status": "active"})
            return
        name = f"files/{session}"
        self._files[name] = bytes(buffer)
        self.uploads += 1
        self._send(handler, 200, {"file": self._file_json(name)}, headers={"x-goog-upload-status": "final"})
