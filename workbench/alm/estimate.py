"""Tokens and dollars of ALM answers: the cost of a reply, and the offline estimate before a run.

The estimate uses only what the project knows offline: each clip's duration (measured, else the
dataset's ``mp3seconds``), the prompt's length and the model's entry in ``alm.toml`` (audio
tokens per second, expected reply length, prices). Providers count audio their own way
(OpenAI about 10 tokens per second, Gemini 32), which is why that rate is configuration.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.alm.config import ModelEntry, Price

CHARS_PER_TOKEN = 4.0
"""English prompt text runs at about 4 characters per token for GPT/Gemini tokenizers."""
MESSAGE_OVERHEAD_TOKENS = 8
"""Role and part markers of one user message."""


def reply_cost(price: Price | None, *, input_tokens: int | None, audio_tokens: int | None,
               output_tokens: int | None, audio_seconds: float | None = None, discount: float = 1.0) -> float | None:
    """Dollars of one reply; None when the price or the token counts are unknown (never 0 by default).

    ``audio_tokens`` is the part of ``input_tokens`` that was audio (billed at the audio price);
    when a provider does not split them, all input is billed at the text price.
    """
    if price is None or not price.known or input_tokens is None or output_tokens is None:
        return None
    audio = min(int(audio_tokens or 0), int(input_tokens))
    text = int(input_tokens) - audio
    dollars = (text * price.input + audio * (price.audio_input or price.input) + output_tokens * price.output) / 1e6
    if price.audio_second is not None and audio_seconds is not None:
        dollars += audio_seconds * price.audio_second
    return dollars * discount


def prompt_tokens(prompt_text: str) -> int:
    """Estimated tokens of the prompt text of one request."""
    return math.ceil(len(prompt_text) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS


@dataclass
class Estimate:
    """What a run would send and cost (offline)."""

    model: str
    provider: str
    api_model: str
    prompt_version: str
    clips: int = 0
    samples: int = 1
    requests: int = 0
    skipped_cached: int = 0
    no_audio: int = 0
    unknown_duration: int = 0
    audio_seconds: float = 0.0
    text_tokens: int = 0
    audio_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    cost_batch_usd: float | None = None
    price_known: bool = False
    notes: list[str] = field(default_factory=list)
    gpu_batch: int | None = None  # clips per generate call of a local model (1: the reference's way); None: an API

    @property
    def input_tokens(self) -> int:
        return self.text_tokens + self.audio_tokens

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy with ``input_tokens`` (text + audio)."""
        data = asdict(self)
        data["input_tokens"] = self.input_tokens
        return data


def estimate_requests(estimate: Estimate, durations: list[float | None], prompt_text: str, entry: ModelEntry,
                      price: Price | None, batch_discount: float | None) -> Estimate:
    """Fill ``estimate`` with the tokens and cost of one request per duration given.

    A duration of None (unknown) is counted in ``unknown_duration`` and priced without audio,
    so the estimate errs low for it and says so in ``notes``.
    """
    text_each = prompt_tokens(prompt_text)
    for seconds in durations:
        estimate.requests += 1
        estimate.text_tokens += text_each
        estimate.output_tokens += entry.expected_output_tokens
        if seconds is None:
            estimate.unknown_duration += 1
            continue
        estimate.audio_seconds += seconds
        estimate.audio_tokens += math.ceil(seconds * entry.audio_tokens_per_second)
    estimate.price_known = price is not None and price.known
    if estimate.price_known:
        sync = reply_cost(price, input_tokens=estimate.input_tokens, audio_tokens=estimate.audio_tokens,
                          output_tokens=estimate.output_tokens, audio_seconds=estimate.audio_seconds)
        estimate.cost_usd = sync
        estimate.cost_batch_usd = None if batch_discount is None or sync is None else sync * batch_discount
    if estimate.unknown_duration:
        estimate.notes.append(f"{estimate.unknown_duration} clip(s) have no known duration: priced without "
                              "their audio tokens (the estimate is low for them)")
    return estimate
