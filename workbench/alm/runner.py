"""`aglw alm run`: ask an ALM where each clip was recorded; store every answer as it arrives.

ALM runs are one question kind of the campaign engine (:mod:`workbench.llm.engine`): the engine
paces, retries, journals, stores on the calling thread and reports; this module says what is asked
(the clip's recording under the prompt), how a reply is read (:func:`workbench.alm.parse.parse_reply`)
and what is stored (:mod:`workbench.alm.answers`).

Guarantees (alm-runner.md):

- **Never pay twice.** Each (clip, sample) has a fingerprint of provider, API model, prompt
  version, the audio's content hash, the options and the seed; an answer already stored under
  it for this model is reused unless ``force``. ``samples`` > 1 draws that many answers per clip
  on purpose (seed + sample number); the first is the clip's prediction.
- **Nothing lost.** Every reply is journaled the moment it arrives; answers are written by the
  calling thread in small transactions, failures included with their reason; a killed, cancelled
  or locked-out run resumes from the journal and the store.
- **Faults.** Bounded concurrency; retries with backoff honouring ``retry-after``; an HTTP 200
  with a bad body is that clip's failure; 401/403/404 and a server not reached stop the run at
  once with one line (an unreached server leaves nothing behind); a server that fails
  ``FAILING_SERVER_CLIPS`` clips in a row stops it with one line (nothing stored for those clips).
- **Cost before spending.** ``max_cost`` refuses a run whose estimate exceeds it and stops
  sending once the spent cost reaches it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from workbench.alm.answers import AnswerRow, close_job, mark_interrupted, open_job, write_answers
from workbench.alm.config import AlmConfig, load_alm_config
from workbench.alm.estimate import reply_cost
from workbench.alm.parse import ParsedAnswer, parse_reply
from workbench.alm.plan import (
    RUN_CONTAINER,
    AlmItem,
    AlmPlan,
    AlmRunOptions,
    dry_run,
    fingerprint,
    gpu_batch_of,
    model_options,
    plan_run,
    run_settings,
)
from workbench.alm.backends import make_provider
from workbench.alm.providers import AlmProvider, AlmReply, AlmRequest, AnswerError, read_audio
from workbench.errors import InputError, UsageError
from workbench.formatting import usd
from workbench.llm.engine import NOT_SENT, Campaign, GaveUp, RetryPolicy, write_waiting
from workbench.llm.errors import RunStopped, ServerFailing, Unreachable, takes_body_hook
from workbench.llm.journal import Journal
from workbench.llm.urls import safe_url
from workbench.tasks import TaskCancelled, TaskContext

if TYPE_CHECKING:
    from storage import Store

__all__ = ["RUN_CONTAINER", "AlmOutcome", "AlmQuestions", "AlmRunOptions", "AlmRunReport", "dry_run", "run_alm"]

MAX_RETRY_AFTER_S = 300.0


@dataclass
class AlmRunReport:
    """How a run went (the ``--json`` of `aglw alm run`)."""

    model: str
    provider: str
    api_model: str
    prompt_version: str
    job_id: int | None = None
    samples: int = 1
    requested: int = 0
    answered: int = 0
    skipped_cached: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    rejected: list[dict[str, str]] = field(default_factory=list)
    requests_sent: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    stopped: str | None = None
    gpu_batch: int | None = None  # clips per generate call of a local model (1: the reference's way); None: an API
    replayed: int = 0  # answers an earlier (killed) run received, stored from its journal

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AlmOutcome:
    item: AlmItem
    status: str  # ok | rejected | failed
    reason: str | None = None
    reply: AlmReply | None = None
    parsed: ParsedAnswer | None = None
    attempts: int = 0
    latency_s: float | None = None
    audio: dict[str, Any] | None = None
    cost_usd: float | None = None


def _reply_record(reply: AlmReply) -> dict[str, Any]:
    return asdict(reply)


class AlmQuestions:
    """The ALM question kind: one item per (clip, sample); stored as answers and predictions."""

    def __init__(self, store: Store, options: AlmRunOptions, plan: AlmPlan, provider: AlmProvider | None,
                 report: AlmRunReport, *, on_stored: Callable[[AlmRunReport], None] | None = None,
                 discount: float = 1.0) -> None:
        self.project, self.options, self.plan, self.provider = store, options, plan, provider
        self.report, self.on_stored, self.discount = report, on_stored, discount
        self.cost_known = plan.price is not None and plan.price.known
        self.spent = 0.0  # of the answers stored
        self.billed = 0.0  # of the replies received (workers), checked against --max-cost before sending
        self._billed_lock = threading.Lock()
        self.job_id: int | None = report.job_id
        self._opened: tuple[int, int] | None = None
        # Providers that hand over the raw body before parsing it get it journaled at once.
        self.raw_bodies = provider is not None and takes_body_hook(getattr(provider, "ask", None)) \
            and hasattr(provider, "reply_from_body")
        self.campaign: Campaign[AlmItem, AlmOutcome] | None = None

    # ------------------------------------------------------------------ the kind
    def key(self, item: AlmItem) -> str:
        return item.cache_key or f"no-audio:{item.label}"

    def label(self, item: AlmItem) -> str:
        return item.label

    def clip(self, item: AlmItem) -> str:
        """The clip (samples of one clip are one clip to the engine's count of a failing server)."""
        return item.clip.key

    def failed(self, item: AlmItem, reason: str) -> AlmOutcome:
        return AlmOutcome(item, "failed", reason)

    def not_sent(self, item: AlmItem, reason: str) -> AlmOutcome | None:
        return None

    def work(self, campaign: Campaign[AlmItem, AlmOutcome], item: AlmItem) -> AlmOutcome:
        max_cost = self.options.max_cost
        if max_cost is not None and self.cost_known and self.billed >= max_cost:
            # Checked before each request, from what the replies so far cost: nothing more is sent.
            campaign.halt(f"--max-cost {usd(max_cost)} reached (spent {usd(self.billed)})")
            return NOT_SENT  # type: ignore[no-any-return]
        provider = self.provider
        assert provider is not None
        planned_key = self.key(item)  # what the journal files the reply under: the plan's key
        try:
            # audio_format "wav" in alm.toml: a server that takes only WAV gets a transcode (recorded).
            accepted = provider.accepted_formats if self.plan.entry.audio_format == "file" else ("wav",)
            audio = read_audio(item.path, accepted, seconds=item.seconds)  # type: ignore[arg-type]
        except AnswerError as exc:
            return AlmOutcome(item, "failed", str(exc))
        if item.digest is not None and audio.sha256 != item.digest:
            # The store's hash is stale (the file changed since): the answer is filed under what was sent.
            fp = fingerprint(self.options.provider, self.options.api_model_id, self.plan.prompt.version,
                             audio.sha256, model_options(self.plan.entry), self.options.seed,
                             gpu_batch=self.options.gpu_batch)
            item = replace(item, fingerprint=fp, cache_key=f"{fp}:{item.sample}", digest=audio.sha256)
        limit = self.plan.settings.max_inline_audio_bytes
        if self.options.provider in ("openai", "openai-compatible") and len(audio.data) * 4 // 3 > limit:
            return AlmOutcome(item, "failed", f"the recording is {len(audio.data) / 1e6:.1f} MB ({len(audio.data) * 4 // 3 / 1e6:.1f} MB "
                              f"as base64), over the {limit / 1e6:.0f} MB a request to {self.options.provider} may carry "
                              "(max_inline_audio_mb in alm.toml); shorten or re-encode it")
        seed = None if self.options.seed is None else self.options.seed + item.sample
        request = AlmRequest(item.clip.key, self.plan.prompt, audio, self.options.api_model_id, self.plan.entry, seed)
        try:
            call = campaign.request(
                planned_key,
                (lambda keep: provider.ask(request, on_body=keep)) if self.raw_bodies  # type: ignore[call-arg]
                else (lambda _keep: provider.ask(request)),
                lambda reply: {"reply": _reply_record(reply), "audio": audio.record(reply.transport)},
                note={"fingerprint": item.fingerprint, "cache_key": item.cache_key, "audio": audio.record("inline")})
        except GaveUp as exc:
            return AlmOutcome(item, "failed", exc.reason, attempts=exc.attempts)
        except AnswerError as exc:
            return AlmOutcome(item, "failed", str(exc), attempts=1, audio=audio.record("inline"))
        return self.outcome(item, call.reply, audio.record(call.reply.transport), attempts=call.attempts,
                            latency_s=call.latency_s)

    def replay(self, item: AlmItem, entries: list[dict[str, Any]]) -> AlmOutcome:
        entry = entries[-1]
        if entry.get("fingerprint") and entry.get("cache_key"):
            item = replace(item, fingerprint=entry["fingerprint"], cache_key=entry["cache_key"])
        if "reply" in entry:
            reply = AlmReply(**entry["reply"])
        else:  # the raw body, journaled before the SDK parsed it
            try:
                reply = self.provider.reply_from_body(entry["body"])  # type: ignore[union-attr]
            except AnswerError as exc:
                return AlmOutcome(item, "failed", str(exc), attempts=int(entry.get("attempts") or 1),
                                  audio=entry.get("audio"))
        return self.outcome(item, reply, entry.get("audio") or {}, attempts=int(entry.get("attempts") or 1),
                            latency_s=entry.get("latency_s"), discount=float(entry.get("discount") or self.discount))

    def outcome(self, item: AlmItem, reply: AlmReply, audio: dict[str, Any], *, attempts: int = 1,
                latency_s: float | None = None, discount: float | None = None) -> AlmOutcome:
        """A reply read: parsed (or a reject with its reason) and priced (``discount``: the batch price)."""
        parsed = parse_reply(reply.text, structured=self.plan.entry.structured_output)
        reason = parsed.reason
        if parsed.status != "ok" and reply.refusal:
            reason = f"the model refused: {reply.refusal}"
        elif parsed.status != "ok" and reply.finish_reason in ("length", "MAX_TOKENS"):
            reason = f"{reason} (the reply was cut off at max_output_tokens)"
        cost = reply_cost(self.plan.price, input_tokens=reply.input_tokens, audio_tokens=reply.audio_tokens,
                          output_tokens=reply.output_tokens, audio_seconds=audio.get("seconds"),
                          discount=self.discount if discount is None else discount)
        with self._billed_lock:
            self.billed += cost or 0.0
        return AlmOutcome(item, parsed.status, reason, reply, parsed, attempts, latency_s, audio, cost)

    # ------------------------------------------------------------------ storing
    def ensure_job(self) -> None:
        """Open the job now (a run that stopped at the provider's refusal still records its job)."""
        if self.job_id is not None:
            return
        with self.project.write() as session:
            self._open(session)
        self.plan.run_id, self.job_id = self._opened  # type: ignore[misc]
        self.report.job_id = self.job_id

    def _open(self, session: Any) -> None:
        run_id, job_id = open_job(
            session, run_id=self.plan.run_id, model=self.options.model, provider=self.options.provider,
            api_model=self.options.api_model_id, container=RUN_CONTAINER, seed=self.options.seed,
            base_url=self.options.base_url, prompt_version=self.plan.prompt.version,
            options=run_settings(self.options, self.plan.entry), samples=self.options.samples,
            requested=self.report.requested, skipped_cached=self.report.skipped_cached)
        self._opened = (run_id, job_id)

    def store(self, outcomes: list[AlmOutcome]) -> None:
        """Write a group of answers (and the predictions of sample 0) in one transaction."""
        from workbench.alm.records import answer_record, record_values
        from workbench.importing.prediction_rows import prediction_row

        if not outcomes:
            return
        self._opened = None
        with self.project.write() as session:
            if self.job_id is None:
                self._open(session)
                run_id, job_id = self._opened  # type: ignore[misc]
            else:
                run_id, job_id = self.plan.run_id, self.job_id  # type: ignore[assignment]
            rows = []
            for outcome in outcomes:
                item, reply, parsed = outcome.item, outcome.reply, outcome.parsed
                prediction = None
                answered = outcome.status in ("ok", "rejected") and reply is not None and parsed is not None
                if answered and item.sample == 0:
                    record = answer_record(item.clip, question=self.plan.prompt.text, fields=parsed.fields,  # type: ignore[union-attr]
                                           model_output=reply.text, seed=self.options.seed)  # type: ignore[union-attr]
                    prediction = prediction_row(run_id, item.clip.key, record_values(record), clip_id=item.clip.clip_id)
                rows.append(AnswerRow(
                    clip_id=item.clip.clip_id, clip_key=item.clip.key, sample=item.sample, fingerprint=item.fingerprint,
                    cache_key=item.cache_key, status=outcome.status, reason=outcome.reason,
                    raw_output=reply.text if reply is not None else None,
                    parsed=parsed.as_dict() if parsed is not None else None,
                    input_tokens=reply.input_tokens if reply is not None else None,
                    output_tokens=reply.output_tokens if reply is not None else None,
                    latency_s=outcome.latency_s, cost_usd=outcome.cost_usd, attempts=outcome.attempts,
                    audio=outcome.audio, prediction=prediction))
            write_answers(session, run_id=run_id, job_id=job_id, rows=rows, force=self.options.force,
                          totals=self._totals_after(outcomes))
        if self._opened is not None:
            self.plan.run_id, self.job_id = self._opened
            self.report.job_id = self.job_id
        for outcome in outcomes:  # counted once the transaction is committed
            self._count(outcome)

    def _totals_after(self, outcomes: list[AlmOutcome]) -> dict[str, Any]:
        """The job's counters as they will be once ``outcomes`` are counted (written in the same transaction)."""
        answered = sum(1 for o in outcomes if o.status in ("ok", "rejected"))
        tokens_in = sum(int(o.reply.input_tokens or 0) for o in outcomes if o.reply is not None and o.status != "failed")
        tokens_out = sum(int(o.reply.output_tokens or 0) for o in outcomes if o.reply is not None and o.status != "failed")
        costs = [o.cost_usd for o in outcomes if o.status in ("ok", "rejected")]
        known = self.cost_known and all(c is not None for c in costs)
        return {"answered": self.report.answered + answered,
                "failed": len(self.report.failed) + sum(1 for o in outcomes if o.status == "failed"),
                "input_tokens": self.report.input_tokens + tokens_in,
                "output_tokens": self.report.output_tokens + tokens_out,
                "cost_usd": self.spent + sum(c for c in costs if c is not None) if known else None}

    def _count(self, outcome: AlmOutcome) -> None:
        report = self.report
        if outcome.status == "failed":
            report.failed.append({"key": outcome.item.label, "reason": outcome.reason or "failed"})
            return
        report.answered += 1
        if outcome.status == "rejected":
            report.rejected.append({"key": outcome.item.label, "reason": outcome.reason or "rejected"})
        reply = outcome.reply
        if reply is not None:
            report.input_tokens += int(reply.input_tokens or 0)
            report.output_tokens += int(reply.output_tokens or 0)
        if outcome.cost_usd is None:
            self.cost_known = False
        else:
            self.spent += outcome.cost_usd
        report.cost_usd = self.spent if self.cost_known else None

    def announce(self, outcomes: list[AlmOutcome], task: TaskContext) -> None:
        if self.on_stored is not None:
            self.on_stored(self.report)
        max_cost = self.options.max_cost
        if max_cost is not None and self.cost_known and self.spent >= max_cost and not self.report.stopped:
            reason = f"--max-cost {usd(max_cost)} reached (spent {usd(self.spent)})"
            if self.campaign is not None:
                self.campaign.halt(reason)
                reason = self.campaign.stop_reason or reason
            self.report.stopped = reason
            task.note(f"stopping: {reason}")
        for outcome in outcomes:
            ok = outcome.status != "failed"
            task.item_done(outcome.item.label, ok, "" if ok else (outcome.reason or "failed"))


def new_report(options: AlmRunOptions, plan: AlmPlan) -> AlmRunReport:
    """The report of a run about to start (requested and cached counted from the plan)."""
    report = AlmRunReport(model=options.model, provider=options.provider, api_model=options.api_model_id,
                          prompt_version=plan.prompt.version, samples=options.samples,
                          requested=len(plan.items) + len(plan.cached) + len(plan.no_audio),
                          skipped_cached=len(plan.cached), gpu_batch=gpu_batch_of(options))
    report.cost_usd = 0.0 if plan.price is not None and plan.price.known else None
    return report


def start(store: Store, options: AlmRunOptions, plan: AlmPlan, report: AlmRunReport, questions: AlmQuestions,
          task: TaskContext) -> None:
    """Report the plan to ``task``; store the clips without audio as failures (this opens the job)."""
    task.set_total(report.requested)
    if options.samples > 1:
        task.note(f"drawing {options.samples} answers per clip on purpose (--samples); the first is the prediction")
    for item in plan.cached:
        task.item_done(item.label, True)
    if plan.no_audio:
        failures = [AlmOutcome(item, "failed", item.problem or "no audio") for item in plan.no_audio]
        questions.store(failures)
        for outcome in failures:
            task.item_done(outcome.item.label, False, outcome.reason or "no audio")


def open_journal(store: Store, model: str) -> Journal:
    """The journal of model NAME's answers (locked for this process); jobs a killed run left
    ``running`` are marked interrupted."""
    journal = Journal.open(store, "alm", model, f"model {model!r}")
    try:
        mark_interrupted(store, model)
    except BaseException:
        journal.close()
        raise
    return journal


class RemoteAlm(Protocol):
    """Where the ``transformers`` provider's model runs when not in this process."""

    name: str

    def provider(self, api_model: str, device: str) -> AlmProvider:
        """The provider whose ``ask`` runs there."""


def run_alm(store: Store, options: AlmRunOptions, *, config: AlmConfig | None = None,
            task: TaskContext | None = None, provider: AlmProvider | None = None,
            sleep: Callable[[float], None] = time.sleep,
            on_stored: Callable[[AlmRunReport], None] | None = None,
            remote: RemoteAlm | None = None) -> AlmRunReport:
    """Ask the ALM about the clips and store every answer as the predictions of ``options.model``.

    Parameters
    ----------
    store
        The project store.
    options
        Model NAME, provider, endpoint, clips, prompt, concurrency, limits.
    config
        The ALM configuration (default: ``alm.toml``).
    task
        Progress, per-clip outcomes and the cancel token (one item per clip and sample).
    provider
        A ready provider (tests); default: built from ``options`` (keys checked before anything is read).
    sleep
        Waiting between retries (tests pass a recorder).
    on_stored
        Called in the calling thread after each group of answers is stored, with the running
        report (the GUI shows the answers and the cost so far).
    remote
        Where a local model runs instead of this process (``--engine ray``: the command line
        passes :class:`workbench.pool.alm.RayAlm`, ``concurrency`` actors); the runner itself never
        branches on an engine name.

    Returns
    -------
    AlmRunReport
        Counts, failures and rejects with reasons, tokens and cost (None when no price is known).

    Raises
    ------
    InputError
        Unknown clips, provider or prompt; a model NAME holding imported predictions; an estimate
        over ``max_cost``; another run of the same model alive. Nothing is sent or written.
    RunStopped
        The key was refused or the model is unknown (401/403/404), or the server was not reached
        (:class:`~workbench.llm.errors.Unreachable`: nothing is left behind): answers stored so
        far stay, a rerun resumes.
    """
    task = task or TaskContext()
    config = config or load_alm_config()
    if options.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if remote is not None and options.provider != "transformers":
        raise UsageError(f"--engine {remote.name} runs local models (--provider transformers); {options.provider} answers "
                         "on the provider's machines, so raise --concurrency instead")
    if remote is not None and options.gpu_batch > 1:
        raise UsageError(f"--gpu-batch {options.gpu_batch} batches generate calls in this process; --engine {remote.name} "
                         "asks each actor one clip at a time (leave --gpu-batch at 1)")
    plan = plan_run(store, options, config)
    if options.max_cost is not None and plan.items:
        estimate = dry_run(store, options, config=config)
        if estimate.cost_usd is None:
            raise InputError(f"no price for {options.api_model_id!r} in {config.path}, so --max-cost cannot be "
                             "checked; add its prices or drop --max-cost (nothing was sent)")
        if estimate.cost_usd > options.max_cost:
            raise InputError(f"the estimate {usd(estimate.cost_usd)} for {estimate.requests} request(s) exceeds "
                             f"--max-cost {usd(options.max_cost)}; nothing was sent. Narrow --clips or raise --max-cost")
    if provider is None and plan.items and remote is not None:
        provider = remote.provider(options.api_model_id, plan.settings.device)
    elif provider is None and plan.items:
        provider = make_provider(options.provider, plan.settings, api_model=options.api_model_id,
                                 base_url=options.base_url, api_key_env=options.api_key_env,
                                 gpu_batch=options.gpu_batch)
    report = new_report(options, plan)
    # In-process local models: one clip per generate call unless --gpu-batch N, where questions
    # asked at once share a call (workbench/alm/local.py), so at least N are asked at once; on Ray,
    # one clip per actor.
    concurrency = options.concurrency
    if remote is None and options.provider == "transformers":
        concurrency = max(concurrency, options.gpu_batch)
    questions = AlmQuestions(store, options, plan, provider, report, on_stored=on_stored)
    settings = plan.settings
    journal: Journal | None = None
    status = "done"
    try:
        journal = open_journal(store, options.model)
        campaign: Campaign[AlmItem, AlmOutcome] = Campaign(
            questions, what=options.model, where=safe_url(options.base_url or settings.base_url) or options.provider,
            journal=journal, concurrency=concurrency,
            retry=RetryPolicy(settings.max_retries, settings.backoff_s, settings.max_backoff_s, MAX_RETRY_AFTER_S),
            per_minute=settings.requests_per_minute, task=task, sleep=sleep,
            resume="Rerun the same `aglw alm run` once the server answers: it asks only the clips without an answer")
        questions.campaign = campaign
        if plan.cached:
            # Journal entries of answers the project already holds (their "stored" note was lost).
            pending = journal.pending()
            journal.mark_stored([key for key in (questions.key(i) for i in plan.cached) if key in pending])
        if not plan.items or plan.no_audio:
            questions.ensure_job()
        start(store, options, plan, report, questions, task)
        rest = campaign.replay(plan.items)
        report.replayed = len(plan.items) - len(rest)
        unsent = campaign.run(rest) if rest else []
        if unsent and campaign.stop_reason and not task.cancelled:
            for item in unsent:
                reason = f"not sent: {campaign.stop_reason}"
                report.failed.append({"key": item.label, "reason": reason})
                task.item_done(item.label, False, reason)
    except TaskCancelled:
        status = "cancelled"
        raise
    except (Unreachable, ServerFailing):
        status = "failed"  # nothing is recorded for them: a job exists only when answers were stored
        raise
    except RunStopped:
        status = "failed"
        questions.ensure_job()  # the server answered: the refused run is recorded
        raise
    except BaseException:
        status = "failed"
        raise
    finally:
        report.requests_sent = questions.campaign.requests_sent if questions.campaign is not None else 0
        if provider is not None:
            provider.close()
        try:
            job_id = questions.job_id
            if job_id is not None:
                write_waiting(lambda: close_job(store, job_id, status, answered=report.answered,
                                                failed=len(report.failed), input_tokens=report.input_tokens,
                                                output_tokens=report.output_tokens, cost_usd=report.cost_usd),
                              task=task, what=f"{options.model}: the job's status")
        finally:
            if journal is not None:
                journal.close()
    return report
