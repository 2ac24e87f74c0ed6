"""Judge providers: the interface, the official Anthropic SDK, and an OpenAI-compatible server.

A provider turns a rendered prompt into a reply (text, stop reason, token usage). Transient faults
(408/409/429/5xx/529, connection errors, timeouts) are retried with backoff inside the provider; what
is left after the retries comes out as :class:`ProviderCallError`, an authentication failure as
:class:`JudgeAuthError` (which stops a run).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from workbench.attribution.config import JudgeConfig
from workbench.attribution.prompts import RenderedPrompt
from workbench.attribution.secrets import anthropic_api_key, quiet_sdk_loggers, redact
from workbench.errors import AglwError
from workbench.llm.errors import (
    AnswerError,
    Provider,
    RunStopped,
    connection_problem,
    error_words,
    not_reached,
    retry_after,
    timeout_words,
)
from workbench.llm.urls import refuse_query, safe_url

if TYPE_CHECKING:
    import httpx2

# The anthropic SDK and httpx2 are imported where a provider is built or called, never at module
# level: together they take about a second and 100+ MB to import, which the GUI's start-up and
# commands that never reach a judge should not pay.

RETRY_NOTE = (
    "\n\nA previous reply to this request was rejected: {reason}. "
    "Reply again with the corrected JSON object only."
)


class JudgeAuthError(RunStopped):
    """The provider refused the credentials: the whole run stops."""


class ProviderCallError(AnswerError):
    """A request failed after the provider's retries; the reason is safe to store.

    ``connection`` marks a server never reached (refused, DNS, TLS): on a run's first requests the
    engine stops the run instead of failing every clip in turn. ``transient`` marks a transient fault
    (429, 5xx, a time-out, a lost connection) left after the retries: the server's failure, which the
    engine counts towards stopping a run on a broken server.
    """

    def __init__(self, reason: str, *, connection: bool = False, transient: bool = False) -> None:
        super().__init__(reason, transient=transient or connection)
        self.connection = connection


@dataclass(frozen=True)
class TokenUsage:
    """Tokens of one call (cache writes and reads counted apart from plain input)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


@dataclass(frozen=True)
class JudgeRequest:
    """One request: the judge, its rendered prompt, the output schema and, for a retry, the reason."""

    judge: JudgeConfig
    prompt: RenderedPrompt
    schema: dict[str, Any]
    retry_reason: str | None = None

    @property
    def user_text(self) -> str:
        if self.retry_reason is None:
            return self.prompt.user
        return self.prompt.user + RETRY_NOTE.format(reason=self.retry_reason)


@dataclass(frozen=True)
class ProviderReply:
    """What came back: the reply text, why generation stopped, and the tokens used."""

    text: str
    stop_reason: str | None
    usage: TokenUsage
    refusal: bool = False
    truncated: bool = False

    def as_record(self) -> dict[str, Any]:
        """Plain values (a journal entry)."""
        return {"text": self.text, "stop_reason": self.stop_reason, "usage": self.usage.as_dict(),
                "refusal": self.refusal, "truncated": self.truncated}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ProviderReply:
        """The reply :meth:`as_record` wrote."""
        return cls(text=record["text"], stop_reason=record.get("stop_reason"),
                   usage=TokenUsage(**(record.get("usage") or {})), refusal=bool(record.get("refusal")),
                   truncated=bool(record.get("truncated")))


@dataclass(frozen=True)
class BatchState:
    """Progress of a submitted batch."""

    batch_id: str
    ended: bool
    counts: dict[str, int]


@dataclass(frozen=True)
class BatchItem:
    """One result of a batch, matched to its request by ``custom_id``."""

    custom_id: str
    outcome: str  # succeeded | errored | expired | canceled
    reply: ProviderReply | None = None
    error: str | None = None


@runtime_checkable
class JudgeProvider(Provider, Protocol):
    """What a judge backend offers (the engine's :class:`~workbench.llm.errors.Provider` plus the
    judges' calls); the Anthropic SDK and OpenAI-compatible servers implement it."""

    supports_batch: bool

    def list_models(self) -> set[str]:
        """Model ids the provider offers to this key."""
        ...

    def complete(self, request: JudgeRequest) -> ProviderReply:
        """Send one request (with retries) and return the reply."""
        ...

    def count_tokens(self, request: JudgeRequest) -> int | None:
        """Input tokens of a request as the provider counts them, or None when it cannot."""
        ...

    def submit_batch(self, requests: list[tuple[str, JudgeRequest]]) -> str:
        """Submit requests keyed by custom id; returns the batch id."""
        ...

    def batch_state(self, batch_id: str) -> BatchState:
        """Whether a batch has ended, with its request counts."""
        ...

    def batch_results(self, batch_id: str) -> Iterator[BatchItem]:
        """The results of an ended batch, in any order."""
        ...


