"""ALM providers and models as configuration: ``alm.toml`` (validated), never constants in code.

Model ids, prices (per million text/audio/output tokens, per second of audio where a provider
bills audio by time), the batch discount, request size limits, time-outs, retries and rate
limits live in one user-editable file, written with documented defaults on first use. A new
model generation or a price change is an edit of that file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench.errors import InputError
from workbench.llm.providers import ALM_PROVIDERS, AlmProviderName

ALM_FILE = "alm.toml"
PROVIDERS = ALM_PROVIDERS  # the one provider list (workbench.llm.providers)
Provider = AlmProviderName

DEFAULT_ALM_TOML = """\
# AGL Workbench: audio-language models for `aglw alm run` (see the ALM runner design doc).
#
# [providers.NAME] sets how a provider is reached; [models."ID"] describes one model id of a provider
# (what it costs and how it is asked). A model id without an entry still runs (any id a server serves),
# but its cost is reported as unknown (null), never as 0.
#
# Keys never live here: OPENAI_API_KEY, GEMINI_API_KEY (or the OS keyring: service "aglw", user
# "openai" / "gemini"); an openai-compatible server's key comes from the variable named by
# --api-key-env (a local vLLM server needs none).
version = 1

[providers.openai]
api_key_env = "OPENAI_API_KEY"
timeout_s = 300          # per request
max_retries = 5          # 429 (retry-after honoured), 5xx/529/503, time-outs and connection errors
backoff_s = 2.0          # first wait; doubles each retry
max_inline_audio_mb = 20 # the base64 audio must fit in one request
batch_discount = 0.5     # the Batch API bills at this fraction (used by the estimate)
# requests_per_minute = 500

[providers.openai-compatible]
# e.g. `vllm serve Qwen/Qwen2.5-Omni-7B` then --base-url http://127.0.0.1:8000/v1
timeout_s = 600
max_retries = 5
backoff_s = 2.0
max_inline_audio_mb = 100

[providers.gemini]
api_key_env = "GEMINI_API_KEY"
timeout_s = 300
max_retries = 5
backoff_s = 2.0
max_inline_audio_mb = 20 # larger clips go through the Files API
batch_discount = 0.5     # the Batch API bills at half price

[providers.transformers]
device = "auto"          # auto | cpu | cuda | cuda:N
max_retries = 0
timeout_s = 3600

# Prices in US dollars: per million tokens of text input, audio input and output; check them
# against the provider's current price list before relying on cost reports.
# audio_tokens_per_second is what the estimate uses for a clip's audio (providers count it their way).
# Also per model: structured_output (ask for JSON with the answer schema), max_output_tokens,
# temperature, expected_output_tokens (the estimate), price_audio_second (billing by audio time),
# audio_format = "file" (send the recording's own bytes when the provider takes its format) or "wav".
[models."gpt-4o-audio-preview"]
provider = "openai"
price_input = 2.50
price_audio_input = 40.00
price_output = 10.00
audio_tokens_per_second = 10
structured_output = false

[models."gpt-audio"]
provider = "openai"
price_input = 2.50
price_audio_input = 32.00
price_output = 10.00
audio_tokens_per_second = 10
structured_output = false

[models."gemini-2.5-flash"]
provider = "gemini"
price_input = 0.30
price_audio_input = 1.00
price_output = 2.50
audio_tokens_per_second = 32
structured_output = true

[models."gemini-2.5-pro"]
provider = "gemini"
price_input = 1.25
price_audio_input = 1.25
price_output = 10.00
audio_tokens_per_second = 32
structured_output = true

[models."gemini-3-pro-preview"]
provider = "gemini"
price_input = 2.00
price_audio_input = 2.00
price_output = 12.00
audio_tokens_per_second = 32
structured_output = true

