"""Dry run: tokens and cost per request and in total, sync and batch, before anything is sent.

By default nothing is contacted (input tokens are estimated from the prompt's characters);
``count_tokens`` asks the provider's free token-counting endpoint instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlmodel import col, select

from storage import Store
from storage.models import Clip, Prediction
from workbench.attribution.config import JudgesConfig
from workbench.attribution.cost import call_cost
from workbench.attribution.inputs import ClipSelection, SkippedClip, select_clip_inputs
from workbench.attribution.plan import ProviderFactory, close_providers, plan_requests
from workbench.attribution.prompts import CategoryInput, ClipInput, RenderedPrompt, load_template, render_clip_prompt
from workbench.attribution.providers import JudgeRequest, TokenUsage, make_provider
from workbench.attribution.schema import output_schema
from workbench.tagging.ontology import Ontology


@dataclass(frozen=True)
class ClipEstimate:
    """Estimated tokens and cost of one (judge, clip) request."""

    judge: str
    clip: str
    input_tokens: int
    output_tokens: int
    cost_sync_usd: float | None
    cost_batch_usd: float | None
    assumed: bool = False


@dataclass
class DryRunReport:
    """What a run would send and cost, before anything is sent."""

    alm_model: str | None
    method: str
    assumptions: list[str]
    clips: list[ClipEstimate]
    skipped: list[SkippedClip]
    answered_before: int = 0

    def totals(self) -> dict[str, Any]:
        """Totals per judge and overall (costs None when a model has no price)."""
        per_judge: dict[str, dict[str, Any]] = {}
        for row in self.clips:
            entry = per_judge.setdefault(
                row.judge, {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_sync_usd": 0.0, "cost_batch_usd": 0.0}
            )
            entry["requests"] += 1
            entry["input_tokens"] += row.input_tokens
            entry["output_tokens"] += row.output_tokens
            for key, value in (("cost_sync_usd", row.cost_sync_usd), ("cost_batch_usd", row.cost_batch_usd)):
                entry[key] = None if value is None or entry[key] is None else entry[key] + value
        overall: dict[str, Any] = {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_sync_usd": 0.0, "cost_batch_usd": 0.0}
        for entry in per_judge.values():
            for key in overall:
                overall[key] = None if entry[key] is None or overall[key] is None else overall[key] + entry[key]
        return {"per_judge": per_judge, "total": overall}

    def as_dict(self) -> dict[str, Any]:
        return {
            "alm_model": self.alm_model,
            "method": self.method,
            "assumptions": self.assumptions,
            "clips": [vars(c) for c in self.clips],
            "skipped": [vars(s) for s in self.skipped],
            "answered_before": self.answered_before,
            **self.totals(),
        }


def _assumed_inputs(
    store: Store, selection: ClipSelection, clip_keys: list[str] | None, n_categories: int
) -> tuple[list[ClipInput], list[str]]:
    """Stand-in inputs for clips without tags or without a prediction, sized like typical ones."""
    with store.session() as session:
        reasonings = [
            r for r in session.exec(select(Prediction.reasoning).where(Prediction.alm_run_id == selection.alm_run_id)) if r
        ]
        query = select(Clip).order_by(Clip.key)
        if clip_keys is not None:
            query = query.where(col(Clip.key).in_(clip_keys))
        clips = session.exec(query).all()
    lengths = sorted(len(r) for r in reasonings)
    typical_cot = lengths[len(lengths) // 2] if lengths else 1000
    judged = {c.clip_id for c in selection.inputs}
    stand_in_categories = tuple(
        CategoryInput(f"/m/0assumed{i:02d}", "Typical sound category name", "Sounds of things", 0.5)
        for i in range(n_categories)
    )
    inputs = []
    for clip in clips:
        if clip.id in judged:
            continue
        inputs.append(
            ClipInput(
                clip_id=clip.id or 0,
                clip_key=clip.key,
                categories=stand_in_categories,
                cot="x" * typical_cot,
                predicted_city="Predicted city",
                predicted_country="Predicted country",
                predicted_latitude="00.0000",
                predicted_longitude="000.0000",
                true_city=clip.city,
                true_country=clip.country,
                true_latitude=clip.latitude,
                true_longitude=clip.longitude,
                error_km=1000.0,
            )
        )
    notes = [
        f"{len(inputs)} clips without usable tags or prediction are assumed to have {n_categories} categories "
        f"and a chain-of-thought of {typical_cot} characters (the median of {selection.alm_model!r}'s "
        f"{len(lengths)} stored reasonings)",
    ]
    return inputs, notes


def dry_run(
    store: Store,
    config: JudgesConfig,
    *,
    judge_names: list[str] | None = None,
    alm_model: str | None = None,
    clip_keys: list[str] | None = None,
    force: bool = False,
    base_url: str | None = None,
    count_tokens: bool = False,
    assume_categories: int | None = None,
    provider_factory: ProviderFactory | None = None,
    names: Ontology | None = None,
) -> DryRunReport:
    """Estimate tokens and cost per clip and in total, sync and batch, without sending any request.

    Parameters
    ----------
    count_tokens
        Use the provider's token-counting endpoint (free, calls no model, but sends every prompt to
        the provider). Only on request: a dry run otherwise contacts nothing and estimates input
        tokens as characters / 3.5.
    assume_categories
        Also estimate clips that have no tags or no prediction, assuming this many categories and a
        chain-of-thought of the ALM's median length (always with the character estimate).

    Notes
    -----
    Output tokens are estimated as 40 + 60 per category. Prompt caching of the shared system part is
    not credited: every request is priced at the full input rate, so the figures are an upper bound.
    """
    from workbench.attribution.cost import estimate_output_tokens, estimate_tokens

    judges = config.select(judge_names)
    selection = select_clip_inputs(store, alm_model=alm_model, clip_keys=clip_keys, names=names)
    plans = plan_requests(store, judges, selection.inputs, force=force)
    factory = provider_factory or (lambda judge: make_provider(judge, base_url=base_url))
    assumptions = [
        "output tokens estimated as 40 + 60 per category",
        "prompt caching not credited: every request priced at the full input rate (an upper bound)",
        f"batch prices = {config.batch_discount:g} × sync prices",
    ]
    extra_inputs: list[ClipInput] = []
    if assume_categories is not None:
        extra_inputs, notes = _assumed_inputs(store, selection, clip_keys, assume_categories)
        assumptions.extend(notes)
    method = "token counting endpoint" if count_tokens else "estimate: characters / 3.5"
    report = DryRunReport(
        alm_model=selection.alm_model,
        method=method,
        assumptions=assumptions,
        clips=[],
        skipped=[] if assume_categories is not None else selection.skipped,
        answered_before=sum(p.answered for p in plans),
    )
    schema = output_schema()
    for plan in plans:
        judge = plan.judge
        provider = factory(judge) if count_tokens and plan.to_send else None
        price = config.prices.get(judge.model)
        template = load_template(judge.prompt_version)
        rows: list[tuple[ClipInput, RenderedPrompt, bool]] = [(p.clip, p.prompt, False) for p in plan.to_send]
        rows += [(clip, render_clip_prompt(clip, template), True) for clip in extra_inputs]
        for clip, prompt, assumed in rows:
            if provider is not None and not assumed:
                input_tokens = provider.count_tokens(JudgeRequest(judge, prompt, schema)) or 0
            else:
                input_tokens = estimate_tokens(prompt.system) + estimate_tokens(prompt.user)
            output_tokens = estimate_output_tokens(len(prompt.category_ids))
            usage = TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens)
            report.clips.append(
                ClipEstimate(
                    judge=judge.name,
                    clip=clip.clip_key,
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    cost_sync_usd=call_cost(usage, price),
                    cost_batch_usd=call_cost(usage, price, batch=True, discount=config.batch_discount),
                    assumed=assumed,
                )
            )
        if provider is not None:
            close_providers([provider])
    return report
