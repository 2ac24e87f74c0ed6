"""The one list of providers an ALM can be asked through (``alm.toml``, the CLI and the GUI use it)."""

from __future__ import annotations

from typing import Literal

ALM_PROVIDERS = ("openai", "openai-compatible", "gemini", "transformers")
AlmProviderName = Literal["openai", "openai-compatible", "gemini", "transformers"]

__all__ = ["ALM_PROVIDERS", "AlmProviderName"]
