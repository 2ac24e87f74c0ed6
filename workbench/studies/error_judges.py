"""Ask the LLM judges for AGL1K's error modes of the ALM's wrong or refused answers (prompt ``error-modes-v1``).

The experts' error-mode labels and the judges' replies use the same taxonomy, so agreement on
error modes is measured like the rest (:func:`workbench.studies.error_modes.error_mode_agreement`).
Every reply is stored (``JudgeErrorMode``), failures with their reason; a request already
answered (same provider, model, prompt version and rendered prompt: the fingerprint) is never
sent again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from string import Template
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlmodel import select

from storage import Store
from storage.models import JudgeErrorMode
from workbench.attribution.config import JudgeConfig
from workbench.attribution.prompts import COT_END, RenderedPrompt, load_template, request_fingerprint
from workbench.errors import InputError
from workbench.studies.error_modes import ErrorModeService, canonical_modes, wrong_answers

if TYPE_CHECKING:
    from workbench.tasks import TaskContext

PROMPT_VERSION = "error-modes-v1"

Mode = Literal["language_ambiguity", "over_commitment", "over_reasoning", "bird_bias", "label_misidentification",
               "educated_guess", "refusal", "other"]


class ErrorModeReply(BaseModel):
    """A judge's reply: the modes that explain the failure and a note (required with ``other``)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    modes: list[Mode]
    note: str


@lru_cache(maxsize=1)
def _schema_json() -> str:
    import anthropic  # the SDK's strict-schema transform; imported only when judges are asked

    return json.dumps(anthropic.transform_schema(ErrorModeReply), sort_keys=True)


def output_schema() -> dict[str, Any]:
    """The JSON schema sent with every error-mode request (a fresh copy)."""
    return json.loads(_schema_json())


def _text(value: Any) -> str:
    return "not given" if value in (None, "") else str(value)


def render(answer: dict[str, Any], version: str = PROMPT_VERSION) -> RenderedPrompt:
    """The request for one wrong answer (``wrong_answers`` row) under prompt ``version``."""
    template = load_template(version)
    error = "no location given (refusal)" if answer["error_km"] is None else f"{answer['error_km']:.0f} km"
    cot = answer["reasoning"].replace(COT_END, "<<<COT_END (quoted)>>>")
    user = Template(template.clip_template).substitute(
        clip_key=answer["clip_key"], predicted_city=_text(answer["predicted_city"]),
        predicted_country=_text(answer["predicted_country"]),
        predicted_coordinates=f"{_text(answer['predicted_latitude'])}, {_text(answer['predicted_longitude'])}",
        true_city=_text(answer["true_city"]), true_country=_text(answer["true_country"]),
        true_coordinates=f"{_text(answer['true_latitude'])}, {_text(answer['true_longitude'])}", error_km=error,
        cot=cot,
    )
    return RenderedPrompt(version=template.version, system=template.system, user=user, cot=answer["reasoning"])


def check_reply(text: str) -> tuple[str | None, str | None, str | None]:
    """(modes, note, failure reason) of a reply text; a reply that breaks the schema is a failure."""
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        reply = ErrorModeReply.model_validate(json.loads(body))
    except (ValueError, ValidationError) as exc:
        return None, None, f"reply does not match the error-mode schema: {str(exc).splitlines()[0][:200]}"
    if not reply.modes:
        return None, None, "reply names no error mode"
    note = reply.note.strip() or None
    if "other" in reply.modes and not note:
        return None, None, "reply chose 'other' without a note"
    return canonical_modes(reply.modes), note, None


@dataclass
class ErrorJudgeReport:
    """What one ``judge_error_modes`` call did, per judge."""

    alm: str
    prompt_version: str
    n_answers: int
    judges: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"alm": self.alm, "prompt_version": self.prompt_version, "n_answers": self.n_answers,
                "judges": self.judges}


