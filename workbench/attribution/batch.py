"""Judging by Message Batches: submit a judge's requests as one batch, collect the results later.

A batch run is stored with its request map (custom id → clip and fingerprint) before it is
submitted, so a crash never leaves an untracked paid batch. Collecting matches results on the
custom id, gives an invalid reply its one interactive retry, and stores each result as it is
read; collecting again after a cancel or a crash skips the results already stored.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlmodel import col, select

from storage import Store
from storage.models import AlmRun, Clip, JudgeCall, JudgeRun
from workbench.attribution.config import JudgeConfig, JudgesConfig
from workbench.attribution.inputs import ClipSelection, select_clip_inputs
from workbench.attribution.plan import JudgePlan, PlannedRequest, ProviderFactory, close_providers, custom_id_for
from workbench.attribution.prompts import ClipInput, RenderedPrompt, load_template, render_clip_prompt, request_fingerprint
from workbench.attribution.providers import JudgeAuthError, JudgeProvider, JudgeRequest, ProviderCallError, make_provider
from workbench.attribution.records import Attempt, JudgeSummary, RunReport, evaluate_reply, finish_run, new_run, store_attempts
from workbench.attribution.schema import output_schema
from workbench.tagging.ontology import Ontology
from workbench.tasks import TaskContext

log = logging.getLogger(__name__)


def submit_batch(
    store: Store, plan: JudgePlan, provider: JudgeProvider, selection: ClipSelection, summary: JudgeSummary
) -> None:
    """Submit one judge's planned requests as one batch and record the run (status ``submitted``).

    A failed submission marks the run failed and is listed in ``summary.failures``;
    :class:`JudgeAuthError` propagates.
    """
    schema = output_schema()
    request_map = {
        custom_id_for(p): {"clip_id": p.clip.clip_id, "fingerprint": p.fingerprint, "attempt": 1}
        for p in plan.to_send
    }
    # The run (with its request map) is stored before submitting so that a crash right after the
    # submission leaves a record to investigate, never an untracked paid batch.
    run = new_run(store, plan.judge, selection, "batch", "submitting")
    finish_run(store, run.id or 0, "submitting", request_map=request_map)
    summary.run_id = run.id
    summary.mode = "batch"
    try:
        # Keyed by custom id: a batch holding one id twice is rejected whole by the API.
        unique = {custom_id_for(p): p for p in plan.to_send}
        batch_id = provider.submit_batch([(cid, JudgeRequest(plan.judge, p.prompt, schema)) for cid, p in unique.items()])
    except (ProviderCallError, JudgeAuthError) as exc:
        finish_run(store, run.id or 0, "failed")
        summary.status = "failed"
        if isinstance(exc, JudgeAuthError):
            raise
        summary.failures.append({"clip": "*", "reason": f"batch submission failed: {exc}"})
        return
    finish_run(store, run.id or 0, "submitted", batch_id=batch_id)
    summary.batch_id = batch_id
    summary.status = "submitted"
    # Billed when the results exist, at the batch price (see `aglw judge --collect`); not $0.
    summary.cost_usd = None
    summary.sent = len(plan.to_send)


def _judge_of_run(run: JudgeRun, config: JudgesConfig) -> JudgeConfig:
    configured = config.judges.get(run.judge_name)
    if configured is not None and configured.model == run.model_id and configured.provider == run.provider:
        return configured
    options = run.options or {}
    return JudgeConfig(
        name=run.judge_name,
        provider=run.provider,
        model=run.model_id,
        prompt_version=run.prompt_version,
        max_tokens=int(options.get("max_tokens", 2048)),
        max_retries=int(options.get("max_retries", 4)),
        timeout_s=float(options.get("timeout_s", 120)),
        base_url=options.get("base_url"),
    )


def collect_batches(
    store: Store,
    config: JudgesConfig,
    *,
    base_url: str | None = None,
    provider_factory: ProviderFactory | None = None,
    names: Ontology | None = None,
    task: TaskContext | None = None,
) -> RunReport:
    """Collect the results of every submitted batch that has ended (safe to repeat after a restart).

    Results are matched on ``custom_id`` through the stored request map; a succeeded reply that is
    invalid gets its one retry as an interactive request; errored, expired and canceled requests are
    stored as failed calls (a later ``judge`` run sends them again).

    ``task`` reports each stored result as one item (key: the clip key); a cancel stops after
    the result in hand is stored, the run stays ``submitted``, and collecting again stores only
    the results not stored yet.
    """
    task = task or TaskContext()
    factory = provider_factory or (lambda judge: make_provider(judge, base_url=base_url))
    with store.session() as session:
        runs = session.exec(
            select(JudgeRun).where(JudgeRun.mode == "batch", JudgeRun.status == "submitted").order_by(JudgeRun.id)
        ).all()
    report = RunReport(alm_model=None, judges=[], skipped=[])
    schema = output_schema()
    for run in runs:
        judge = _judge_of_run(run, config)
        summary = JudgeSummary(
            judge=run.judge_name, model=run.model_id, provider=run.provider, run_id=run.id, mode="batch",
            batch_id=run.batch_id,
        )
        report.judges.append(summary)
        provider = factory(judge)
        try:
            _collect_run(store, run, judge, provider, config, schema, summary, names, task)
        finally:
            close_providers([provider])
    return report


def _collect_run(
    store: Store,
    run: JudgeRun,
    judge: JudgeConfig,
    provider: JudgeProvider,
    config: JudgesConfig,
    schema: dict[str, Any],
    summary: JudgeSummary,
    names: Ontology | None,
    task: TaskContext,
) -> None:
    """Store the results of one ended batch run (or note that it is still in progress)."""
    state = provider.batch_state(run.batch_id or "")
    if not state.ended:
        summary.status = f"in progress ({state.counts.get('processing', 0)} requests processing)"
        return
    planned_by_clip = _replan_run(store, run, judge, names)
    request_map = run.request_map or {}
    # Results stored by an earlier, interrupted collection are not stored twice.
    with store.session() as session:
        stored_before: set[str] = set(
            session.exec(
                select(JudgeCall.custom_id).where(JudgeCall.judge_run_id == run.id, col(JudgeCall.custom_id).is_not(None))
            ).all()
        )
    task.set_total(task.total + len([cid for cid in request_map if cid not in stored_before]))
    seen = set(stored_before)
    for item in provider.batch_results(run.batch_id or ""):
        if item.custom_id in stored_before:
            continue
        entry = request_map.get(item.custom_id)
        if entry is None or item.custom_id in seen:
            log.warning("batch %s: ignoring result with unknown or repeated custom_id %s", run.batch_id, item.custom_id)
            continue
        seen.add(item.custom_id)
        planned = planned_by_clip.get(int(entry["clip_id"]))
        attempts = _batch_attempts(item, entry, planned, provider, judge, schema)
        if planned is None or planned.fingerprint != entry["fingerprint"]:
            planned = _stale_request(store, run, entry)
        with store.write() as session:
            store_attempts(session, run, planned, attempts, config, summary)
        _item_done(task, planned, attempts, judge)
    missing = [cid for cid in request_map if cid not in seen]
    for cid in missing:
        entry = request_map[cid]
        planned = planned_by_clip.get(int(entry["clip_id"])) or _stale_request(store, run, entry)
        attempt = Attempt(1, None, None, "the batch ended without a result for this request", custom_id=cid, batch=True)
        with store.write() as session:
            store_attempts(session, run, planned, [attempt], config, summary)
        _item_done(task, planned, [attempt], judge)
    finish_run(store, run.id or 0, "done")
    summary.status = "collected"


def _item_done(task: TaskContext, planned: PlannedRequest, attempts: list[Attempt], judge: JudgeConfig) -> None:
    final = attempts[-1]
    task.item_done(planned.clip.clip_key, final.ok, "" if final.ok else f"{judge.name}: {final.failure or 'failed'}")


def _batch_attempts(
    item: Any,
    entry: dict[str, Any],
    planned: PlannedRequest | None,
    provider: JudgeProvider,
    judge: JudgeConfig,
    schema: dict[str, Any],
) -> list[Attempt]:
    if item.outcome != "succeeded" or item.reply is None:
        return [Attempt(1, None, None, item.error or f"batch request {item.outcome}", custom_id=item.custom_id, batch=True)]
    if planned is None or planned.fingerprint != entry["fingerprint"]:
        return [
            Attempt(
                1, item.reply, None,
                "the clip's inputs changed after submission (tags or prediction); rerun `aglw judge`",
                custom_id=item.custom_id, batch=True,
            )
        ]
    check, failure = evaluate_reply(item.reply, planned.prompt, judge.max_tokens)
    first = Attempt(1, item.reply, check, failure, custom_id=item.custom_id, batch=True)
    if failure is None:
        return [first]
    retry = JudgeRequest(judge, planned.prompt, schema, retry_reason=failure)
    try:
        reply = provider.complete(retry)
    except ProviderCallError as exc:
        return [first, Attempt(2, None, None, str(exc))]
    check2, failure2 = evaluate_reply(reply, planned.prompt, judge.max_tokens)
    return [first, Attempt(2, reply, check2, failure2)]


def _replan_run(store: Store, run: JudgeRun, judge: JudgeConfig, names: Ontology | None) -> dict[int, PlannedRequest]:
    with store.session() as session:
        alm = session.get(AlmRun, run.alm_run_id) if run.alm_run_id else None
        keys = session.exec(
            select(Clip.key).where(col(Clip.id).in_([int(e["clip_id"]) for e in (run.request_map or {}).values()]))
        ).all()
    if alm is None:
        return {}
    selection = select_clip_inputs(
        store, alm_model=alm.model, clip_keys=list(keys), tagger_run_id=run.tagger_run_id, names=names
    )
    template = load_template(judge.prompt_version)
    schema = output_schema()
    planned = {}
    for clip in selection.inputs:
        prompt = render_clip_prompt(clip, template)
        planned[clip.clip_id] = PlannedRequest(clip, prompt, request_fingerprint(judge.provider, judge.model, prompt, schema))
    return planned


def _stale_request(store: Store, run: JudgeRun, entry: dict[str, Any]) -> PlannedRequest:
    """A placeholder request for a result whose clip can no longer be rebuilt (kept for the record)."""
    with store.session() as session:
        clip = session.get(Clip, int(entry["clip_id"]))
    key = clip.key if clip else str(entry["clip_id"])
    clip_input_row = ClipInput(clip_id=int(entry["clip_id"]), clip_key=key, categories=(), cot="")
    return PlannedRequest(clip_input_row, RenderedPrompt(version=run.prompt_version, system="", user=""), entry["fingerprint"])
