"""Storing judgments: every request and reply as a ``JudgeCall``, the final attempt of a clip
as one ``Judgment`` per listed category, the ``JudgeRun`` rows, and the per-judge summaries.

Every request and reply is stored (retries too), so tokens and cost are accounted per call and
a failed clip keeps the reason of its last attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from storage import Store
from storage.models import JudgeCall, JudgeRun, Judgment, utcnow
from workbench.attribution.config import JudgeConfig, JudgesConfig
from workbench.attribution.cost import call_cost
from workbench.attribution.inputs import ClipSelection, SkippedClip
from workbench.attribution.plan import PlannedRequest
from workbench.attribution.prompts import RenderedPrompt
from workbench.attribution.providers import ProviderReply, TokenUsage
from workbench.attribution.schema import ReplyCheck, check_reply


@dataclass(frozen=True)
class Attempt:
    """One request and its outcome."""

    number: int
    reply: ProviderReply | None
    check: ReplyCheck | None
    failure: str | None
    custom_id: str | None = None
    batch: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None and self.check is not None and self.check.ok


def evaluate_reply(reply: ProviderReply, prompt: RenderedPrompt, max_tokens: int) -> tuple[ReplyCheck | None, str | None]:
    """Check a reply: a refusal or truncation fails outright, otherwise the schema and ids decide."""
    if reply.refusal:
        return None, "refusal: the model declined to answer (stop_reason=refusal)"
    if reply.truncated:
        return None, (
            f"truncated: the reply stopped at the output limit (stop_reason={reply.stop_reason}, "
            f"max_tokens={max_tokens}); raise max_tokens in judges.toml"
        )
    check = check_reply(reply.text, prompt.category_ids, prompt.cot)
    return check, None if check.ok else f"invalid reply: {check.reason}"


@dataclass
class JudgeSummary:
    """What one judge did in one invocation (tokens and cost included)."""

    judge: str
    model: str
    provider: str
    run_id: int | None = None
    mode: str = "sync"
    batch_id: str | None = None
    status: str = "done"
    sent: int = 0
    answered_before: int = 0
    refused_before: int = 0
    pending_in_batch: int = 0
    ok: int = 0
    failed: int = 0
    retries: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=lambda: TokenUsage().as_dict())
    cost_usd: float | None = 0.0

    def add_usage(self, usage: TokenUsage, cost: float | None) -> None:
        for key, value in usage.as_dict().items():
            self.tokens[key] += value
        if cost is None or self.cost_usd is None:
            self.cost_usd = None
        else:
            self.cost_usd += cost


@dataclass
class RunReport:
    """A judging invocation: per-judge summaries plus the clips skipped."""

    alm_model: str | None
    judges: list[JudgeSummary]
    skipped: list[SkippedClip]

    @property
    def total_cost_usd(self) -> float | None:
        costs = [j.cost_usd for j in self.judges]
        return None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None))

    @property
    def total_tokens(self) -> dict[str, int]:
        total = TokenUsage().as_dict()
        for summary in self.judges:
            for key, value in summary.tokens.items():
                total[key] += value
        return total

    def as_dict(self) -> dict[str, Any]:
        return {
            "alm_model": self.alm_model,
            "judges": [vars(j) for j in self.judges],
            "skipped": [vars(s) for s in self.skipped],
            "tokens": self.total_tokens,
            "cost_usd": self.total_cost_usd,
        }


def store_attempts(
    session: Session,
    run: JudgeRun,
    planned: PlannedRequest,
    attempts: list[Attempt],
    config: JudgesConfig,
    summary: JudgeSummary,
) -> None:
    """Write every attempt as a ``JudgeCall`` and the final one as one ``Judgment`` per category."""
    final_call: JudgeCall | None = None
    for attempt in attempts:
        usage = attempt.reply.usage if attempt.reply else TokenUsage()
        cost = call_cost(usage, config.prices.get(run.model_id), batch=attempt.batch, discount=config.batch_discount)
        summary.add_usage(usage, cost if attempt.reply else 0.0)
        call = JudgeCall(
            judge_run_id=run.id or 0,
            clip_id=planned.clip.clip_id,
            fingerprint=planned.fingerprint,
            attempt=attempt.number,
            custom_id=attempt.custom_id,
            status="ok" if attempt.ok else "failed",
            failure_reason=attempt.failure,
            stop_reason=attempt.reply.stop_reason if attempt.reply else None,
            raw_reply=attempt.reply.text if attempt.reply else None,
            parsed=attempt.check.parsed if attempt.check else None,
            usage=usage.as_dict() if attempt.reply else None,
            cost_usd=cost if attempt.reply else None,
        )
        session.add(call)
        final_call = call
        if attempt.number > 1:
            summary.retries += 1
    session.flush()
    final = attempts[-1]
    if final.ok and final.check is not None:
        summary.ok += 1
        for verdict in final.check.verdicts:
            session.add(
                Judgment(
                    judge_run_id=run.id or 0,
                    judge_call_id=final_call.id if final_call else None,
                    clip_id=planned.clip.clip_id,
                    category_id=verdict.audioset_id,
                    contribution=verdict.contribution,
                    effect=verdict.effect,
                    mentioned=verdict.mentioned,
                    evidence=verdict.evidence,
                    evidence_found=verdict.evidence_found,
                    status="ok",
                )
            )
    else:
        summary.failed += 1
        summary.failures.append({"clip": planned.clip.clip_key, "reason": final.failure or "unknown"})
        for category_id in planned.prompt.category_ids:
            session.add(
                Judgment(
                    judge_run_id=run.id or 0,
                    judge_call_id=final_call.id if final_call else None,
                    clip_id=planned.clip.clip_id,
                    category_id=category_id,
                    status="failed",
                    failure_reason=final.failure,
                )
            )


@dataclass
class JudgeOutcome:
    """One clip judged: every attempt (the last decides)."""

    item: PlannedRequest
    attempts: list[Attempt]


def store_outcomes(store: Store, run: JudgeRun, outcomes: list[JudgeOutcome], config: JudgesConfig,
                   summary: JudgeSummary) -> None:
    """Write clips judged in one transaction (a sync run's group, a batch's result).

    ``summary`` counts what is committed: a write that fails (another program's lock, tried again
    by the caller) leaves its counts as they were.
    """
    before = (summary.ok, summary.failed, summary.retries, len(summary.failures), dict(summary.tokens),
              summary.cost_usd)
    try:
        with store.write() as session:
            for outcome in outcomes:
                store_attempts(session, run, outcome.item, outcome.attempts, config, summary)
    except BaseException:
        summary.ok, summary.failed, summary.retries, n_failures, summary.tokens, summary.cost_usd = before
        del summary.failures[n_failures:]
        raise


def new_run(store: Store, judge: JudgeConfig, selection: ClipSelection, mode: str, status: str) -> JudgeRun:
    """Store a new ``JudgeRun`` of ``judge`` over ``selection`` (its id is set on return)."""
    with store.write() as session:
        run = JudgeRun(
            judge_name=judge.name,
            provider=judge.provider,
            model_id=judge.model,
            prompt_version=judge.prompt_version,
            options=judge.options(),
            alm_run_id=selection.alm_run_id,
            tagger_run_id=selection.tagger_run_id,
            mode=mode,
            status=status,
        )
        session.add(run)
    return run


def finish_run(store: Store, run_id: int, status: str, **changes: Any) -> None:
    """Set a run's status (and ``finished_at`` when it ended), plus any other column in ``changes``."""
    with store.write() as session:
        run = session.get(JudgeRun, run_id)
        if run is None:  # pragma: no cover - the run was written by this process moments ago
            return
        run.status = status
        if status in ("done", "failed", "cancelled"):
            run.finished_at = utcnow()
        for key, value in changes.items():
            setattr(run, key, value)
        session.add(run)


def discard_empty_run(store: Store, run_id: int) -> bool:
    """Delete a run that holds no call (a run stopped before any answer); True when it was deleted."""
    from sqlmodel import func, select

    with store.write() as session:
        calls = session.exec(select(func.count()).select_from(JudgeCall).where(JudgeCall.judge_run_id == run_id)).one()
        if calls:
            return False
        run = session.get(JudgeRun, run_id)
        if run is not None:
            session.delete(run)
    return True


def mark_interrupted(store: Store, judge_name: str) -> None:
    """Mark the sync runs of ``judge_name`` that a killed process left ``running`` as ``interrupted``
    (the caller holds the judge's journal lock, so none of them is alive)."""
    from sqlmodel import col, select

    with store.session() as session:
        stale = session.exec(select(JudgeRun.id).where(JudgeRun.judge_name == judge_name, JudgeRun.mode == "sync",
                                                        col(JudgeRun.status) == "running")).all()
    if not stale:
        return
    with store.write() as session:
        for run_id in stale:
            run = session.get(JudgeRun, run_id)
            if run is not None and run.status == "running":
                run.status = "interrupted"
                run.finished_at = utcnow()
                session.add(run)