def judge_error_modes(
    store: Store,
    judges: list[JudgeConfig],
    alm_model: str,
    *,
    base_url: str | None = None,
    gamma_km: float = 1000.0,
    limit: int | None = None,
    prompt_version: str = PROMPT_VERSION,
    provider_factory: Callable[..., Any] | None = None,
    task: TaskContext | None = None,
) -> ErrorJudgeReport:
    """Ask each judge for the error modes of every wrong (error ≥ γ) or refused answer of ``alm_model``.

    Parameters
    ----------
    store
        The project.
    judges
        The judges to ask (from ``judges.toml``); their own prompt version is for attribution,
        error modes always use ``prompt_version``.
    alm_model
        The ALM whose answers are judged.
    base_url
        Another API endpoint (a proxy, or a test server).
    gamma_km, limit
        What counts as wrong, and at most how many answers (in clip-key order).
    provider_factory
        ``make_provider`` unless a test injects another.
    task
        Progress, per-answer outcomes and cancellation.

    Returns
    -------
    ErrorJudgeReport
    """
    from workbench.attribution.providers import JudgeRequest, ProviderCallError, make_provider

    factory = provider_factory or make_provider
    alm_run_id = ErrorModeService(store).alm_run_id(alm_model)
    answers = wrong_answers(store, alm_run_id, gamma_km=gamma_km)
    if limit is not None:
        answers = answers[: max(limit, 0)]
    if not judges:
        raise InputError("no judge to ask; pass --judges with names from judges.toml")
    load_template(prompt_version)  # a missing prompt version is one line before anything is sent
    schema = output_schema()
    report = ErrorJudgeReport(alm=alm_model, prompt_version=prompt_version, n_answers=len(answers))
    if task is not None:
        task.set_total(len(answers) * len(judges))
    for judge in judges:
        provider = factory(judge, base_url=base_url)
        counts = {"judge": judge.name, "asked": 0, "cached": 0, "ok": 0, "failed": 0, "failures": []}
        try:
            with store.session() as s:
                done = set(s.exec(select(JudgeErrorMode.fingerprint).where(
                    JudgeErrorMode.status == "ok", JudgeErrorMode.judge_name == judge.name)).all())
            for answer in answers:
                if task is not None:
                    task.check_cancel()
                prompt = render(answer, prompt_version)
                fingerprint = request_fingerprint(judge.provider, judge.model, prompt, schema)
                key = f"{judge.name}/{answer['clip_key']}"
                if fingerprint in done:
                    counts["cached"] += 1
                    if task is not None:
                        task.item_done(key, True)
                    continue
                counts["asked"] += 1
                row = JudgeErrorMode(judge_name=judge.name, provider=judge.provider, model_id=judge.model,
                                     prompt_version=prompt.version, clip_id=answer["clip_id"], alm_run_id=alm_run_id,
                                     fingerprint=fingerprint)
                try:
                    reply = provider.complete(JudgeRequest(judge=judge, prompt=prompt, schema=schema))
                except ProviderCallError as exc:
                    row.status, row.failure_reason = "failed", str(exc)
                else:
                    row.raw_reply = reply.text
                    row.input_tokens, row.output_tokens = reply.usage.input_tokens, reply.usage.output_tokens
                    if reply.refusal or reply.truncated:
                        row.status = "failed"
                        row.failure_reason = "the model refused" if reply.refusal else "reply cut off (max_tokens)"
                    else:
                        modes, note, failure = check_reply(reply.text)
                        row.modes, row.note = modes, note
                        row.status, row.failure_reason = ("failed", failure) if failure else ("ok", None)
                with store.write() as s:
                    s.add(row)
                counts["ok" if row.status == "ok" else "failed"] += 1
                if row.status != "ok":
                    counts["failures"].append({"clip": answer["clip_key"], "reason": row.failure_reason})
                if task is not None:
                    task.item_done(key, row.status == "ok", row.failure_reason or "")
        finally:
            provider.close()
        report.judges.append(counts)
    return report
