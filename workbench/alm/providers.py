"""ALM providers: the interface, the audio they are sent, their faults, and the OpenAI SDK path.

A provider turns (prompt, audio) into a reply: the text, token counts, why it stopped and how
the audio travelled. It does *not* retry: the engine (:mod:`workbench.llm.engine`) retries every
provider the same way (backoff, ``retry-after``), so the SDKs' own retries are switched off.
Faults come out in the engine's vocabulary (:mod:`workbench.llm.errors`):

- :class:`RetryableError` — 429, 5xx/529/503, 408/409, time-outs, connection errors (with the
  server's ``retry-after`` when it sent one);
- :class:`AnswerError` — this clip failed for good (HTTP 400, an HTTP 200 whose body is not the
  API's JSON, a reply without choices): a stored failure, the run goes on;
- :class:`RunStopped` — 401/403 (key) or 404 (model): the whole run stops with one line.

``openai`` and ``openai-compatible`` (a local vLLM server, a hosted gateway) share
:class:`OpenAIProvider`: AGL1K's ``chat.completions`` message with ``input_audio``.
Gemini lives in :mod:`workbench.alm.gemini`, local models in :mod:`workbench.alm.local`; the
backend of a provider name is chosen in :mod:`workbench.alm.backends`.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from workbench.alm.config import ModelEntry, ProviderSettings
from workbench.alm.prompts import AlmPrompt
from workbench.attribution.secrets import api_key as read_api_key
from workbench.attribution.secrets import quiet_sdk_loggers, redact
from workbench.llm.errors import (
    AnswerError,
    Provider,
    RetryableError,
    RunStopped,
    connection_problem,
    error_words,
    not_reached,
    retry_after,
    timeout_words,
)
from workbench.llm.urls import safe_url

__all__ = ["AlmProvider", "AlmReply", "AlmRequest", "AnswerError", "AudioPayload", "OpenAIProvider", "RetryableError",
           "RunStopped", "read_audio", "resolve_key", "retry_after"]

MIME_TYPES = {
    "mp3": "audio/mp3", "wav": "audio/wav", "flac": "audio/flac", "ogg": "audio/ogg",
    "aac": "audio/aac", "aiff": "audio/aiff", "aif": "audio/aiff", "m4a": "audio/aac",
}
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True)
class AudioPayload:
    """The bytes sent for one clip and what they are (recorded with the answer)."""

    path: Path
    data: bytes
    format: str  # mp3 | wav | flac | ...
    sha256: str  # of the original file: the fingerprint's audio hash
    transcoded: bool = False
    seconds: float | None = None

    @property
    def mime_type(self) -> str:
        return MIME_TYPES.get(self.format, f"audio/{self.format}")

    def record(self, transport: str) -> dict[str, Any]:
        """What was sent, for ``alm_answer.audio``."""
        return {"file": self.path.name, "bytes": len(self.data), "sha256": self.sha256, "format": self.format,
                "transcoded": self.transcoded, "transport": transport, "seconds": self.seconds}


def read_audio(path: Path, accepted: tuple[str, ...], *, seconds: float | None = None) -> AudioPayload:
    """The file's own bytes when its format is accepted; else a WAV transcode (recorded as such).

    Raises
    ------
    AnswerError
        The file cannot be read or decoded (a per-clip failure).
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AnswerError(f"cannot read the recording {path} ({exc.strerror or exc})") from None
    if not data:
        raise AnswerError(f"the recording {path} is empty (0 bytes)")
    digest = hashlib.sha256(data).hexdigest()
    suffix = path.suffix.lower().lstrip(".")
    if suffix in accepted:
        return AudioPayload(path, data, suffix, digest, False, seconds)
    try:
        import soundfile

        samples, rate = soundfile.read(io.BytesIO(data), always_2d=True)
        buffer = io.BytesIO()
        soundfile.write(buffer, samples, rate, format="WAV", subtype="PCM_16")
    except Exception as exc:  # noqa: BLE001 - any decoder failure is this clip's failure
        raise AnswerError(f"the provider does not take .{suffix} audio and {path.name} could not be "
                          f"converted to WAV ({type(exc).__name__}: {exc})") from None
    return AudioPayload(path, buffer.getvalue(), "wav", digest, True, seconds or len(samples) / rate)


