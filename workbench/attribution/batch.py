"""Judging by Message Batches: submit a judge's requests as one batch, collect the results later.

The protocol — the run and its request map (custom id → clip and fingerprint) stored before
submitting, the state, results matched on the custom id, each journaled then stored as it is
read, collecting again after a cancel or a crash skipping the results already stored — is the
one batch driver's (:mod:`workbench.llm.batch`); this module is its Anthropic adapter for the
judges. What stays here: the request format, reading a result against the clip's prompt as
rebuilt now, and an invalid reply's one interactive retry (journaled by the driver, so a collect
killed midway does not buy it twice).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlmodel import col, select

from storage import Store
from storage.models import AlmRun, Clip, JudgeCall, JudgeRun
from workbench.attribution.config import JudgeConfig, JudgesConfig
from workbench.attribution.inputs import ClipSelection, select_clip_inputs
from workbench.attribution.plan import JudgePlan, PlannedRequest, ProviderFactory, close_providers, custom_id_for
from workbench.attribution.prompts import ClipInput, RenderedPrompt, load_template, render_clip_prompt, request_fingerprint
from workbench.attribution.providers import (
    BatchItem,
    JudgeAuthError,
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
    evaluate_reply,
    finish_run,
    new_run,
    store_outcomes,
)
from workbench.attribution.schema import output_schema
from workbench.llm.batch import BatchState, Replies, collect, submit
from workbench.tagging.ontology import Ontology
from workbench.tasks import TaskContext


class JudgeSubmission:
    """Submitting one judge's planned requests (the driver's :class:`~workbench.llm.batch.BatchSubmission`)."""

    def __init__(self, store: Store, plan: JudgePlan, provider: JudgeProvider, selection: ClipSelection,
                 summary: JudgeSummary) -> None:
        self.project, self.plan, self.provider, self.selection, self.summary = store, plan, provider, selection, summary
        self.run: JudgeRun | None = None

    def record(self, request_map: dict[str, dict[str, Any]]) -> None:
        run = new_run(self.project, self.plan.judge, self.selection, "batch", "submitting")
        self.run = run
        finish_run(self.project, run.id or 0, "submitting", request_map=request_map)
        self.summary.run_id = run.id
        self.summary.mode = "batch"

    def submit(self, requests: list[tuple[str, JudgeRequest]]) -> str:
        return self.provider.submit_batch(requests)

    def submitted(self, batch_id: str) -> None:
        finish_run(self.project, self.run.id or 0, "submitted", batch_id=batch_id)  # type: ignore[union-attr]
        self.summary.batch_id = batch_id
        self.summary.status = "submitted"
        # Billed when the results exist, at the batch price (see `aglw judge --collect`); not $0.
        self.summary.cost_usd = None
        self.summary.sent = len(self.plan.to_send)

    def not_submitted(self, exc: BaseException) -> None:
        if self.run is not None and isinstance(exc, (ProviderCallError, JudgeAuthError)):
            finish_run(self.project, self.run.id or 0, "failed")
            self.summary.status = "failed"


def submit_batch(store: Store, plan: JudgePlan, provider: JudgeProvider, selection: ClipSelection,
                 summary: JudgeSummary, *, task: TaskContext | None = None) -> None:
    """Submit one judge's planned requests as one batch and record the run (status ``submitted``).

    A failed submission marks the run failed and is listed in ``summary.failures``;
    :class:`JudgeAuthError` propagates.
    """
    schema = output_schema()
    requests = [(custom_id_for(p), JudgeRequest(plan.judge, p.prompt, schema),
                 {"clip_id": p.clip.clip_id, "fingerprint": p.fingerprint, "attempt": 1}) for p in plan.to_send]
    try:
        submit(JudgeSubmission(store, plan, provider, selection, summary), requests,
               what=f"judge {plan.judge.name}", task=task or TaskContext())
    except ProviderCallError as exc:
        summary.failures.append({"clip": "*", "reason": f"batch submission failed: {exc}"})


def judge_of_run(run: JudgeRun, config: JudgesConfig) -> JudgeConfig:
    """The judge a stored run was made by: the configured one when it still matches, else rebuilt
    from the run's options."""
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


