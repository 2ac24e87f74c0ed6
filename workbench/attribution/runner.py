"""Running the judges in sync mode: bounded concurrency, each clip stored as its judge answers.

Progress, per-clip failures and cancelling go through the task protocol
(:class:`workbench.tasks.TaskContext`): each stored clip is one item. A cancel lets the
requests already in flight finish and stores them, then stops; a later run sends only the
requests not answered yet (the result cache in :mod:`workbench.attribution.plan`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from storage import Store
from storage.models import JudgeRun
from workbench.attribution.batch import submit_batch
from workbench.attribution.config import JudgeConfig, JudgesConfig
from workbench.attribution.inputs import ClipSelection, select_clip_inputs
from workbench.attribution.plan import (
    JudgePlan,
    PlannedRequest,
    ProviderFactory,
    close_providers,
    plan_requests,
    verify_models,
)
from workbench.attribution.prompts import RenderedPrompt
from workbench.attribution.providers import (
    JudgeProvider,
    JudgeRequest,
    ProviderCallError,
    ProviderReply,
    make_provider,
)
from workbench.attribution.records import (
    Attempt,
    JudgeOutcome,
    JudgeSummary,
    RunReport,
    discard_empty_run,
    evaluate_reply,
    finish_run,
    mark_interrupted,
    new_run,
    store_outcomes,
)
from workbench.attribution.schema import output_schema
from workbench.errors import UsageError
from workbench.tagging.ontology import Ontology
from workbench.llm.engine import Campaign, RetryPolicy, write_waiting
from workbench.llm.errors import RunStopped, ServerFailing, Unreachable, takes_body_hook
from workbench.llm.journal import Journal, JournalBusy
from workbench.llm.urls import safe_url
from workbench.tasks import TaskCancelled, TaskContext

log = logging.getLogger(__name__)

# The ceiling for the one retry of a truncated reply (twice the configured budget, at most this).
MAX_RETRY_TOKENS = 32_000


def judge_one_clip(provider: JudgeProvider, judge: JudgeConfig, prompt: RenderedPrompt, schema: dict[str, Any],
                   *, send: Callable[[int, JudgeRequest], ProviderReply] | None = None) -> list[Attempt]:
    """Ask one judge about one clip: a second attempt carries the first one's validation error.

    A reply cut off at ``max_tokens`` is asked again once with twice the budget (the same budget
    would be cut off again); a refusal is final (the same prompt would be refused again). Transport
    failures that survive the provider's own retries end the clip at once (sending the same request
    again would meet the same fault); :class:`JudgeAuthError` propagates. ``send(number, request)``
    sends one attempt (the campaign engine's, which journals the reply; default: the provider).
    """
    send = send or (lambda _number, request: provider.complete(request))
    attempts: list[Attempt] = []
    reason: str | None = None
    budget = judge
    for number in (1, 2):
        request = JudgeRequest(judge=budget, prompt=prompt, schema=schema, retry_reason=reason)
        try:
            reply = send(number, request)
        except ProviderCallError as exc:
            attempts.append(Attempt(number, None, None, str(exc)))
            break
        except RunStopped:
            raise
        except Exception as exc:  # noqa: BLE001 - one odd reply must not lose the answers already received
            log.exception("judge %s: unexpected failure on one request", judge.name)
            attempts.append(Attempt(number, None, None, f"unexpected failure: {type(exc).__name__}: {exc}"))
            break
        check, failure = evaluate_reply(reply, prompt, budget.max_tokens)
        attempts.append(Attempt(number, reply, check, failure))
        if failure is None or reply.refusal:
            break
        if reply.truncated:
            budget = replace(budget, max_tokens=min(2 * budget.max_tokens, MAX_RETRY_TOKENS))
            reason = None  # the reply was cut off, not wrong: ask the same question with more room
        else:
            reason = failure
    return attempts


def run_judges(
    store: Store,
    config: JudgesConfig,
    *,
    judge_names: list[str] | None = None,
    alm_model: str | None = None,
    clip_keys: list[str] | None = None,
    mode: str = "sync",
    force: bool = False,
    concurrency: int = 4,
    base_url: str | None = None,
    provider_factory: ProviderFactory | None = None,
    names: Ontology | None = None,
    task: TaskContext | None = None,
) -> RunReport:
    """Run the judges on the selected clips, in sync mode or by submitting Message Batches.

    Parameters
    ----------
    store, config
        The project and the judges configuration.
    judge_names
        Judges to run (default: the configured trio).
    alm_model, clip_keys
        Which ALM's chain-of-thought, on which clips (default: all with a prediction).
    mode
        ``"sync"`` (bounded concurrency, results as each judge answers) or ``"batch"`` (submit; collect
        later with :func:`workbench.attribution.batch.collect_batches`).
    force
        Send even requests whose fingerprint is already answered.
    concurrency
        Requests in flight at once per judge in sync mode.
    base_url
        Another endpoint for every judge (a proxy, or a test server).
    provider_factory
        Builds a provider per judge (default: :func:`make_provider`).
    task
        Progress and cancel: the total is the number of requests to send; each stored clip is one
        item (key: the clip key; error: "judge: reason"); a batch submission counts all its requests.

    Raises
    ------
    JudgeAuthError
        The provider refused the key; work stored so far is kept and the run is marked failed.
    TaskCancelled
        ``task`` was cancelled: the clips in flight are stored, the run is marked cancelled.
    """
    if mode not in ("sync", "batch"):
        raise UsageError(f"--mode must be sync or batch, got {mode!r}")
    if concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    task = task or TaskContext()
    judges = config.select(judge_names)
    selection = select_clip_inputs(store, alm_model=alm_model, clip_keys=clip_keys, names=names)
    plans = plan_requests(store, judges, selection.inputs, force=force)
    report = RunReport(alm_model=selection.alm_model, judges=[], skipped=selection.skipped)
    active = [p for p in plans if p.to_send]
    task.set_total(sum(len(p.to_send) for p in active))
    factory = provider_factory or (lambda judge: make_provider(judge, base_url=base_url))
    providers = {plan.judge.name: factory(plan.judge) for plan in active}
    try:
        if active:
            verify_models(active, providers)
        _run_plans(store, config, plans, providers, selection, report, mode, concurrency, task, base_url)
    finally:
        close_providers(providers.values())
    return report


def _run_plans(
    store: Store,
    config: JudgesConfig,
    plans: list[JudgePlan],
    providers: dict[str, JudgeProvider],
    selection: ClipSelection,
    report: RunReport,
    mode: str,
    concurrency: int,
    task: TaskContext,
    base_url: str | None = None,
) -> None:
    for plan in plans:
        summary = JudgeSummary(
            judge=plan.judge.name,
            model=plan.judge.model,
            provider=plan.judge.provider,
            mode=mode,
            answered_before=plan.answered,
            refused_before=plan.refused,
            pending_in_batch=plan.pending,
            status="nothing to send" if not plan.to_send else "done",
        )
        report.judges.append(summary)
        if not plan.to_send:
            try:
                judge_journal(store, plan.judge).close()  # runs a killed process left "running" are marked
            except JournalBusy:
                pass  # another run of this judge is alive: its runs are its own
            continue
        task.check_cancel()
        provider = providers[plan.judge.name]
        if mode == "batch" and provider.supports_batch:
            submit_batch(store, plan, provider, selection, summary, task=task)
            failed = summary.status == "failed"
            task.item_done(f"{plan.judge.name} batch", not failed,
                           summary.failures[-1]["reason"] if failed and summary.failures else "",
                           units=len(plan.to_send))
        else:
            _run_sync(store, config, plan, provider, selection, summary, concurrency, task, base_url)


class JudgeQuestions:
    """The judges' question kind: one item per clip for one judge; stored as calls and judgments."""

    def __init__(self, store: Store, config: JudgesConfig, plan: JudgePlan, provider: JudgeProvider,
                 run: JudgeRun, summary: JudgeSummary) -> None:
        self.project, self.config, self.plan, self.provider = store, config, plan, provider
        self.run, self.summary = run, summary
        self.schema = output_schema()
        # Providers that hand over the raw body before parsing it get it journaled at once.
        self.raw_bodies = takes_body_hook(getattr(provider, "complete", None)) and hasattr(provider, "reply_from_body")

    def key(self, item: PlannedRequest) -> str:
        return item.fingerprint

    def label(self, item: PlannedRequest) -> str:
        return item.clip.clip_key

    def work(self, campaign: Campaign[PlannedRequest, JudgeOutcome], item: PlannedRequest) -> JudgeOutcome:
        def send(number: int, request: JudgeRequest) -> ProviderReply:
            return campaign.request(
                item.fingerprint,
                (lambda keep: self.provider.complete(request, on_body=keep)) if self.raw_bodies  # type: ignore[call-arg]
                else (lambda _keep: self.provider.complete(request)),
                lambda reply: {"reply": reply.as_record()},
                note={"number": number, "max_tokens": request.judge.max_tokens}).reply

        return JudgeOutcome(item, judge_one_clip(self.provider, self.plan.judge, item.prompt, self.schema, send=send))

    def replay(self, item: PlannedRequest, entries: list[dict[str, Any]]) -> JudgeOutcome:
        attempts = []
        for entry in entries:
            number = int(entry.get("number") or len(attempts) + 1)
            try:
                reply = ProviderReply.from_record(entry["reply"]) if "reply" in entry \
                    else self.provider.reply_from_body(entry["body"])  # type: ignore[attr-defined]
            except ProviderCallError as exc:
                attempts.append(Attempt(number, None, None, str(exc)))
                continue
            check, failure = evaluate_reply(reply, item.prompt, int(entry.get("max_tokens") or self.plan.judge.max_tokens))
            attempts.append(Attempt(number, reply, check, failure))
        return JudgeOutcome(item, attempts)

    def failed(self, item: PlannedRequest, reason: str) -> JudgeOutcome:
        log.error("judge %s: unexpected failure on one request: %s", self.plan.judge.name, reason)
        return JudgeOutcome(item, [Attempt(1, None, None, f"unexpected failure: {reason}")])

    def not_sent(self, item: PlannedRequest, reason: str) -> JudgeOutcome | None:
        return None

    def store(self, outcomes: list[JudgeOutcome]) -> None:
        store_outcomes(self.project, self.run, outcomes, self.config, self.summary)

    def announce(self, outcomes: list[JudgeOutcome], task: TaskContext) -> None:
        for outcome in outcomes:
            self.summary.sent += len(outcome.attempts)
        for outcome in outcomes:
            final = outcome.attempts[-1]
            task.item_done(outcome.item.clip.clip_key, final.ok,
                           "" if final.ok else f"{self.plan.judge.name}: {final.failure or 'failed'}")


def judge_journal(store: Store, judge: JudgeConfig) -> Journal:
    """The journal of one judge's replies (locked for this process); its runs a killed process left
    ``running`` are marked interrupted."""
    journal = Journal.open(store, "judge", f"{judge.name}\0{judge.provider}\0{judge.model}", f"judge {judge.name!r}")
    try:
        mark_interrupted(store, judge.name)
    except BaseException:
        journal.close()
        raise
    return journal


def _run_sync(
    store: Store,
    config: JudgesConfig,
    plan: JudgePlan,
    provider: JudgeProvider,
    selection: ClipSelection,
    summary: JudgeSummary,
    concurrency: int,
    task: TaskContext,
    base_url: str | None = None,
) -> None:
    journal = judge_journal(store, plan.judge)
    status = "failed"
    run: JudgeRun | None = None
    try:
        run = write_waiting(lambda: new_run(store, plan.judge, selection, "sync", "running"), task=task,
                            what=f"judge {plan.judge.name}: the run's record")
        summary.run_id = run.id
        summary.mode = "sync"
        questions = JudgeQuestions(store, config, plan, provider, run, summary)
        # The SDK retries transient faults itself (honouring retry-after): the engine adds none.
        campaign: Campaign[PlannedRequest, JudgeOutcome] = Campaign(
            questions, what=f"judge {plan.judge.name}",
            where=safe_url(base_url or plan.judge.base_url) or plan.judge.provider, journal=journal,
            concurrency=concurrency, retry=RetryPolicy(max_retries=0), task=task,
            resume="Rerun `aglw judge` once the server answers: it asks only the clips without a judgment")
        rest = campaign.replay(plan.to_send)
        if rest:
            campaign.run(rest)
        status = "done"
    except TaskCancelled:
        status = "cancelled"
        raise
    except (Unreachable, ServerFailing):
        status = "failed"
        if run is not None and discard_empty_run(store, run.id or 0):
            run = None  # nothing was answered: no run is left behind
            summary.run_id = None
        raise
    except BaseException:
        status = "failed"
        raise
    finally:
        summary.status = status
        try:
            if run is not None:
                write_waiting(lambda: finish_run(store, run.id or 0, status), task=task,
                              what=f"judge {plan.judge.name}: the run's status")
        finally:
            journal.close()
