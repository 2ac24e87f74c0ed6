"""The judge's output schema (pydantic) and the validation applied to every reply."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Effect = Literal["helped", "misled", "neutral"]


class CategoryVerdict(BaseModel):
    """A judge's verdict on one listed category."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str
    contribution: int = Field(ge=0, le=3)
    effect: Effect
    mentioned: bool
    evidence: str


class AttributionReply(BaseModel):
    """The whole reply for one clip."""

    model_config = ConfigDict(extra="forbid", strict=True)

    categories: list[CategoryVerdict]
    unlisted_cues: list[str]


@lru_cache(maxsize=1)
def _output_schema_json() -> str:
    # transform_schema makes every object strict (additionalProperties: false) and moves range limits
    # into descriptions, which is what the structured-output endpoint accepts. The SDK is imported
    # here, not at module level: it takes about a second and 100+ MB, and the GUI and most
    # commands never send a request.
    import anthropic

    return json.dumps(anthropic.transform_schema(AttributionReply), sort_keys=True)


def output_schema() -> dict[str, Any]:
    """The JSON schema sent with every request (a fresh copy)."""
    return json.loads(_output_schema_json())


@dataclass(frozen=True)
class CheckedVerdict:
    """One validated category verdict plus whether its evidence was found in the CoT."""

    audioset_id: str
    contribution: int
    effect: str
    mentioned: bool
    evidence: str
    evidence_found: bool | None


@dataclass(frozen=True)
class ReplyCheck:
    """Outcome of validating one reply: verdicts when valid, else the reason."""

    ok: bool
    reason: str | None = None
    verdicts: tuple[CheckedVerdict, ...] = ()
    unlisted_cues: tuple[str, ...] = ()
    parsed: dict[str, Any] | None = field(default=None)


_WHITESPACE = re.compile(r"\s+")
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def normalise_text(text: str) -> str:
    """Whitespace-collapsed, case-folded text with typographic quotes made plain."""
    return _WHITESPACE.sub(" ", text.translate(_QUOTES)).strip().casefold()


def evidence_in_cot(evidence: str, cot: str) -> bool | None:
    """Whether a quote occurs in the CoT (whitespace-normalised, case-insensitive); None if empty."""
    needle = normalise_text(evidence).strip("\"' .…")
    if not needle:
        return None
    return needle in normalise_text(cot)


def _strip_code_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = re.sub(r"^```[a-zA-Z]*\s*", "", stripped)
        stripped = re.sub(r"\s*```$", "", stripped)
    return stripped


def check_reply(text: str, listed_ids: list[str] | tuple[str, ...], cot: str) -> ReplyCheck:
    """Validate a judge's reply against the schema and the listed category ids.

    Parameters
    ----------
    text
        The reply text (a JSON object).
    listed_ids
        The category ids the prompt listed; the reply must name each exactly once and no other.
    cot
        The chain-of-thought the evidence quotes must come from.

    Returns
    -------
    ReplyCheck
        ``ok`` with verdicts in the listed order, or ``ok=False`` with a reason that can be shown to
        the judge in a retry.
    """
    try:
        data = json.loads(_strip_code_fence(text))
    except json.JSONDecodeError as exc:
        return ReplyCheck(ok=False, reason=f"the reply is not valid JSON ({exc.msg} at char {exc.pos})")
    try:
        reply = AttributionReply.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'reply'}: {err['msg']}" for err in exc.errors()[:5]
        )
        return ReplyCheck(ok=False, reason=f"the reply does not match the schema ({problems})", parsed=_dict(data))
    given = [v.id for v in reply.categories]
    listed = list(listed_ids)
    unknown = sorted(set(given) - set(listed))
    missing = [i for i in listed if i not in given]
    repeated = sorted({i for i in given if given.count(i) > 1})
    problems = []
    if unknown:
        problems.append(f"unknown category ids {unknown}")
    if missing:
        problems.append(f"missing category ids {missing}")
    if repeated:
        problems.append(f"category ids given more than once {repeated}")
    if problems:
        return ReplyCheck(
            ok=False,
            reason="; ".join(problems) + f" (list each of {listed} exactly once)",
            parsed=reply.model_dump(),
        )
    by_id = {v.id: v for v in reply.categories}
    verdicts = tuple(
        CheckedVerdict(
            audioset_id=i,
            contribution=by_id[i].contribution,
            effect=by_id[i].effect,
            mentioned=by_id[i].mentioned,
            evidence=by_id[i].evidence,
            evidence_found=evidence_in_cot(by_id[i].evidence, cot),
        )
        for i in listed
    )
    return ReplyCheck(
        ok=True,
        verdicts=verdicts,
        unlisted_cues=tuple(reply.unlisted_cues),
        parsed=reply.model_dump(),
    )


def _dict(data: Any) -> dict[str, Any] | None:
    return data if isinstance(data, dict) else {"value": data}