class JudgeBatch:
    """One submitted judge run's batch (the driver's :class:`~workbench.llm.batch.BatchCollection`);
    each result is stored in its own transaction."""

    group = 1

    def __init__(self, store: Store, run: JudgeRun, judge: JudgeConfig, provider: JudgeProvider,
                 config: JudgesConfig, summary: JudgeSummary, names: Ontology | None) -> None:
        self.project, self.run, self.judge, self.provider = store, run, judge, provider
        self.config, self.summary, self.names = config, summary, names
        self.batch_id: str = run.batch_id or ""
        self.schema = output_schema()
        self._planned: dict[int, PlannedRequest] | None = None

    # ------------------------------------------------------------------ the provider's side
    def state(self) -> BatchState:
        state = self.provider.batch_state(self.batch_id)
        if not state.ended:
            return BatchState(False, words=f"in progress ({state.counts.get('processing', 0)} requests processing)")
        # An ended Message Batch reports expired and cancelled requests one by one, as results.
        return BatchState(True)

    def results(self) -> Iterable[tuple[str, BatchItem]]:
        for item in self.provider.batch_results(self.batch_id):
            yield item.custom_id, item

    def record(self, custom_id: str, result: BatchItem) -> dict[str, Any]:
        return {"outcome": result.outcome, "reply": result.reply.as_record() if result.reply is not None else None,
                "error": result.error}

    # ------------------------------------------------------------------ the kind's side
    def request_map(self) -> dict[str, dict[str, Any]]:
        return self.run.request_map or {}

    def stored(self) -> set[str]:
        with self.project.session() as session:
            return set(session.exec(select(JudgeCall.custom_id).where(
                JudgeCall.judge_run_id == self.run.id, col(JudgeCall.custom_id).is_not(None))).all())  # type: ignore[arg-type]

    def planned(self) -> dict[int, PlannedRequest]:
        """The run's requests as they would be asked now, by clip id (rebuilt once)."""
        if self._planned is None:
            self._planned = replan_run(self.project, self.run, self.judge, self.names)
        return self._planned

    def outcome(self, custom_id: str, replies: Replies) -> JudgeOutcome:
        entry = self.request_map()[custom_id]
        planned = self.planned().get(int(entry["clip_id"]))
        attempts = self.attempts(custom_id, replies, entry, planned)
        if planned is None or planned.fingerprint != entry["fingerprint"]:
            planned = stale_request(self.project, self.run, entry)
        return JudgeOutcome(planned, attempts)

    def attempts(self, custom_id: str, replies: Replies, entry: dict[str, Any],
                 planned: PlannedRequest | None) -> list[Attempt]:
        result = replies.first
        reply = ProviderReply.from_record(result["reply"]) if result.get("reply") else None
        if result.get("outcome") != "succeeded" or reply is None:
            return [Attempt(1, None, None, result.get("error") or f"batch request {result.get('outcome')}",
                            custom_id=custom_id, batch=True)]
        if planned is None or planned.fingerprint != entry["fingerprint"]:
            return [Attempt(1, reply, None, "the clip's inputs changed after submission (tags or prediction); "
                            "rerun `aglw judge`", custom_id=custom_id, batch=True)]
        check, failure = evaluate_reply(reply, planned.prompt, self.judge.max_tokens)
        first = Attempt(1, reply, check, failure, custom_id=custom_id, batch=True)
        if failure is None:
            return [first]
        retry = JudgeRequest(self.judge, planned.prompt, self.schema, retry_reason=failure)
        try:
            again = replies.ask(lambda: self.provider.complete(retry), lambda r: {"reply": r.as_record()},
                                lambda e: ProviderReply.from_record(e["reply"]))
        except ProviderCallError as exc:
            return [first, Attempt(2, None, None, str(exc))]
        check2, failure2 = evaluate_reply(again, planned.prompt, self.judge.max_tokens)
        return [first, Attempt(2, again, check2, failure2)]

    def failed(self, custom_id: str, reason: str) -> JudgeOutcome:
        entry = self.request_map()[custom_id]
        planned = self.planned().get(int(entry["clip_id"])) or stale_request(self.project, self.run, entry)
        return JudgeOutcome(planned, [Attempt(1, None, None, reason, custom_id=custom_id, batch=True)])

    def store(self, outcomes: list[JudgeOutcome]) -> None:
        store_outcomes(self.project, self.run, outcomes, self.config, self.summary)

    def announce(self, outcomes: list[JudgeOutcome], task: TaskContext) -> None:
        for outcome in outcomes:
            final = outcome.attempts[-1]
            task.item_done(outcome.item.clip.clip_key, final.ok,
                           "" if final.ok else f"{self.judge.name}: {final.failure or 'failed'}")

    def finish(self) -> None:
        finish_run(self.project, self.run.id or 0, "done")
        self.summary.status = "collected"


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
    for run in runs:
        judge = judge_of_run(run, config)
        summary = JudgeSummary(
            judge=run.judge_name, model=run.model_id, provider=run.provider, run_id=run.id, mode="batch",
            batch_id=run.batch_id,
        )
        report.judges.append(summary)
        provider = factory(judge)
        try:
            state = collect(JudgeBatch(store, run, judge, provider, config, summary, names), store,
                            what=f"judge {run.judge_name}", task=task)
            if not state.ended:
                summary.status = state.words
        finally:
            close_providers([provider])
    return report


def replan_run(store: Store, run: JudgeRun, judge: JudgeConfig, names: Ontology | None) -> dict[int, PlannedRequest]:
    """A batch run's requests rebuilt from the clips' inputs now, by clip id (a clip whose inputs
    changed since gets another fingerprint)."""
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


def stale_request(store: Store, run: JudgeRun, entry: dict[str, Any]) -> PlannedRequest:
    """A placeholder request for a result whose clip can no longer be rebuilt (kept for the record)."""
    with store.session() as session:
        clip = session.get(Clip, int(entry["clip_id"]))
    key = clip.key if clip else str(entry["clip_id"])
    clip_input_row = ClipInput(clip_id=int(entry["clip_id"]), clip_key=key, categories=(), cot="")
    return PlannedRequest(clip_input_row, RenderedPrompt(version=run.prompt_version, system="", user=""), entry["fingerprint"])
