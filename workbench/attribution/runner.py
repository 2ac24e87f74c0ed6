"""Running the judges in sync mode: bounded concurrency, each clip stored as its judge answers.

Progress, per-clip failures and cancelling go through the task protocol
(:class:`workbench.tasks.TaskContext`): each stored clip is one item. A cancel lets the
requests already in flight finish and stores them, then stops; a later run sends only the
requests not answered yet (the result cache in :mod:`workbench.attribution.plan`).
"""

from __future__ import annotations

import logging
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

from storage import Store
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
from workbench.attribution.providers import JudgeAuthError, JudgeProvider, JudgeRequest, ProviderCallError, make_provider
from workbench.attribution.records import Attempt, JudgeSummary, RunReport, evaluate_reply, finish_run, new_run, store_attempts
from workbench.attribution.schema import output_schema
from workbench.errors import InputError
from workbench.tagging.ontology import Ontology
from workbench.tasks import TaskCancelled, TaskContext

log = logging.getLogger(__name__)

# The ceiling for the one retry of a truncated reply (twice the configured budget, at most this).
MAX_RETRY_TOKENS = 32_000


def judge_one_clip(provider: JudgeProvider, judge: JudgeConfig, prompt: RenderedPrompt, schema: dict[str, Any]) -> list[Attempt]:
    """Ask one judge about one clip: a second attempt carries the first one's validation error.

    A reply cut off at ``max_tokens`` is asked again once with twice the budget (the same budget
    would be cut off again); a refusal is final (the same prompt would be refused again). Transport
    failures that survive the provider's own retries end the clip at once (sending the same request
    again would meet the same fault); :class:`JudgeAuthError` propagates.
    """
    attempts: list[Attempt] = []
    reason: str | None = None
    budget = judge
    for number in (1, 2):
        request = JudgeRequest(judge=budget, prompt=prompt, schema=schema, retry_reason=reason)
        try:
            reply = provider.complete(request)
        except ProviderCallError as exc:
            attempts.append(Attempt(number, None, None, str(exc)))
            break
        except JudgeAuthError:
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
        raise InputError(f"--mode must be sync or batch, got {mode!r}")
    if concurrency < 1:
        raise InputError("--concurrency must be at least 1")
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
        _run_plans(store, config, plans, providers, selection, report, mode, concurrency, task)
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
            continue
        task.check_cancel()
        provider = providers[plan.judge.name]
        if mode == "batch" and provider.supports_batch:
            submit_batch(store, plan, provider, selection, summary)
            failed = summary.status == "failed"
            task.item_done(f"{plan.judge.name} batch", not failed,
                           summary.failures[-1]["reason"] if failed and summary.failures else "",
                           units=len(plan.to_send))
        else:
            _run_sync(store, config, plan, provider, selection, summary, concurrency, task)


def _run_sync(
    store: Store,
    config: JudgesConfig,
    plan: JudgePlan,
    provider: JudgeProvider,
    selection: ClipSelection,
    summary: JudgeSummary,
    concurrency: int,
    task: TaskContext,
) -> None:
    run = new_run(store, plan.judge, selection, "sync", "running")
    summary.run_id = run.id
    summary.mode = "sync"
    schema = output_schema()
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=f"judge-{plan.judge.name}")
    queue = list(plan.to_send)
    in_flight: dict[Future[list[Attempt]], PlannedRequest] = {}
    stopping = False
    try:
        while in_flight or (queue and not stopping):
            # Submitting lazily keeps at most `concurrency` requests queued, so a stop is prompt.
            while queue and not stopping and len(in_flight) < concurrency:
                planned = queue.pop(0)
                in_flight[executor.submit(judge_one_clip, provider, plan.judge, planned.prompt, schema)] = planned
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                planned = in_flight.pop(future)
                attempts = future.result()
                with store.write() as session:
                    store_attempts(session, run, planned, attempts, config, summary)
                summary.sent += len(attempts)
                final = attempts[-1]
                try:
                    task.item_done(planned.clip.clip_key, final.ok,
                                   "" if final.ok else f"{plan.judge.name}: {final.failure or 'failed'}")
                except TaskCancelled:
                    # Requests already sent are paid for: store their answers, send nothing new.
                    stopping = True
        if stopping:
            raise TaskCancelled()
    except JudgeAuthError:
        summary.status = "failed"
        finish_run(store, run.id or 0, "failed")
        raise
    except BaseException:
        summary.status = "cancelled"
        finish_run(store, run.id or 0, "cancelled")
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
    finish_run(store, run.id or 0, "done")