[models."Qwen/Qwen2.5-Omni-7B"]
provider = "openai-compatible"
audio_tokens_per_second = 25
structured_output = true
"""

_MB = 1_000_000


class ProviderSettings(BaseModel):
    """One ``[providers.NAME]`` table."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    api_key_env: str | None = None
    base_url: str | None = None
    timeout_s: float = Field(300.0, gt=0)
    max_retries: int = Field(5, ge=0, le=20)
    backoff_s: float = Field(2.0, ge=0)
    max_backoff_s: float = Field(60.0, ge=0)
    max_inline_audio_mb: float = Field(20.0, gt=0)
    batch_discount: float | None = Field(None, gt=0, le=1)
    requests_per_minute: float | None = Field(None, gt=0)
    device: str = "auto"

    @property
    def max_inline_audio_bytes(self) -> int:
        return int(self.max_inline_audio_mb * _MB)


class ModelEntry(BaseModel):
    """One ``[models."ID"]`` table."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    provider: Provider
    price_input: float | None = Field(None, ge=0)
    price_audio_input: float | None = Field(None, ge=0)
    price_output: float | None = Field(None, ge=0)
    price_audio_second: float | None = Field(None, ge=0)
    audio_tokens_per_second: float = Field(25.0, ge=0)
    expected_output_tokens: int = Field(450, ge=1)
    max_output_tokens: int = Field(2048, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    structured_output: bool = False
    audio_format: Literal["file", "wav"] = "file"


class _AlmFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    providers: dict[Provider, ProviderSettings] = Field(default_factory=dict)
    models: dict[str, ModelEntry] = Field(default_factory=dict)


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens (text in, audio in, out) and per second of audio; None = unknown."""

    input: float | None
    audio_input: float | None
    output: float | None
    audio_second: float | None = None

    @property
    def known(self) -> bool:
        return self.input is not None and self.output is not None


@dataclass(frozen=True)
class AlmConfig:
    """The validated ``alm.toml``."""

    path: Path
    providers: dict[str, ProviderSettings]
    models: dict[str, ModelEntry]

    def provider(self, name: str) -> ProviderSettings:
        """Settings of provider ``name`` (defaults when the file has no table for it)."""
        if name not in PROVIDERS:
            raise InputError(f"unknown provider {name!r}: use one of {', '.join(PROVIDERS)}")
        return self.providers.get(name) or ProviderSettings()

    def model(self, provider: str, api_model: str) -> ModelEntry:
        """The entry of ``api_model`` (a default entry without prices when the file has none).

        Raises
        ------
        InputError
            The entry exists but belongs to another provider.
        """
        entry = self.models.get(api_model)
        if entry is None:
            return ModelEntry(provider=provider)  # type: ignore[arg-type]
        if entry.provider != provider:
            raise InputError(
                f"{self.path}: model {api_model!r} is configured for provider {entry.provider!r}, "
                f"not {provider!r}; pass --provider {entry.provider} or fix the file"
            )
        return entry

    def price(self, api_model: str) -> Price | None:
        """The price of ``api_model``, or None when the file gives none (cost unknown, not 0)."""
        entry = self.models.get(api_model)
        if entry is None or entry.price_input is None or entry.price_output is None:
            return None
        audio = entry.price_audio_input if entry.price_audio_input is not None else entry.price_input
        return Price(entry.price_input, audio, entry.price_output, entry.price_audio_second)


def alm_config_path() -> Path:
    """Location of ``alm.toml`` in the user configuration directory."""
    from workbench.config import config_dir

    return config_dir() / ALM_FILE


def load_alm_config(path: Path | None = None, *, write_defaults: bool = True) -> AlmConfig:
    """Read ``alm.toml``, writing the documented defaults first when it does not exist.

    ``write_defaults=False`` (a dry run, which writes nothing) reads the defaults without
    creating the file.

    Raises
    ------
    InputError
        Malformed TOML or a wrong, unknown or missing setting (the message names table and key).
    """
    from workbench.config_schema import read_toml, validate

    path = path or alm_config_path()
    if not path.exists() and not write_defaults:
        import tomllib

        data = tomllib.loads(DEFAULT_ALM_TOML)
    else:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(DEFAULT_ALM_TOML, encoding="utf-8")
        data = read_toml(path, "fix it or delete it to get the defaults back")
    parsed = validate(_AlmFile, data, path)
    return AlmConfig(path=path, providers=dict(parsed.providers), models=dict(parsed.models))
