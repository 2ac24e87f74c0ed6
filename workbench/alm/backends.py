"""The backend of each ALM provider name: :func:`make_provider` (the one place that knows which
class serves ``openai``, ``openai-compatible``, ``gemini`` and ``transformers``; the providers'
modules sit below it and never import each other)."""

from __future__ import annotations

from typing import Any

from workbench.alm.config import ProviderSettings
from workbench.alm.providers import AlmProvider, OpenAIProvider, resolve_key
from workbench.errors import InputError, UsageError
from workbench.llm.urls import refuse_query


def make_provider(provider: str, settings: ProviderSettings, *, api_model: str, base_url: str | None,
                  api_key_env: str | None = None, http_client: Any = None, gpu_batch: int = 1) -> AlmProvider:
    """The provider named (keys resolved here, before any clip is read); ``gpu_batch``: the
    ``transformers`` provider's clips per generate call (1, the reference's way, unless asked).

    Raises
    ------
    InputError
        Unknown provider, ``openai-compatible`` without a base URL, a base URL carrying a query.
    RunStopped
        A missing key.
    """
    refuse_query(base_url, "--base-url")
    refuse_query(settings.base_url, "base_url in alm.toml")
    base_url = base_url or settings.base_url
    timeout_option = f"timeout_s of [providers.{provider}] in alm.toml"
    if provider in ("openai", "openai-compatible"):
        if provider == "openai-compatible" and not base_url:
            raise UsageError("--provider openai-compatible needs --base-url (e.g. http://127.0.0.1:8000/v1 "
                             "for `vllm serve`)")
        key = resolve_key(settings, provider, api_key_env)
        return OpenAIProvider(provider, api_key=key, base_url=base_url, timeout_s=settings.timeout_s,
                              http_client=http_client, timeout_option=timeout_option)
    if provider == "gemini":
        from workbench.alm.gemini import GeminiProvider

        key = resolve_key(settings, provider, api_key_env)
        return GeminiProvider(api_key=key or "", base_url=base_url, settings=settings, timeout_option=timeout_option)
    if provider == "transformers":
        from workbench.alm.local import TransformersProvider

        return TransformersProvider(api_model, device=settings.device, batch_size=gpu_batch)
    raise InputError(f"unknown provider {provider!r}: use openai, openai-compatible, gemini or transformers")
