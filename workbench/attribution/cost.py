"""Token cost from the configured price table, and the documented estimate used without a key."""

from __future__ import annotations

import math

from workbench.attribution.config import Price
from workbench.attribution.providers import TokenUsage

CHARS_PER_TOKEN = 3.5
"""Estimate used when the token-counting endpoint is not available: English prose with some JSON and
numbers runs at about 3.5 characters per token for Claude-family tokenizers (a deliberate slight
over-estimate, so dry-run costs err high)."""

OUTPUT_TOKENS_BASE = 40
OUTPUT_TOKENS_PER_CATEGORY = 60
"""Estimated reply size: the JSON envelope plus, per category, an id, three small fields and an
evidence quote of up to ~20 words (≈ 60 tokens)."""


def call_cost(usage: TokenUsage, price: Price | None, *, batch: bool = False, discount: float = 0.5) -> float | None:
    """Dollar cost of one call; None when the model has no price entry.

    Parameters
    ----------
    usage
        Tokens of the call (plain input, output, cache writes, cache reads).
    price
        Dollars per million tokens of the model.
    batch
        Billed through the Message Batches API (every token class at ``discount`` × price).
    """
    if price is None:
        return None
    dollars = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
    ) / 1_000_000
    return dollars * (discount if batch else 1.0)


def estimate_tokens(text: str) -> int:
    """Token estimate of a text: ``ceil(len(text) / 3.5)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_output_tokens(n_categories: int) -> int:
    """Estimated output tokens of a reply that judges ``n_categories`` categories."""
    return OUTPUT_TOKENS_BASE + OUTPUT_TOKENS_PER_CATEGORY * n_categories