@dataclass(frozen=True)
class AlmRequest:
    """One question about one clip."""

    key: str
    prompt: AlmPrompt
    audio: AudioPayload
    api_model: str
    entry: ModelEntry
    seed: int | None = None


@dataclass(frozen=True)
class AlmReply:
    """What came back: text, tokens (None when the provider does not say), stop reason, audio transport."""

    text: str
    input_tokens: int | None = None
    audio_tokens: int | None = None  # the part of input_tokens that was audio
    output_tokens: int | None = None
    finish_reason: str | None = None
    refusal: str | None = None
    transport: str = "inline"


class AlmProvider(Provider, Protocol):
    """What every ALM backend offers (the engine's :class:`~workbench.llm.errors.Provider` and ``ask``)."""

    accepted_formats: tuple[str, ...]

    def ask(self, request: AlmRequest) -> AlmReply:
        """Send one request once (no retries) and return the reply."""
        ...


def resolve_key(settings: ProviderSettings, provider: str, api_key_env: str | None) -> str | None:
    """The key for a hosted provider: environment or keyring, never stored (see attribution.secrets).

    Raises
    ------
    RunStopped
        ``openai`` or ``gemini`` without a key anywhere; ``--api-key-env`` naming an unset variable.
    """
    env = api_key_env or settings.api_key_env
    if provider == "openai-compatible":
        if env is None:
            return None  # a local server (vLLM) needs no key
        key, _source = read_api_key(env, env.lower())
        if not key:
            raise RunStopped(f"no API key: the variable {env} named by --api-key-env is not set")
        return key
    if provider in ("openai", "gemini"):
        env = env or ("OPENAI_API_KEY" if provider == "openai" else "GEMINI_API_KEY")
        key, _source = read_api_key(env, provider)
        if not key:
            raise RunStopped(f"no {provider} API key: set {env} or store it in the OS keyring "
                             f"(`keyring set aglw {provider}`); --dry-run works without one")
        return key
    return None


def _sdk_words(message: object) -> str:
    """An SDK's message without its "Error code: 500 - " prefix (the body itself is put in words)."""
    text = str(message or "")
    if text.startswith("Error code:") and " - " in text:
        text = text.split(" - ", 1)[1]
    return error_words(text)


def _not_the_api(body: Any) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    kind = "an HTML page" if "<html" in text[:500].lower() else "a body that is not the API's JSON"
    return f"the server answered HTTP 200 with {kind}: {text[:80]!r}"


