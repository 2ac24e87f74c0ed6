"""Ask the LLM judges for AGL1K's error modes of the ALM's wrong or refused answers (prompt ``error-modes-v1``).

The experts' error-mode labels and the judges' replies use the same taxonomy, so agreement on
error modes is measured like the rest (:func:`workbench.studies.error_modes.error_mode_agreement`).
Every reply is stored (``JudgeErrorMode``), failures with their reason; a request already
answered (same provider, model, prompt version and rendered prompt: the fingerprint) is never
sent again. Error-mode judging is a question kind of the campaign engine
(:mod:`workbench.llm.engine`): replies are journaled as they arrive and stored on the calling
thread, a locked project is waited for, an unreached server stops the run with one line.
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
from workbench.llm.errors import takes_body_hook
from workbench.studies.error_modes import ErrorModeService, canonical_modes, wrong_answers
from workbench.studies.taxonomy import MODES

if TYPE_CHECKING:
    from workbench.attribution.providers import ProviderReply
    from workbench.llm.engine import Campaign
    from workbench.tasks import TaskContext

PROMPT_VERSION = "error-modes-v1"

# The reply schema's enum is the taxonomy itself (a tuple inside Literal[...] is its values).
Mode = Literal[MODES]  # type: ignore[valid-type]


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


@dataclass(frozen=True)
class ErrorModeItem:
    """One wrong answer for one judge: the rendered request and its fingerprint."""

    answer: dict[str, Any]
    prompt: RenderedPrompt
    fingerprint: str

    @property
    def label(self) -> str:
        return str(self.answer["clip_key"])


def read_reply(row: JudgeErrorMode, reply: ProviderReply) -> None:
    """Fill ``row`` from a reply: the modes and note, or the failure's reason."""
    row.raw_reply = reply.text
    row.input_tokens, row.output_tokens = reply.usage.input_tokens, reply.usage.output_tokens
    if reply.refusal or reply.truncated:
        row.status = "failed"
        row.failure_reason = "the model refused" if reply.refusal else "reply cut off (max_tokens)"
    else:
        modes, note, failure = check_reply(reply.text)
        row.modes, row.note = modes, note
        row.status, row.failure_reason = ("failed", failure) if failure else ("ok", None)


class ErrorModeQuestions:
    """The error-mode question kind: one item per wrong answer for one judge; one ``JudgeErrorMode`` row each."""

    def __init__(self, store: Store, judge: JudgeConfig, provider: Any, alm_run_id: int, schema: dict[str, Any],
                 counts: dict[str, Any]) -> None:
        self.project, self.judge, self.provider = store, judge, provider
        self.alm_run_id, self.schema, self.counts = alm_run_id, schema, counts
        # Providers that hand over the raw body before parsing it get it journaled at once.
        self.raw_bodies = takes_body_hook(getattr(provider, "complete", None)) and hasattr(provider, "reply_from_body")

    def key(self, item: ErrorModeItem) -> str:
        return item.fingerprint

    def label(self, item: ErrorModeItem) -> str:
        return f"{self.judge.name}/{item.label}"

    def _row(self, item: ErrorModeItem) -> JudgeErrorMode:
        return JudgeErrorMode(judge_name=self.judge.name, provider=self.judge.provider, model_id=self.judge.model,
                              prompt_version=item.prompt.version, clip_id=item.answer["clip_id"],
                              alm_run_id=self.alm_run_id, fingerprint=item.fingerprint)

    def work(self, campaign: Campaign[ErrorModeItem, ErrorModeOutcome], item: ErrorModeItem) -> ErrorModeOutcome:
        from workbench.attribution.providers import JudgeRequest, ProviderCallError

        row = self._row(item)
        request = JudgeRequest(judge=self.judge, prompt=item.prompt, schema=self.schema)
        try:
            call = campaign.request(
                item.fingerprint,
                (lambda keep: self.provider.complete(request, on_body=keep)) if self.raw_bodies
                else (lambda _keep: self.provider.complete(request)),
                lambda reply: {"reply": reply.as_record()})
        except ProviderCallError as exc:
            row.status, row.failure_reason = "failed", str(exc)
            return ErrorModeOutcome(item, row)
        read_reply(row, call.reply)
        return ErrorModeOutcome(item, row)

    def replay(self, item: ErrorModeItem, entries: list[dict[str, Any]]) -> ErrorModeOutcome:
        from workbench.attribution.providers import ProviderReply

        from workbench.attribution.providers import ProviderCallError

        entry = entries[-1]
        row = self._row(item)
        if "reply" in entry:
            reply = ProviderReply.from_record(entry["reply"])
        else:  # the raw body, journaled before the SDK parsed it
            try:
                reply = self.provider.reply_from_body(entry["body"])
            except ProviderCallError as exc:
                row.status, row.failure_reason = "failed", str(exc)
                return ErrorModeOutcome(item, row)
        read_reply(row, reply)
        return ErrorModeOutcome(item, row)

    def failed(self, item: ErrorModeItem, reason: str) -> ErrorModeOutcome:
        row = self._row(item)
        row.status, row.failure_reason = "failed", reason
        return ErrorModeOutcome(item, row)

    def not_sent(self, item: ErrorModeItem, reason: str) -> ErrorModeOutcome | None:
        return None

    def store(self, outcomes: list[ErrorModeOutcome]) -> None:
        with self.project.write() as s:
            for outcome in outcomes:
                s.add(outcome.row)

    def announce(self, outcomes: list[ErrorModeOutcome], task: TaskContext) -> None:
        for outcome in outcomes:
            row = outcome.row
            self.counts["ok" if row.status == "ok" else "failed"] += 1
            if row.status != "ok":
                self.counts["failures"].append({"clip": outcome.item.label, "reason": row.failure_reason})
        for outcome in outcomes:
            task.item_done(self.label(outcome.item), outcome.row.status == "ok", outcome.row.failure_reason or "")


