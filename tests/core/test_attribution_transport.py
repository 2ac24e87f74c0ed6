"""The Anthropic provider with a mock transport injected into the SDK client (no network)."""

from __future__ import annotations

import json

import httpx2
import pytest

from workbench.attribution.config import JudgeConfig
from workbench.attribution.prompts import CategoryInput, ClipInput, load_template, render_clip_prompt
from workbench.attribution.providers import AnthropicProvider, JudgeAuthError, JudgeRequest, ProviderCallError
from workbench.attribution.schema import output_schema
from workbench.attribution.runner import judge_one_clip

KEY = "sk-ant-unit-test-key-0123456789abcdef"
COT = "Swedish speech and a passing train suggest a Scandinavian station."
JUDGE = JudgeConfig(name="sonnet", provider="anthropic", model="claude-sonnet-5-5", prompt_version="attribution-v1", max_tokens=512)


def _prompt():
    clip = ClipInput(
        clip_id=1, clip_key="k1",
        categories=(CategoryInput("/m/09x0r", "Speech", "Human sounds", 0.9), CategoryInput("/m/07jdr", "Train", "Sounds of things", 0.5)),
        cot=COT,
    )
    return render_clip_prompt(clip, load_template("attribution-v1"))


def _message(text: str, stop: str = "end_turn") -> dict:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": JUDGE.model,
        "content": [{"type": "text", "text": text}] if text else [], "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 120, "output_tokens": 40, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 0},
    }


VALID = json.dumps({
    "categories": [
        {"id": "/m/09x0r", "contribution": 3, "effect": "helped", "mentioned": True, "evidence": "Swedish speech"},
        {"id": "/m/07jdr", "contribution": 1, "effect": "neutral", "mentioned": True, "evidence": "a passing train"},
    ],
    "unlisted_cues": [],
})


def _error(status: int) -> httpx2.Response:
    return httpx2.Response(status, headers={"retry-after-ms": "1"}, json={"type": "error", "error": {"type": "x", "message": f"status {status}"}})


class Script:
    """A mock transport handler answering from a list, recording every request."""

    def __init__(self, *responses):
        self.responses = list(responses)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        item = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(item, Exception):
            raise item
        return item


def _provider(script: Script, max_retries: int = 2) -> AnthropicProvider:
    client = httpx2.Client(transport=httpx2.MockTransport(script))
    return AnthropicProvider(api_key=KEY, base_url="http://judge.test", max_retries=max_retries, timeout_s=5, http_client=client)


def _request():
    return JudgeRequest(JUDGE, _prompt(), output_schema())


def test_success_sends_cached_system_structured_output_and_no_sampling_params():
    script = Script(httpx2.Response(200, json=_message(VALID)))
    reply = _provider(script).complete(_request())
    assert reply.stop_reason == "end_turn" and not reply.refusal and not reply.truncated
    assert reply.usage.input_tokens == 120 and reply.usage.cache_creation_input_tokens == 900
    body = json.loads(script.requests[0].content)
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert body["output_config"]["format"]["schema"]["additionalProperties"] is False
    assert not {"temperature", "top_p", "top_k", "tool_choice"} & set(body)
    assert body["model"] == "claude-sonnet-5-5" and body["max_tokens"] == 512


def test_429_then_success_is_retried_by_the_sdk():
    script = Script(_error(429), httpx2.Response(200, json=_message(VALID)))
    reply = _provider(script).complete(_request())
    assert len(script.requests) == 2 and reply.text == VALID


@pytest.mark.parametrize("status", [529, 500])
def test_server_errors_exhaust_retries_into_a_stored_reason(status):
    script = Script(_error(status))
    with pytest.raises(ProviderCallError, match=f"HTTP {status}"):
        _provider(script, max_retries=2).complete(_request())
    assert len(script.requests) == 3


def test_timeout_becomes_a_failure_reason():
    script = Script(httpx2.ReadTimeout("read timed out"))
    with pytest.raises(ProviderCallError, match="timeout"):
        _provider(script, max_retries=0).complete(_request())


def test_malformed_response_body_is_a_failure_not_a_crash():
    script = Script(httpx2.Response(200, content=b'{"id": "msg", "content": [', headers={"content-type": "application/json"}))
    with pytest.raises(ProviderCallError):
        _provider(script, max_retries=0).complete(_request())


def test_authentication_error_stops_and_never_shows_the_key():
    script = Script(_error(401))
    with pytest.raises(JudgeAuthError) as info:
        _provider(script).complete(_request())
    assert len(script.requests) == 1
    assert KEY not in str(info.value) and "ANTHROPIC_API_KEY" in str(info.value)
    assert script.requests[0].headers.get("authorization", "").endswith(KEY) or script.requests[0].headers.get("x-api-key") == KEY


def test_a_refusal_is_final_and_a_truncation_is_retried_once_with_twice_the_budget():
    # [H]: the same prompt would be refused again, and the same budget cut off again.
    script = Script(httpx2.Response(200, json=_message("", "refusal")))
    attempts = judge_one_clip(_provider(script), JUDGE, _prompt(), output_schema())
    assert [a.number for a in attempts] == [1] and attempts[0].failure.startswith("refusal")
    assert len(script.requests) == 1

    script = Script(httpx2.Response(200, json=_message(VALID[:50], "max_tokens")),
                    httpx2.Response(200, json=_message(VALID[:50], "max_tokens")))
    attempts = judge_one_clip(_provider(script), JUDGE, _prompt(), output_schema())
    assert [a.number for a in attempts] == [1, 2] and all(a.failure.startswith("truncated") for a in attempts)
    budgets = [json.loads(r.content)["max_tokens"] for r in script.requests]
    assert budgets == [JUDGE.max_tokens, 2 * JUDGE.max_tokens]
    assert "previous reply" not in json.loads(script.requests[1].content)["messages"][0]["content"]


def test_invalid_reply_retry_carries_the_validation_error_and_can_succeed():
    unknown = json.loads(VALID)
    unknown["categories"][1]["id"] = "/m/other"
    script = Script(httpx2.Response(200, json=_message(json.dumps(unknown))), httpx2.Response(200, json=_message(VALID)))
    attempts = judge_one_clip(_provider(script), JUDGE, _prompt(), output_schema())
    assert [a.ok for a in attempts] == [False, True]
    assert "unknown category ids ['/m/other']" in attempts[0].failure
    assert "missing category ids ['/m/07jdr']" in json.loads(script.requests[1].content)["messages"][0]["content"]
