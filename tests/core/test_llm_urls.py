"""Secrets in endpoints: user info and key-like query parameters never reach a stored or printed URL."""

from __future__ import annotations

import pytest

from workbench.llm.urls import safe_url


@pytest.mark.parametrize(("url", "expected"), [
    ("http://user:KEY@host/v1?api-key=KEY", "http://host/v1"),
    ("https://KEY@gateway.example:8443/openai/v1", "https://gateway.example:8443/openai/v1"),
    ("http://h/v1?key=KEY&region=eu&token=KEY&Access_Token=KEY", "http://h/v1?region=eu"),
    ("http://h/v1?x-goog-api-key=KEY&apikey=KEY&SIG=KEY", "http://h/v1"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    (None, None),
    ("", ""),
])
def test_user_info_and_key_like_parameters_are_stripped(url, expected) -> None:  # type: ignore[no-untyped-def]
    assert safe_url(url) == expected
    if url:
        assert "KEY" not in (safe_url(url) or "")
