"""Judges as configuration: a user-editable ``judges.toml`` with the default trio and a price table.

Model ids and prices live only in that file (written with documented defaults on first use), never in
code paths, so a new model generation is a configuration edit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.config import config_dir
from workbench.errors import InputError

JUDGES_FILE = "judges.toml"
PROVIDERS = ("anthropic", "openai-compatible")

DEFAULT_JUDGES_TOML = """\
# AGL Workbench: LLM judges for category attribution (see the attribution design doc).
#
# A judge is (provider, model id, prompt version, options). `aglw judge` runs the judges named in
# `trio` unless --judges NAME,NAME is given. Model ids are checked against the provider's model list
# before every run, so a typo or a retired model stops the run with a message naming the id.
#
# provider        "anthropic" (official SDK; key from ANTHROPIC_API_KEY or the OS keyring,
#                 service "aglw", user "anthropic") or "openai-compatible" (any server offering
#                 /v1/chat/completions with json_schema output; key from the environment variable
#                 named by api_key_env, which may be left out for a local server).
# model           the provider's model id.
# prompt_version  a folder under resources/prompts/ (e.g. "attribution-v1").
# max_tokens      output budget per reply; a reply cut off at this limit is stored as failed.
# max_retries     the SDK's own retries for 408/409/429/5xx/529 and connection errors.
# timeout_s       per-request timeout in seconds.
version = 1
trio = ["opus", "sonnet", "haiku"]

[judges.opus]
provider = "anthropic"
model = "claude-opus-5-5"
prompt_version = "attribution-v1"
max_tokens = 2048
max_retries = 4
timeout_s = 120

[judges.sonnet]
provider = "anthropic"
model = "claude-sonnet-5-5"
prompt_version = "attribution-v1"
max_tokens = 2048
max_retries = 4
timeout_s = 120

[judges.haiku]
provider = "anthropic"
model = "claude-haiku-5-5"
prompt_version = "attribution-v1"
max_tokens = 2048
max_retries = 4
timeout_s = 120

# An OpenAI-compatible judge (a hosted service or a local server) lets a trio span model families:
# [judges.local]
# provider = "openai-compatible"
# model = "qwen3-32b-instruct"
# base_url = "http://127.0.0.1:8000"
# api_key_env = "OPENAI_API_KEY"
# prompt_version = "attribution-v1"
# max_tokens = 2048

# Prices in US dollars per million tokens, keyed by model id. Check them against the provider's
# current price list before relying on cost reports. cache_write / cache_read price the prompt-cache
# writes and hits of the shared system prompt. A model without an entry is reported with cost null.
[prices."claude-opus-5-5"]
input = 5.00
output = 25.00
cache_write = 6.25
cache_read = 0.50

[prices."claude-sonnet-5-5"]
input = 3.00
output = 15.00
cache_write = 3.75
cache_read = 0.30

[prices."claude-haiku-5-5"]
input = 1.00
output = 5.00
cache_write = 1.25
cache_read = 0.10

[batch]
# The Message Batches API bills every token class at this fraction of the interactive price.
discount = 0.5
"""


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens of each kind."""

    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass(frozen=True)
class JudgeConfig:
    """One configured judge."""

    name: str
    provider: str
    model: str
    prompt_version: str
    max_tokens: int = 2048
    max_retries: int = 4
    timeout_s: float = 120.0
    base_url: str | None = None
    api_key_env: str | None = None

    def options(self) -> dict[str, Any]:
        """The options stored with a judge run (everything but the identity fields)."""
        return {
            "max_tokens": self.max_tokens,
            "max_retries": self.max_retries,
            "timeout_s": self.timeout_s,
            "base_url": self.base_url,
        }


