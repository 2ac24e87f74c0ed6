"""What each judge will send: rendered prompts, fingerprints, and what is already answered.

A request's fingerprint (provider, model, rendered prompt, output schema) keys the result
cache: a fingerprint with an ``ok`` call, one refused by the model, or one waiting in a
submitted batch is not sent again unless ``force``. Also here: the providers a plan talks
to (built, checked against the provider's model list, closed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlmodel import col, select

from storage import Store
from storage.models import JudgeCall, JudgeRun
from workbench.attribution.config import JudgeConfig
from workbench.attribution.prompts import ClipInput, RenderedPrompt, load_template, render_clip_prompt, request_fingerprint
from workbench.attribution.providers import JudgeProvider, ProviderCallError
from workbench.attribution.schema import output_schema
from workbench.errors import InputError
from workbench.llm.errors import RunStopped, Unreachable

ProviderFactory = Callable[[JudgeConfig], JudgeProvider]


@dataclass(frozen=True)
class PlannedRequest:
    """One clip for one judge: the rendered prompt and its fingerprint."""

    clip: ClipInput
    prompt: RenderedPrompt
    fingerprint: str


@dataclass
class JudgePlan:
    """What one judge will send, and what it skips because it is answered or pending."""

    judge: JudgeConfig
    to_send: list[PlannedRequest]
    answered: int = 0
    pending: int = 0
    refused: int = 0


def plan_requests(
    store: Store, judges: list[JudgeConfig], inputs: list[ClipInput], *, force: bool = False
) -> list[JudgePlan]:
    """Render every (judge, clip) request and drop those already answered (unless ``force``).

    A request the model refused is not sent again either: the same prompt would be refused (and
    paid for) again. ``force`` sends both kinds.
    """
    schema = output_schema()
    planned: list[tuple[JudgeConfig, list[PlannedRequest]]] = []
    all_fingerprints: set[str] = set()
    for judge in judges:
        template = load_template(judge.prompt_version)
        requests = []
        for clip in inputs:
            prompt = render_clip_prompt(clip, template)
            fingerprint = request_fingerprint(judge.provider, judge.model, prompt, schema)
            requests.append(PlannedRequest(clip, prompt, fingerprint))
            all_fingerprints.add(fingerprint)
        planned.append((judge, requests))
    answered, pending, refused = _answered_and_pending(store, all_fingerprints)
    plans = []
    for judge, requests in planned:
        plan = JudgePlan(judge=judge, to_send=[])
        for request in requests:
            if not force and request.fingerprint in answered:
                plan.answered += 1
            elif not force and request.fingerprint in pending:
                plan.pending += 1
            elif not force and request.fingerprint in refused:
                plan.refused += 1
            else:
                plan.to_send.append(request)
        plans.append(plan)
    return plans


def _answered_and_pending(store: Store, fingerprints: set[str]) -> tuple[set[str], set[str], set[str]]:
    """Fingerprints answered (an ok call), pending in a submitted batch, and refused by the model."""
    answered: set[str] = set()
    pending: set[str] = set()
    refused: set[str] = set()
    if not fingerprints:
        return answered, pending, refused
    wanted = list(fingerprints)
    with store.session() as session:
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            answered.update(
                session.exec(
                    select(JudgeCall.fingerprint).where(JudgeCall.status == "ok", col(JudgeCall.fingerprint).in_(chunk))
                ).all()
            )
            refused.update(
                session.exec(
                    select(JudgeCall.fingerprint).where(
                        JudgeCall.stop_reason == "refusal", col(JudgeCall.fingerprint).in_(chunk)
                    )
                ).all()
            )
        for run in session.exec(select(JudgeRun).where(JudgeRun.status.in_(("submitting", "submitted")))):  # type: ignore[attr-defined]
            pending.update(entry["fingerprint"] for entry in (run.request_map or {}).values())
    return answered, pending & fingerprints, refused - answered


def custom_id_for(planned: PlannedRequest) -> str:
    """A batch custom id (``[A-Za-z0-9_-]{1,64}``) unique per clip and request."""
    return f"c{planned.clip.clip_id}-{planned.fingerprint[:24]}"


def verify_models(plans: list[JudgePlan], providers: dict[str, JudgeProvider]) -> None:
    """Check every judge's model id against its provider's model list before anything is sent.

    Raises
    ------
    InputError
        A model id the provider does not offer (the message names the judge and the id).
    """
    listed: dict[int, set[str]] = {}
    for plan in plans:
        provider = providers[plan.judge.name]
        if id(provider) not in listed:
            try:
                listed[id(provider)] = provider.list_models()
            except ProviderCallError as exc:
                where = f"the {plan.judge.provider} API of judge {plan.judge.name!r}"
                if exc.connection:
                    raise Unreachable.at(where, str(exc)) from None
                if not exc.transient:
                    raise
                # A time-out or a 5xx is named as such (never as a model missing from the list).
                raise RunStopped(f"{where}: {exc}. Nothing was asked; rerun when the server answers") from None
        models = listed[id(provider)]
        if plan.judge.model not in models:
            near = sorted(m for m in models if m.split("-")[:2] == plan.judge.model.split("-")[:2])[:5]
            hint = f"; similar ids offered: {', '.join(near)}" if near else ""
            raise InputError(
                f"judge {plan.judge.name!r}: model id {plan.judge.model!r} is not in the {plan.judge.provider} "
                f"model list{hint}. Fix `model` in judges.toml"
            )


def close_providers(providers: Iterable[Any]) -> None:
    """Close each provider's HTTP connections (providers without ``close`` are left alone)."""
    for provider in providers:
        close = getattr(provider, "close", None)
        if callable(close):
            close()
