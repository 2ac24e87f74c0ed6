"""Gemini through the official ``google-genai`` SDK: inline audio or the Files API, structured output.

A clip up to the configured inline limit is sent as inline bytes; a larger one is uploaded
through the Files API, used by its URI and deleted afterwards. The answer is asked for as JSON
with the response schema (Gemini supports structured output), and read through the same
parser as every other provider. The SDK's retries are off (its default is none); the runner
retries.
"""

from __future__ import annotations

import time
from typing import Any

from workbench.alm.config import ProviderSettings
from workbench.alm.providers import AlmReply, AlmRequest, AnswerError, RetryableError, RunStopped, retry_after
from workbench.llm.errors import error_words, not_reached, timeout_words
from workbench.attribution.secrets import quiet_sdk_loggers, redact

_FILE_WAIT_S = 60.0
_REFUSAL_FINISH = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION"}


def _retry_delay(details: Any) -> float | None:
    """Seconds of a ``google.rpc.RetryInfo`` ``retryDelay`` ("12s") in an error body, if any."""
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details", []) or []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                return None
    return None


class GeminiProvider:
    """Gemini models (``GEMINI_API_KEY``); ``base_url`` points the SDK elsewhere (a test server)."""

    name = "gemini"
    accepted_formats = ("mp3", "wav", "flac", "ogg", "aac", "aiff")

    def __init__(self, *, api_key: str, base_url: str | None, settings: ProviderSettings,
                 timeout_option: str = "timeout_s of [providers.gemini] in alm.toml") -> None:
        from google import genai
        from google.genai import types

        quiet_sdk_loggers()
        self._secret = api_key
        self._inline_max = settings.max_inline_audio_bytes
        self._timeout = timeout_words(settings.timeout_s, timeout_option)
        options = types.HttpOptions(base_url=base_url, timeout=int(settings.timeout_s * 1000))
        self.client = genai.Client(api_key=api_key, http_options=options)

    def close(self) -> None:
        self.client.close()

    def _clean(self, text: str) -> str:
        return redact(text, [self._secret]) or ""

    def _call(self, request: AlmRequest, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from google.genai import errors

        try:
            return fn(*args, **kwargs)
        except errors.APIError as exc:
            code = int(exc.code or 0)
            words = error_words(exc.details, fallback=error_words(str(exc.message or "")))
            text = self._clean(f"HTTP {code} {exc.status or ''}: {words}".replace("  ", " "))
            details = str(exc.details)
            if code in (401, 403) or "API_KEY_INVALID" in details or "API key not valid" in details:
                raise RunStopped(f"Gemini refused the API key ({text}); check GEMINI_API_KEY or the keyring. "
                                 "The run stopped; rerun to resume") from None
            if code == 404:
                raise RunStopped(f"Gemini does not know model {request.api_model!r} (HTTP 404); check "
                                 "--api-model. The run stopped") from None
            if code in (408, 409, 429, 500, 502, 503, 504, 529):
                wait = retry_after(getattr(exc, "response", None)) or _retry_delay(exc.details)
                raise RetryableError(text, wait) from None
            raise AnswerError(text) from None
        except Exception as exc:  # noqa: BLE001 - sorted by kind below; none may crash the run
            kind = type(exc).__name__
            if "Timeout" in kind:
                raise RetryableError(self._timeout) from None
            if "Connect" in kind or "RemoteProtocol" in kind or isinstance(exc, ConnectionError):
                raise RetryableError(self._clean(f"connection error: {kind}"), connection=not_reached(exc)) from None
            # An HTTP 200 whose body is not the API's JSON ends here (a JSON decode error).
            raise AnswerError(self._clean(f"the API's answer could not be read ({kind}: {str(exc)[:120]}); is "
                                          "--base-url (or a proxy) answering instead of the API?")) from None

    def upload(self, request: AlmRequest) -> Any:
        """The recording uploaded through the Files API (waits while it is processed)."""
        import io

        from google.genai import types

        audio = request.audio
        uploaded = self._call(request, self.client.files.upload, file=io.BytesIO(audio.data),
                              config=types.UploadFileConfig(mime_type=audio.mime_type))
        deadline = time.monotonic() + _FILE_WAIT_S
        while str(getattr(uploaded.state, "value", uploaded.state) or "") == "PROCESSING":
            if time.monotonic() > deadline:
                raise RetryableError("the Files API did not finish processing the upload in time")
            time.sleep(1.0)
            uploaded = self._call(request, self.client.files.get, name=uploaded.name)
        if str(getattr(uploaded.state, "value", uploaded.state) or "") == "FAILED":
            raise AnswerError("the Files API could not process the recording")
        return uploaded

    def delete(self, name: str) -> None:
        """Delete an upload (best effort: an upload left behind expires on its own after 48 h)."""
        try:
            self.client.files.delete(name=name)
        except Exception:  # noqa: BLE001, S110
            pass

    def contents_and_config(self, request: AlmRequest, audio_part: Any) -> tuple[list[Any], Any]:
        """The request's contents (text, audio, text) and generation config (structured output)."""
        from google.genai import types

        from workbench.alm.parse import RESPONSE_SCHEMA

        parts = [types.Part.from_text(text=request.prompt.before), audio_part]
        if request.prompt.after:
            parts.append(types.Part.from_text(text=request.prompt.after))
        entry = request.entry
        config = types.GenerateContentConfig(
            max_output_tokens=entry.max_output_tokens,
            temperature=entry.temperature,
            seed=request.seed,
            response_mime_type="application/json" if entry.structured_output else None,
            response_json_schema=RESPONSE_SCHEMA if entry.structured_output else None,
        )
        return [types.Content(role="user", parts=parts)], config

    def create_batch(self, request: AlmRequest, requests: list[Any], display_name: str) -> Any:
        """Submit inlined requests as one Batch API job (``request`` names the model and is used in messages)."""
        from google.genai import types

        return self._call(request, self.client.batches.create, model=request.api_model, src=requests,
                          config=types.CreateBatchJobConfig(display_name=display_name))

    def get_batch(self, request: AlmRequest, name: str) -> Any:
        """The batch job ``name`` with its state (and its results once it has ended)."""
        return self._call(request, self.client.batches.get, name=name)

    def file_part(self, uploaded: Any, mime_type: str) -> Any:
        from google.genai import types

        return types.Part.from_uri(file_uri=uploaded.uri, mime_type=uploaded.mime_type or mime_type)

    def ask(self, request: AlmRequest) -> AlmReply:
        from google.genai import types

        audio = request.audio
        uploaded = None
        if len(audio.data) <= self._inline_max:
            part, transport = types.Part.from_bytes(data=audio.data, mime_type=audio.mime_type), "inline"
        else:
            uploaded = self.upload(request)
            part, transport = self.file_part(uploaded, audio.mime_type), "files"
        contents, config = self.contents_and_config(request, part)
        try:
            response = self._call(request, self.client.models.generate_content, model=request.api_model,
                                  contents=contents, config=config)
        finally:
            if uploaded is not None:
                self.delete(uploaded.name)
        return reply_from_response(response, transport)


def reply_from_response(response: Any, transport: str) -> AlmReply:
    """An :class:`AlmReply` from a ``GenerateContentResponse`` (a sync reply or a batch result).

    Raises
    ------
    AnswerError
        The object is not a response (an HTTP 200 whose body was not the API's JSON).
    """
    if isinstance(response, (str, bytes)) or not hasattr(response, "candidates"):
        raise AnswerError("the server answered HTTP 200 with a body that is not the API's JSON")
    usage = response.usage_metadata
    audio_tokens = None
    if usage is not None:
        for detail in usage.prompt_tokens_details or []:
            if str(getattr(detail.modality, "value", detail.modality)) == "AUDIO":
                audio_tokens = detail.token_count
    output_tokens = None
    if usage is not None and (usage.candidates_token_count is not None or usage.thoughts_token_count):
        # Thinking tokens are billed as output.
        output_tokens = int(usage.candidates_token_count or 0) + int(usage.thoughts_token_count or 0)
    candidates = response.candidates or []
    block = getattr(response.prompt_feedback, "block_reason", None) if response.prompt_feedback else None
    finish = None
    text = ""
    if candidates:
        candidate = candidates[0]
        finish = str(getattr(candidate.finish_reason, "value", candidate.finish_reason) or "") or None
        content = candidate.content
        text = "".join(p.text or "" for p in (content.parts or []) if not getattr(p, "thought", False)) if content else ""
    refusal = None
    if block is not None:
        refusal = f"prompt blocked ({getattr(block, 'value', block)})"
    elif finish in _REFUSAL_FINISH:
        refusal = f"answer withheld ({finish})"
    return AlmReply(
        text=text,
        input_tokens=usage.prompt_token_count if usage is not None else None,
        audio_tokens=audio_tokens,
        output_tokens=output_tokens,
        finish_reason=finish,
        refusal=refusal,
        transport=transport,
    )