@dataclass(frozen=True)
class JudgesConfig:
    """All judges, the default trio and the price table of one ``judges.toml``."""

    path: Path
    judges: dict[str, JudgeConfig]
    trio: list[str]
    prices: dict[str, Price] = field(default_factory=dict)
    batch_discount: float = 0.5

    def select(self, names: list[str] | None) -> list[JudgeConfig]:
        """The judges named (default: the trio), in the order given.

        Raises
        ------
        InputError
            A name that the file does not define.
        """
        wanted = names or self.trio
        unknown = [n for n in wanted if n not in self.judges]
        if unknown:
            raise InputError(
                f"{self.path}: no judge named {', '.join(map(repr, unknown))}; "
                f"defined: {', '.join(sorted(self.judges))}. Edit the file or pass --judges with defined names"
            )
        return [self.judges[n] for n in wanted]


def judges_path() -> Path:
    """Location of ``judges.toml`` in the user configuration directory."""
    return config_dir() / JUDGES_FILE


class _JudgeEntry(BaseModel):
    """One ``[judges.NAME]`` table as the file may write it."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    provider: Literal["anthropic", "openai-compatible"]
    model: str = Field(min_length=1)
    prompt_version: str = Field(min_length=1)
    max_tokens: int = Field(2048, ge=1)
    max_retries: int = Field(4, ge=0)
    timeout_s: float = Field(120.0, gt=0)
    base_url: str | None = None
    api_key_env: str | None = None

    @model_validator(mode="after")
    def _endpoint(self) -> "_JudgeEntry":
        if self.provider == "openai-compatible" and not self.base_url:
            raise ValueError("an openai-compatible judge needs base_url (e.g. http://127.0.0.1:8000)")
        return self


class _PriceEntry(BaseModel):
    """One ``[prices."MODEL"]`` table, dollars per million tokens (cache prices default to input)."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float | None = Field(None, ge=0)
    cache_read: float | None = Field(None, ge=0)


class _Batch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    discount: float = Field(0.5, gt=0, le=1)


class _JudgesFile(BaseModel):
    """The whole ``judges.toml``."""

    model_config = ConfigDict(extra="forbid")

    version: int = 1
    trio: list[str] | None = None
    judges: dict[str, _JudgeEntry] = Field(default_factory=dict)
    prices: dict[str, _PriceEntry] = Field(default_factory=dict)
    batch: _Batch = Field(default_factory=_Batch)


def load_judges(path: Path | None = None, *, write_defaults: bool = True) -> JudgesConfig:
    """Read the judges file, writing the documented defaults first when it does not exist.

    ``write_defaults=False`` (a dry run, which writes nothing) reads the defaults without
    creating the file.

    Parameters
    ----------
    path
        The file; default ``config_dir()/judges.toml``.

    Raises
    ------
    InputError
        Malformed TOML, or a missing, unknown or wrong field (the message names the table and key).
    """
    from workbench.config_schema import read_toml, validate

    path = path or judges_path()
    if not path.exists() and not write_defaults:
        import tomllib

        data = tomllib.loads(DEFAULT_JUDGES_TOML)
    else:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(DEFAULT_JUDGES_TOML, encoding="utf-8")
        data = read_toml(path, "fix it or delete it to get the defaults back")
    parsed = validate(_JudgesFile, data, path)
    judges = {
        name: JudgeConfig(
            name=name, provider=entry.provider, model=entry.model, prompt_version=entry.prompt_version,
            max_tokens=entry.max_tokens, max_retries=entry.max_retries, timeout_s=entry.timeout_s,
            base_url=entry.base_url, api_key_env=entry.api_key_env,
        )
        for name, entry in parsed.judges.items()
    }
    prices = {
        model: Price(
            input=p.input, output=p.output,
            cache_write=p.input if p.cache_write is None else p.cache_write,
            cache_read=p.input if p.cache_read is None else p.cache_read,
        )
        for model, p in parsed.prices.items()
    }
    trio = list(parsed.trio or list(judges)[:3])
    config = JudgesConfig(path=path, judges=judges, trio=trio, prices=prices, batch_discount=parsed.batch.discount)
    config.select(trio)
    return config