@dataclass
class ErrorModeOutcome:
    """One wrong answer judged: the row to store."""

    item: ErrorModeItem
    row: JudgeErrorMode


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
    concurrency: int = 1,
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
    concurrency
        Requests in flight per judge.

    Returns
    -------
    ErrorJudgeReport

    Raises
    ------
    RunStopped
        The key was refused or the server was not reached (one line); answers stored so far stay.
    """
    from workbench.attribution.providers import make_provider
    from workbench.llm.engine import Campaign, RetryPolicy
    from workbench.llm.journal import Journal
    from workbench.llm.urls import safe_url
    from workbench.tasks import TaskContext as Context

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
    context = task or Context()
    context.set_total(len(answers) * len(judges))
    for judge in judges:
        provider = factory(judge, base_url=base_url)
        counts: dict[str, Any] = {"judge": judge.name, "asked": 0, "cached": 0, "ok": 0, "failed": 0, "failures": []}
        journal = None
        try:
            journal = Journal.open(store, "error-modes", f"{judge.name}\0{judge.provider}\0{judge.model}",
                                   f"error-mode judge {judge.name!r}")
            with store.session() as s:
                done = set(s.exec(select(JudgeErrorMode.fingerprint).where(
                    JudgeErrorMode.status == "ok", JudgeErrorMode.judge_name == judge.name)).all())
            items: list[ErrorModeItem] = []
            for answer in answers:
                prompt = render(answer, prompt_version)
                item = ErrorModeItem(answer, prompt, request_fingerprint(judge.provider, judge.model, prompt, schema))
                if item.fingerprint in done:
                    counts["cached"] += 1
                    context.item_done(f"{judge.name}/{item.label}", True)
                    continue
                items.append(item)
            counts["asked"] = len(items)
            questions = ErrorModeQuestions(store, judge, provider, alm_run_id, schema, counts)
            # The SDK retries transient faults itself (honouring retry-after): the engine adds none.
            campaign: Campaign[ErrorModeItem, ErrorModeOutcome] = Campaign(
                questions, what=f"error-mode judge {judge.name}",
                where=safe_url(base_url or judge.base_url) or judge.provider, journal=journal,
                concurrency=concurrency, retry=RetryPolicy(max_retries=0), task=context,
                resume="Rerun `aglw study judge-error-modes` once the server answers: it asks only what has no answer")
            rest = campaign.replay(items)
            if rest:
                campaign.run(rest)
        finally:
            provider.close()
            if journal is not None:
                journal.close()
        report.judges.append(counts)
    return report