# --------------------------------------------------------------------------- Anthropic


def _anthropic_usage(usage: Any) -> TokenUsage:
    if usage is None:
        return TokenUsage()
    return TokenUsage(
        input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        cache_creation_input_tokens=int(getattr(usage, "cache_creation_input_tokens", 0) or 0),
        cache_read_input_tokens=int(getattr(usage, "cache_read_input_tokens", 0) or 0),
    )


def _expect_object(value: Any, attribute: str, what: str) -> Any:
    """``value`` when it is the SDK object expected; a failed call when the server sent something else.

    A proxy or captive portal can answer HTTP 200 with an HTML page; the SDK then hands back the
    body as a string instead of raising.
    """
    if isinstance(value, (str, bytes)) or not hasattr(value, attribute):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        kind = "an HTML page" if "<html" in text[:500].lower() else "a body that is not the API's JSON"
        raise ProviderCallError(f"the server answered HTTP 200 with {kind} instead of {what}: {text[:80]!r}")
    return value


def _anthropic_reply(message: Any) -> ProviderReply:
    text = "".join(getattr(block, "text", "") for block in message.content if block.type == "text")
    stop = message.stop_reason
    return ProviderReply(
        text=text,
        stop_reason=stop,
        usage=_anthropic_usage(message.usage),
        refusal=stop == "refusal",
        truncated=stop in ("max_tokens", "model_context_window_exceeded"),
    )


