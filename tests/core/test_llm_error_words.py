"""A provider's error body in words (never a dict's repr) and a base URL with a query refused up front."""

from __future__ import annotations

import pytest

from workbench.errors import InputError
from workbench.llm.errors import error_words, timeout_words
from workbench.llm.urls import refuse_query


@pytest.mark.parametrize(("body", "words"), [
    ({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
     "Internal server error (api_error)"),  # Anthropic
    ({"message": "internal error", "type": "error", "code": 500}, "internal error"),  # OpenAI (the SDK's exc.body)
    ({"object": "error", "message": "boom", "type": "InternalServerError", "code": 500}, "boom (InternalServerError)"),  # vLLM
    ({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}},
     "The model is overloaded. (UNAVAILABLE)"),  # Gemini
    ('{"detail": "Not Found"}', "Not Found"),  # FastAPI, as text
    (b"<!DOCTYPE html><html><body>Bad gateway</body></html>", "an HTML page"),
    ("upstream   connect error\n", "upstream connect error"),
    (None, "no details"),
    ({}, "no details"),
])
def test_error_bodies_are_put_in_words(body: object, words: str) -> None:
    assert error_words(body) == words


def test_a_time_out_names_its_value_and_setting() -> None:
    assert timeout_words(0.5, "timeout_s in alm.toml") == "timeout: no reply within the time-out of 0.5 s (timeout_s in alm.toml)"


def test_a_base_url_with_a_query_is_refused_without_its_values() -> None:
    refuse_query(None, "--base-url")
    refuse_query("http://127.0.0.1:8000/v1", "--base-url")
    with pytest.raises(InputError, match=r"--base-url http://127.0.0.1:8000/v1 carries a query \(key=\.\.\.\)") as info:
        refuse_query("http://user:PW@127.0.0.1:8000/v1?key=SECRET", "--base-url")
    assert "SECRET" not in str(info.value) and "PW" not in str(info.value) and "keyring" in str(info.value)
