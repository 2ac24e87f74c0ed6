"""Judges as configuration: a user-editable ``judges.toml`` with the default trio and a price table.

Model ids and prices live only in that file (written with documented defaults on first use), never in
code paths, so a new model generation is a configuration edit.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def load_judges(path: Path | None = None) -> JudgesConfig:
    """Read the judges file, writing the documented defaults first when it does not exist.

    Parameters
    ----------
    path
        The file; default ``config_dir()/judges.toml``.

    Raises
    ------
    InputError
        Malformed TOML, or a judge entry with a missing or wrong field (the message names it).
    """
    path = path or judges_path()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(DEFAULT_JUDGES_TOML, encoding="utf-8")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not valid TOML ({exc}); fix it or delete it to get the defaults back") from exc

    judges: dict[str, JudgeConfig] = {}
    for name, entry in (data.get("judges") or {}).items():
        judges[name] = _judge_from_entry(path, name, entry)
    trio = list(data.get("trio") or list(judges)[:3])
    prices: dict[str, Price] = {}
    for model, entry in (data.get("prices") or {}).items():
        try:
            prices[model] = Price(
                input=float(entry["input"]),
                output=float(entry["output"]),
                cache_write=float(entry.get("cache_write", entry["input"])),
                cache_read=float(entry.get("cache_read", entry["input"])),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"{path}: [prices.{model!r}] needs numeric input and output (and optional cache_write, "
                f"cache_read) in dollars per million tokens ({exc!r})"
            ) from exc
    discount = float((data.get("batch") or {}).get("discount", 0.5))
    if not 0.0 < discount <= 1.0:
        raise InputError(f"{path}: [batch] discount must be in (0, 1], got {discount}")
    config = JudgesConfig(path=path, judges=judges, trio=trio, prices=prices, batch_discount=discount)
    config.select(trio)
    return config


def _judge_from_entry(path: Path, name: str, entry: Any) -> JudgeConfig:
    where = f"{path}: [judges.{name}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where} must be a table")
    for required in ("provider", "model", "prompt_version"):
        if not isinstance(entry.get(required), str) or not entry[required].strip():
            raise InputError(f"{where}: field {required!r} is missing or empty")
    if entry["provider"] not in PROVIDERS:
        raise InputError(f"{where}: provider {entry['provider']!r} is not one of {', '.join(PROVIDERS)}")
    try:
        max_tokens = int(entry.get("max_tokens", 2048))
        max_retries = int(entry.get("max_retries", 4))
        timeout_s = float(entry.get("timeout_s", 120))
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: max_tokens, max_retries and timeout_s must be numbers ({exc})") from exc
    if max_tokens < 1 or max_retries < 0 or timeout_s <= 0:
        raise InputError(f"{where}: max_tokens ≥ 1, max_retries ≥ 0 and timeout_s > 0 are required")
    if entry["provider"] == "openai-compatible" and not entry.get("base_url"):
        raise InputError(f"{where}: an openai-compatible judge needs base_url (e.g. http://127.0.0.1:8000)")
    return JudgeConfig(
        name=name,
        provider=entry["provider"],
        model=entry["model"].strip(),
        prompt_version=entry["prompt_version"].strip(),
        max_tokens=max_tokens,
        max_retries=max_retries,
        timeout_s=timeout_s,
        base_url=entry.get("base_url"),
        api_key_env=entry.get("api_key_env"),
    )