class OpenAIProvider:
    """``openai`` and ``openai-compatible`` through the official SDK (AGL1K's ``input_audio`` message).

    Parameters
    ----------
    provider
        ``"openai"`` or ``"openai-compatible"`` (named in messages).
    api_key
        The key; a local server without one gets a placeholder the SDK insists on.
    base_url
        The server (``http://127.0.0.1:8000/v1`` for vLLM); default: OpenAI's.
    timeout_s, timeout_option
        Per-request time-out, and the setting that sets it (named when a request times out).
    """

    accepted_formats = ("mp3", "wav")

    def __init__(self, provider: str, *, api_key: str | None, base_url: str | None, timeout_s: float,
                 http_client: Any = None, timeout_option: str = "timeout_s in alm.toml") -> None:
        import openai

        quiet_sdk_loggers()
        self.name = provider
        self._timeout = timeout_words(timeout_s, timeout_option)
        self._secret = api_key
        self._where = safe_url(base_url) or "api.openai.com"
        # max_retries=0: the runner retries (one policy for every provider, retry-after honoured).
        self.client = openai.OpenAI(api_key=api_key or "no-key", base_url=base_url, max_retries=0,
                                    timeout=timeout_s, http_client=http_client)

    def close(self) -> None:
        self.client.close()

    def _clean(self, text: str) -> str:
        return redact(text, [self._secret]) or ""

    def _params(self, request: AlmRequest) -> dict[str, Any]:
        audio = {"type": "input_audio", "input_audio": {
            "data": base64.b64encode(request.audio.data).decode("ascii"), "format": request.audio.format}}
        content: list[dict[str, Any]] = [{"type": "text", "text": request.prompt.before}, audio]
        if request.prompt.after:
            content.append({"type": "text", "text": request.prompt.after})
        params: dict[str, Any] = {
            "model": request.api_model,
            "messages": [{"role": "user", "content": content}],
            "max_completion_tokens": request.entry.max_output_tokens,
        }
        if request.seed is not None:
            params["seed"] = request.seed
        if request.entry.temperature is not None:
            params["temperature"] = request.entry.temperature
        if request.entry.structured_output:
            from workbench.alm.parse import RESPONSE_SCHEMA

            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "location", "strict": True, "schema": RESPONSE_SCHEMA}}
        return params

    def ask(self, request: AlmRequest, *, on_body: Callable[[bytes], None] | None = None) -> AlmReply:
        """Send once; ``on_body`` gets the response's raw body before the SDK parses it (the journal)."""
        import openai

        try:
            if on_body is None:
                completion = self.client.chat.completions.create(**self._params(request))
            else:
                raw = self.client.chat.completions.with_raw_response.create(**self._params(request))
                on_body(raw.content)
                completion = raw.parse()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise RunStopped(f"{self._where} refused the API key (HTTP {exc.status_code}); check the key "
                             "(environment or keyring). The run stopped; rerun to resume") from None
        except openai.NotFoundError:
            raise RunStopped(f"{self._where} does not serve model {request.api_model!r} (HTTP 404); check "
                             "--api-model (and --base-url). The run stopped") from None
        except openai.APITimeoutError:
            raise RetryableError(self._timeout) from None
        except openai.APIConnectionError as exc:
            raise RetryableError(self._clean(f"connection error: {connection_problem(exc)}"),
                                 connection=not_reached(exc)) from None
        except openai.APIStatusError as exc:
            reason = self._clean(f"HTTP {exc.status_code}: {error_words(exc.body, fallback=_sdk_words(exc.message))}")
            if exc.status_code in RETRY_STATUS:
                raise RetryableError(reason, retry_after(exc.response)) from None
            raise AnswerError(reason) from None
        except openai.APIResponseValidationError as exc:
            raise AnswerError(self._clean(f"malformed response from the API: {exc.message}")) from None
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            # The SDK chokes this way on an HTTP 200 whose body is not the API's JSON.
            raise AnswerError(f"the API's answer could not be read ({type(exc).__name__}); is --base-url "
                              "(or a proxy) answering instead of the API?") from None
        return self._reply(completion)

    def reply_from_body(self, body: str) -> AlmReply:
        """The reply a journaled raw body holds (parsed as the SDK would)."""
        import json

        import openai

        try:
            data = json.loads(body)
            completion = openai.types.chat.ChatCompletion.model_validate(data)
        except ValueError:
            raise AnswerError(_not_the_api(body)) from None
        return self._reply(completion)

    def _reply(self, completion: Any) -> AlmReply:
        if isinstance(completion, (str, bytes)) or not hasattr(completion, "choices"):
            raise AnswerError(_not_the_api(completion))
        if not completion.choices:
            raise AnswerError("the reply has no choices")
        choice = completion.choices[0]
        message = choice.message
        usage = completion.usage
        details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
        return AlmReply(
            text=str(getattr(message, "content", None) or ""),
            input_tokens=getattr(usage, "prompt_tokens", None) if usage is not None else None,
            audio_tokens=getattr(details, "audio_tokens", None) if details is not None else None,
            output_tokens=getattr(usage, "completion_tokens", None) if usage is not None else None,
            finish_reason=choice.finish_reason,
            refusal=getattr(message, "refusal", None) or None,
        )