class AnthropicProvider:
    """Judges on Anthropic models through the official SDK (its own retries and timeouts).

    Parameters
    ----------
    api_key
        The key; default: ``ANTHROPIC_API_KEY``, else the OS keyring.
    base_url
        Another endpoint (a proxy, or a test server); default: the SDK's.
    max_retries, timeout_s
        Passed to the SDK client.
    http_client
        An ``httpx2.Client`` to use (tests inject a mock transport here).
    timeout_option
        The setting of ``timeout_s`` (named when a request times out).
    """

    name = "anthropic"
    supports_batch = True

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout_s: float = 120.0,
        http_client: httpx2.Client | None = None,
        timeout_option: str = "timeout_s in judges.toml",
    ) -> None:
        quiet_sdk_loggers()
        self._timeout = timeout_words(timeout_s, timeout_option)
        if api_key is None:
            api_key, _source = anthropic_api_key()
        if not api_key:
            raise JudgeAuthError(
                "no Anthropic API key: set ANTHROPIC_API_KEY or store the key in the OS keyring "
                "(`keyring set aglw anthropic`); --dry-run works without one"
            )
        self._secret = api_key
        import anthropic

        # An explicit key keeps the SDK from reading profiles or other credentials on its own.
        self.client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout_s,
            http_client=http_client,
        )

    def close(self) -> None:
        """Close the SDK client's connection pool (idempotent)."""
        self.client.close()

    def _clean(self, text: str) -> str:
        return redact(text, [self._secret]) or ""

    def _params(self, request: JudgeRequest) -> dict[str, Any]:
        return {
            "model": request.judge.model,
            "max_tokens": request.judge.max_tokens,
            # The system block is identical for every clip, so it is marked for prompt caching.
            "system": [
                {"type": "text", "text": request.prompt.system, "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [{"role": "user", "content": request.user_text}],
            "output_config": {"format": {"type": "json_schema", "schema": request.schema}},
        }

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import anthropic

        try:
            return fn(*args, **kwargs)
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
            raise JudgeAuthError(
                f"Anthropic refused the API key (HTTP {exc.status_code}); check ANTHROPIC_API_KEY or the "
                "keyring entry (service 'aglw', user 'anthropic'). The run stopped; rerun to resume"
            ) from None
        except anthropic.APITimeoutError:
            raise ProviderCallError(f"{self._timeout} after the SDK's retries", transient=True) from None
        except anthropic.APIConnectionError as exc:
            raise ProviderCallError(self._clean(f"connection error after the SDK's retries: {connection_problem(exc)}"),
                                    connection=not_reached(exc), transient=True) from None
        except anthropic.APIStatusError as exc:
            words = error_words(exc.body, fallback=error_words(str(exc.message).split(" - ", 1)[-1]))
            raise ProviderCallError(self._clean(f"HTTP {exc.status_code} after the SDK's retries: {words}"),
                                    transient=exc.status_code in _RETRY_STATUS) from None
        except anthropic.APIResponseValidationError as exc:
            raise ProviderCallError(self._clean(f"malformed response from the API: {exc.message}")) from None
        except (anthropic.AnthropicError, ValueError) as exc:
            raise ProviderCallError(self._clean(f"{type(exc).__name__}: {exc}")) from None
        except (AttributeError, TypeError, KeyError) as exc:
            # The SDK chokes this way on an HTTP 200 whose body is not the API's JSON (an HTML page).
            raise ProviderCallError(
                self._clean(f"the API's answer could not be read ({type(exc).__name__}: {exc}); "
                            "is --base-url (or a proxy) answering instead of the API?")
            ) from None

    def list_models(self) -> set[str]:
        try:
            models = self._call(lambda: list(self.client.models.list(limit=1000)))
            return {_expect_object(model, "id", "the model list").id for model in models}
        except ProviderCallError as exc:
            raise ProviderCallError(f"reading the models list failed: {exc}", connection=exc.connection,
                                    transient=exc.transient) from None

    def complete(self, request: JudgeRequest, *, on_body: Callable[[bytes], None] | None = None) -> ProviderReply:
        """Send one request; ``on_body`` gets the raw body before the SDK parses it (the journal)."""
        if on_body is None:
            message = self._call(self.client.messages.create, **self._params(request))
        else:
            raw = self._call(self.client.messages.with_raw_response.create, **self._params(request))
            on_body(raw.read())
            message = self._call(raw.parse)
        return _anthropic_reply(_expect_object(message, "content", "a Message"))

    def reply_from_body(self, body: str) -> ProviderReply:
        """The reply a journaled raw body holds."""
        import anthropic

        try:
            message = anthropic.types.Message.model_validate(json.loads(body))
        except ValueError:
            _expect_object(body, "content", "a Message")
            raise ProviderCallError("malformed response: the body is not a Message") from None
        return _anthropic_reply(message)

    def count_tokens(self, request: JudgeRequest) -> int | None:
        params = self._params(request)
        params.pop("max_tokens")
        return int(self._call(self.client.messages.count_tokens, **params).input_tokens)

    def submit_batch(self, requests: list[tuple[str, JudgeRequest]]) -> str:
        batch = self._call(
            self.client.messages.batches.create,
            requests=[{"custom_id": cid, "params": self._params(req)} for cid, req in requests],
        )
        return str(batch.id)

    def batch_state(self, batch_id: str) -> BatchState:
        batch = self._call(self.client.messages.batches.retrieve, batch_id)
        counts = batch.request_counts
        return BatchState(
            batch_id=batch_id,
            ended=batch.processing_status == "ended",
            counts={k: int(getattr(counts, k)) for k in ("processing", "succeeded", "errored", "canceled", "expired")},
        )

    def batch_results(self, batch_id: str) -> Iterator[BatchItem]:
        for entry in self._call(lambda: list(self.client.messages.batches.results(batch_id))):
            result = entry.result
            if result.type == "succeeded":
                yield BatchItem(entry.custom_id, "succeeded", reply=_anthropic_reply(result.message))
            elif result.type == "errored":
                error = getattr(result.error, "error", None)
                detail = f"{getattr(error, 'type', 'error')}: {getattr(error, 'message', '')}"
                yield BatchItem(entry.custom_id, "errored", error=self._clean(f"batch request errored ({detail})"))
            else:
                yield BatchItem(entry.custom_id, result.type, error=f"batch request {result.type} before it was processed")


# --------------------------------------------------------------------------- OpenAI-compatible

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}


class OpenAICompatibleProvider:
    """Judges on any server offering ``/v1/chat/completions`` with ``json_schema`` output.

    Hosted services and local servers (vLLM, llama.cpp, Ollama's OpenAI endpoint) speak this
    protocol, so a trio can span model families. Retries 408/409/429/5xx/529 and connection errors
    with exponential backoff; no batch API.
    """

    name = "openai-compatible"
    supports_batch = False

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout_s: float = 120.0,
        backoff_s: float = 0.5,
        http_client: httpx2.Client | None = None,
        timeout_option: str = "timeout_s in judges.toml",
    ) -> None:
        quiet_sdk_loggers()
        self._secret = api_key
        self._timeout = timeout_words(timeout_s, timeout_option)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._base = base_url.rstrip("/")
        if self._base.endswith("/v1"):
            self._base = self._base[: -len("/v1")]
        if http_client is None:
            import httpx2

            http_client = httpx2.Client(timeout=timeout_s)
        self.client = http_client
        self._headers = headers
        self._max_retries = max_retries
        self._backoff_s = backoff_s

    def close(self) -> None:
        """Close the HTTP client's connection pool (idempotent)."""
        self.client.close()

    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None,
                 on_body: Callable[[bytes], None] | None = None) -> dict[str, Any]:
        import httpx2

        last_problem = "no attempt made"
        connection = False
        wait_s: float | None = None
        for attempt in range(self._max_retries + 1):
            if attempt:
                # The server's retry-after wins over the backoff (bounded, as the ALM runner's).
                time.sleep(min(wait_s, 300.0) if wait_s is not None else self._backoff_s * 2 ** (attempt - 1))
            wait_s = None
            try:
                response = self.client.request(method, f"{self._base}{path}", json=payload, headers=self._headers)
            except httpx2.TimeoutException:
                last_problem = self._timeout
                connection = False
                continue
            except httpx2.TransportError as exc:
                last_problem = f"connection error: {type(exc).__name__}"
                connection = not_reached(exc)
                continue
            connection = False
            if response.status_code in (401, 403):
                raise JudgeAuthError(
                    f"{safe_url(self._base)} refused the API key (HTTP {response.status_code}); check the variable "
                    "named by api_key_env in judges.toml. The run stopped; rerun to resume"
                )
            if response.status_code in _RETRY_STATUS:
                last_problem = f"HTTP {response.status_code}: {error_words(response.text)}"
                wait_s = retry_after(response)
                continue
            if response.status_code >= 400:
                raise ProviderCallError(redact(f"HTTP {response.status_code}: {error_words(response.text)}", [self._secret]))
            if on_body is not None:
                on_body(response.content)
            try:
                return response.json()
            except ValueError:
                raise ProviderCallError("malformed response: the body is not JSON") from None
        raise ProviderCallError(redact(f"{last_problem} after {self._max_retries} retries", [self._secret]) or "",
                                connection=connection, transient=True)

    def list_models(self) -> set[str]:
        return {str(m.get("id")) for m in self._request("GET", "/v1/models").get("data", [])}

    def complete(self, request: JudgeRequest, *, on_body: Callable[[bytes], None] | None = None) -> ProviderReply:
        """Send one request; ``on_body`` gets the raw body before it is read (the journal)."""
        body = self._request(
            "POST",
            "/v1/chat/completions",
            {
                "model": request.judge.model,
                "max_tokens": request.judge.max_tokens,
                "messages": [
                    {"role": "system", "content": request.prompt.system},
                    {"role": "user", "content": request.user_text},
                ],
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "attribution", "strict": True, "schema": request.schema},
                },
            },
            on_body=on_body,
        )
        return self._reply(body)

    def reply_from_body(self, body: str) -> ProviderReply:
        """The reply a journaled raw body holds."""
        try:
            data = json.loads(body)
        except ValueError:
            raise ProviderCallError("malformed response: the body is not JSON") from None
        return self._reply(data)

    def _reply(self, body: Any) -> ProviderReply:
        try:
            choice = body["choices"][0]
            message = choice.get("message") or {}
        except (KeyError, IndexError, TypeError):
            raise ProviderCallError("malformed response: no choices[0] in the reply") from None
        usage = body.get("usage") or {}
        cached = int(((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
        refusal = bool(message.get("refusal"))
        finish = choice.get("finish_reason")
        return ProviderReply(
            text=str(message.get("content") or ""),
            stop_reason="refusal" if refusal else ("max_tokens" if finish == "length" else finish),
            usage=TokenUsage(
                input_tokens=int(usage.get("prompt_tokens") or 0) - cached,
                output_tokens=int(usage.get("completion_tokens") or 0),
                cache_read_input_tokens=cached,
            ),
            refusal=refusal,
            truncated=finish == "length",
        )

    def count_tokens(self, request: JudgeRequest) -> int | None:
        return None

    def submit_batch(self, requests: list[tuple[str, JudgeRequest]]) -> str:
        raise AglwError(f"{safe_url(self._base)}: openai-compatible judges have no batch mode; use --mode sync")

    def batch_state(self, batch_id: str) -> BatchState:
        raise AglwError("openai-compatible judges have no batch mode")

    def batch_results(self, batch_id: str) -> Iterator[BatchItem]:
        raise AglwError("openai-compatible judges have no batch mode")


def make_provider(
    judge: JudgeConfig,
    *,
    base_url: str | None = None,
    http_client: httpx2.Client | None = None,
) -> JudgeProvider:
    """The provider a judge's configuration names (``base_url`` overrides the configured endpoint).

    Raises
    ------
    InputError
        A base URL carrying a query (``?key=...``): nothing is sent.
    """
    refuse_query(base_url, "--base-url")
    refuse_query(judge.base_url, f"base_url of judge {judge.name!r} in judges.toml")
    timeout_option = f"timeout_s of judge {judge.name!r} in judges.toml"
    if judge.provider == "anthropic":
        return AnthropicProvider(
            base_url=base_url or judge.base_url,
            max_retries=judge.max_retries,
            timeout_s=judge.timeout_s,
            http_client=http_client,
            timeout_option=timeout_option,
        )
    key = os.environ.get(judge.api_key_env) if judge.api_key_env else None
    return OpenAICompatibleProvider(
        base_url=base_url or judge.base_url or "",
        api_key=key,
        max_retries=judge.max_retries,
        timeout_s=judge.timeout_s,
        http_client=http_client,
        timeout_option=timeout_option,
    )
