"""`aglw alm run`: ask an ALM where each clip was recorded; store every answer as it arrives.

Guarantees (alm-runner.md):

- **Never pay twice.** Each (clip, sample) has a fingerprint of provider, API model, prompt
  version, the audio's content hash, the options and the seed; an answer already stored under
  it for this model is reused unless ``force``. ``samples`` > 1 draws that many answers per clip
  on purpose (seed + sample number); the first is the clip's prediction.
- **Nothing lost.** Answers are written by the calling thread in small transactions as they
  arrive (whatever arrived while the previous write ran goes into the next one), failures
  included with their reason; a cancelled or interrupted run resumes from what is stored.
- **Faults.** Bounded concurrency; retries with backoff honouring ``retry-after`` for transient
  faults; an HTTP 200 with a bad body is that clip's failure; 401/403/404 stop the run at once.
- **Cost before spending.** ``max_cost`` refuses a run whose estimate exceeds it and stops
  sending once the spent cost reaches it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ALL_COMPLETED, FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.alm.config import AlmConfig, load_alm_config
from workbench.alm.estimate import reply_cost
from workbench.alm.parse import ParsedAnswer, parse_reply
from workbench.alm.plan import RUN_CONTAINER, AlmRunOptions, _Item, _options, _Plan, _plan, dry_run
from workbench.alm.providers import (
    AlmProvider,
    AlmReply,
    AlmRequest,
    AnswerError,
    RetryableError,
    RunStopped,
    make_provider,
    read_audio,
)
from workbench.errors import InputError
from workbench.tasks import TaskCancelled, TaskContext

if TYPE_CHECKING:
    from storage import Store

__all__ = ["RUN_CONTAINER", "AlmRunOptions", "AlmRunReport", "dry_run", "run_alm"]

MAX_RETRY_AFTER_S = 300.0
_WAIT_S = 0.2
_GATHER_S = 0.05  # how long answers are gathered into one write


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Outcome:
    item: _Item
    status: str  # ok | rejected | failed | not_sent
    reason: str | None = None
    reply: AlmReply | None = None
    parsed: ParsedAnswer | None = None
    attempts: int = 0
    latency_s: float | None = None
    audio: dict[str, Any] | None = None
    cost_usd: float | None = None


class _Pacer:
    """At most ``per_minute`` request starts per minute across all workers (None: no limit)."""

    def __init__(self, per_minute: float | None, sleep: Callable[[float], None]) -> None:
        self._interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self._sleep = sleep

    def wait(self) -> None:
        if not self._interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._interval
        if start > now:
            self._sleep(start - now)


class _Runner:
    """One run: workers ask, the calling thread stores (the store is touched by one thread only)."""

    def __init__(self, store: Store, options: AlmRunOptions, plan: _Plan, provider: AlmProvider,
                 task: TaskContext, report: AlmRunReport, sleep: Callable[[float], None], concurrency: int,
                 on_stored: Callable[[AlmRunReport], None] | None = None) -> None:
        self.store, self.options, self.plan, self.provider = store, options, plan, provider
        self.concurrency = concurrency
        self.on_stored = on_stored
        self.task, self.report, self.sleep = task, report, sleep
        self.stop = threading.Event()
        self.stop_reason: str | None = None
        self.pacer = _Pacer(plan.settings.requests_per_minute, sleep)
        self.sent_lock = threading.Lock()
        self.cost_known = plan.price is not None and plan.price.known
        self.spent = 0.0  # of the answers stored
        self.billed = 0.0  # of the replies received (workers), checked against --max-cost before sending

    # ------------------------------------------------------------------ workers
    def ask(self, item: _Item) -> _Outcome:
        max_cost = self.options.max_cost
        if max_cost is not None and self.cost_known and self.billed >= max_cost and not self.stop.is_set():
            # Checked before each request, from what the replies so far cost: nothing more is sent.
            self.stop_reason = f"--max-cost ${max_cost:.2f} reached (spent ${self.billed:.4f})"
            self.stop.set()
        if self.stop.is_set() or self.task.cancelled:
            return _Outcome(item, "not_sent", self.stop_reason or "cancelled")
        try:
            # audio_format "wav" in alm.toml: a server that takes only WAV gets a transcode (recorded).
            accepted = self.provider.accepted_formats if self.plan.entry.audio_format == "file" else ("wav",)
            audio = read_audio(item.path, accepted, seconds=item.seconds)  # type: ignore[arg-type]
        except AnswerError as exc:
            return _Outcome(item, "failed", str(exc))
        limit = self.plan.settings.max_inline_audio_bytes
        if self.options.provider in ("openai", "openai-compatible") and len(audio.data) * 4 // 3 > limit:
            return _Outcome(item, "failed", f"the recording is {len(audio.data) / 1e6:.1f} MB ({len(audio.data) * 4 // 3 / 1e6:.1f} MB "
                            f"as base64), over the {limit / 1e6:.0f} MB a request to {self.options.provider} may carry "
                            "(max_inline_audio_mb in alm.toml); shorten or re-encode it")
        seed = None if self.options.seed is None else self.options.seed + item.sample
        request = AlmRequest(item.clip.key, self.plan.prompt, audio, self.options.api_model_id, self.plan.entry, seed)
        settings = self.plan.settings
        attempts = 0
        while True:
            attempts += 1
            self.pacer.wait()
            with self.sent_lock:
                self.report.requests_sent += 1
            started = time.monotonic()
            try:
                reply = self.provider.ask(request)
            except RetryableError as exc:
                if attempts > settings.max_retries or self.stop.is_set() or self.task.cancelled:
                    return _Outcome(item, "failed", f"{exc.reason} (gave up after {attempts} attempt(s))", attempts=attempts)
                backoff = min(settings.backoff_s * 2 ** (attempts - 1), settings.max_backoff_s)
                delay = min(exc.retry_after, MAX_RETRY_AFTER_S) if exc.retry_after is not None else backoff
                self.sleep(delay)
                continue
            except AnswerError as exc:
                return _Outcome(item, "failed", str(exc), attempts=attempts, audio=audio.record("inline"))
            except RunStopped as exc:
                # Raised here so that no worker picks up another clip before the loop sees it.
                self.stop_reason = self.stop_reason or str(exc)
                self.stop.set()
                raise
            latency = time.monotonic() - started
            break
        return self.outcome(item, reply, audio.record(reply.transport), attempts=attempts, latency_s=latency)

    def outcome(self, item: _Item, reply: AlmReply, audio: dict[str, Any], *, attempts: int = 1,
                latency_s: float | None = None, discount: float = 1.0) -> _Outcome:
        """A reply read: parsed (or a reject with its reason) and priced (``discount``: the batch price)."""
        parsed = parse_reply(reply.text, structured=self.plan.entry.structured_output)
        reason = parsed.reason
        if parsed.status != "ok" and reply.refusal:
            reason = f"the model refused: {reply.refusal}"
        elif parsed.status != "ok" and reply.finish_reason in ("length", "MAX_TOKENS"):
            reason = f"{reason} (the reply was cut off at max_output_tokens)"
        cost = reply_cost(self.plan.price, input_tokens=reply.input_tokens, audio_tokens=reply.audio_tokens,
                          output_tokens=reply.output_tokens, audio_seconds=audio.get("seconds"), discount=discount)
        with self.sent_lock:
            self.billed += cost or 0.0
        return _Outcome(item, parsed.status, reason, reply, parsed, attempts, latency_s, audio, cost)

    # ------------------------------------------------------------------ storing
    def store_outcomes(self, outcomes: list[_Outcome]) -> None:
        """Write a group of answers (and the predictions of sample 0) in one transaction."""
        from sqlalchemy import insert, select, update

        from storage.models import AlmAnswer, AlmJob, Prediction, utcnow
        from workbench.alm.records import answer_record, record_values
        from workbench.importing.prediction_rows import prediction_row

        kept = [o for o in outcomes if o.status != "not_sent"]
        if not kept:
            return
        run_id = self.plan.run_id
        answered = [o for o in kept if o.status in ("ok", "rejected") and o.reply is not None and o.parsed is not None]
        rows = {}
        for outcome in answered:
            if outcome.item.sample == 0:
                record = answer_record(outcome.item.clip, question=self.plan.prompt.text, fields=outcome.parsed.fields,
                                       model_output=outcome.reply.text, seed=self.options.seed)
                rows[outcome.item.clip.key] = prediction_row(run_id, outcome.item.clip.key, record_values(record),
                                                             clip_id=outcome.item.clip.clip_id)
        now = utcnow()
        with self.store.write() as session:
            if answered and self.options.force:
                # --force: the new answer takes over the cache entry (the old one stays, superseded).
                session.execute(update(AlmAnswer).where(AlmAnswer.cache_key.in_(
                    [f"{run_id}:{o.item.cache_key}" for o in answered])).values(cache_key=None))
            ids: dict[str, int] = {}
            if rows:
                existing = dict(session.execute(select(Prediction.question_id, Prediction.id).where(
                    Prediction.alm_run_id == run_id, Prediction.question_id.in_(list(rows)))).all())
                for key, prediction_id in existing.items():
                    # The clip's prediction now holds the new answer; earlier answers no longer back it.
                    session.execute(update(AlmAnswer).where(AlmAnswer.prediction_id == prediction_id)
                                    .values(prediction_id=None))
                    session.execute(update(Prediction).where(Prediction.id == prediction_id).values(**rows[key]))
                new = [row for key, row in rows.items() if key not in existing]
                if new:
                    session.execute(insert(Prediction.__table__), new)
                ids = dict(session.execute(select(Prediction.question_id, Prediction.id).where(
                    Prediction.alm_run_id == run_id, Prediction.question_id.in_(list(rows)))).all())
            answer_rows = []
            for outcome in kept:
                item, reply = outcome.item, outcome.reply
                is_answer = outcome in answered
                answer_rows.append({
                    "alm_job_id": self.report.job_id, "alm_run_id": run_id, "clip_id": item.clip.clip_id,
                    "clip_key": item.clip.key, "fingerprint": item.fingerprint, "sample": item.sample,
                    "cache_key": f"{run_id}:{item.cache_key}" if is_answer else None, "status": outcome.status,
                    "reason": outcome.reason if outcome.status != "ok" else None,
                    "raw_output": reply.text if reply is not None else None,
                    "parsed": outcome.parsed.as_dict() if outcome.parsed is not None else None,
                    "input_tokens": reply.input_tokens if reply is not None else None,
                    "output_tokens": reply.output_tokens if reply is not None else None,
                    "latency_s": outcome.latency_s, "cost_usd": outcome.cost_usd, "attempts": outcome.attempts,
                    "audio": outcome.audio, "created_at": now,
                    "prediction_id": ids.get(item.clip.key) if is_answer and item.sample == 0 else None,
                })
            session.execute(insert(AlmAnswer.__table__), answer_rows)
            totals = self._totals_after(kept)
            session.execute(update(AlmJob).where(AlmJob.id == self.report.job_id).values(**totals))
        for outcome in kept:  # counted once the transaction is committed
            self._count(outcome)

    def _totals_after(self, outcomes: list[_Outcome]) -> dict[str, Any]:
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

    def _count(self, outcome: _Outcome) -> None:
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

    def announce(self, outcomes: list[_Outcome]) -> None:
        for outcome in outcomes:
            if outcome.status == "not_sent":
                if not self.task.cancelled:
                    self.report.failed.append({"key": outcome.item.label, "reason": f"not sent: {outcome.reason}"})
                    self.task.item_done(outcome.item.label, False, f"not sent: {outcome.reason}")
                continue
            ok = outcome.status != "failed"
            self.task.item_done(outcome.item.label, ok, "" if ok else (outcome.reason or "failed"))

    # ------------------------------------------------------------------ the loop
    def run(self) -> None:
        items = self.plan.items
        max_cost = self.options.max_cost
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="alm") as pool:
            pending: dict[Future[_Outcome], _Item] = {pool.submit(self.ask, item): item for item in items}
            stopped: RunStopped | None = None
            try:
                while pending:
                    done, _ = wait(pending, timeout=_WAIT_S, return_when=FIRST_COMPLETED)
                    if not done:
                        self.task.check_cancel()
                        continue
                    if len(done) < len(pending):
                        # Group commit: what arrives within a moment goes into the same transaction, so
                        # a fast provider costs one commit per group, not one per clip.
                        wait(set(pending) - done, timeout=_GATHER_S, return_when=ALL_COMPLETED)
                        done = {future for future in pending if future.done()}
                    outcomes: list[_Outcome] = []
                    for future in done:
                        item = pending.pop(future)
                        if future.cancelled():
                            outcomes.append(_Outcome(item, "not_sent", self.stop_reason or "cancelled"))
                            continue
                        error = future.exception()
                        if isinstance(error, RunStopped):
                            stopped = stopped or error
                            self._halt(pending, str(error))
                        elif error is not None:
                            outcomes.append(_Outcome(item, "failed", f"{type(error).__name__}: {error}"))
                        else:
                            outcomes.append(future.result())
                    self.store_outcomes(outcomes)
                    if self.on_stored is not None:
                        self.on_stored(self.report)
                    if max_cost is not None and self.cost_known and self.spent >= max_cost and not self.report.stopped:
                        self._halt(pending, self.stop_reason or f"--max-cost ${max_cost:.2f} reached "
                                   f"(spent ${self.spent:.4f})")
                        self.report.stopped = self.stop_reason
                        self.task.note(f"stopping: {self.stop_reason}")
                    self.announce(outcomes)
            except TaskCancelled:
                self._halt(pending, "cancelled")
                rest = [f.result() for f in pending if not f.cancelled() and f.exception() is None]
                self.store_outcomes(rest)
                raise
            if stopped is not None:
                raise stopped

    def _halt(self, pending: dict[Future[_Outcome], _Item], reason: str) -> None:
        if not self.stop.is_set():
            self.stop_reason = reason
            self.stop.set()
        for future in pending:
            future.cancel()


def open_job(store: Store, options: AlmRunOptions, plan: _Plan, report: AlmRunReport, task: TaskContext) -> None:
    """Create the model's run (first time) and this job; store the clips without audio as failures;
    report the cached and failed items to ``task``."""
    from storage.models import AlmAnswer, AlmJob, AlmRun

    with store.write() as session:
        run = session.get(AlmRun, plan.run_id) if plan.run_id is not None else None
        if run is None:
            run = AlmRun(model=options.model, source_path=f"{options.provider}:{options.api_model_id}",
                         container=RUN_CONTAINER, seed=options.seed)
            session.add(run)
            session.flush()
        job = AlmJob(alm_run_id=run.id, provider=options.provider, api_model=options.api_model_id,
                     base_url=options.base_url, prompt_version=plan.prompt.version, options=_options(plan.entry),
                     seed=options.seed, samples=options.samples, requested=report.requested,
                     skipped_cached=report.skipped_cached)
        session.add(job)
        session.flush()
        plan.run_id, report.job_id = run.id, job.id
        for item in plan.no_audio:
            session.add(AlmAnswer(alm_job_id=job.id, alm_run_id=run.id, clip_id=item.clip.clip_id,
                                  clip_key=item.clip.key, sample=item.sample, status="failed", reason=item.problem,
                                  attempts=0))
    task.set_total(report.requested)
    if options.samples > 1:
        task.note(f"drawing {options.samples} answers per clip on purpose (--samples); the first is the prediction")
    for item in plan.cached:
        task.item_done(item.label, True)
    for item in plan.no_audio:
        report.failed.append({"key": item.label, "reason": item.problem or "no audio"})
        task.item_done(item.label, False, item.problem or "no audio")


def new_report(options: AlmRunOptions, plan: _Plan) -> AlmRunReport:
    """The report of a run about to start (requested and cached counted from the plan)."""
    report = AlmRunReport(model=options.model, provider=options.provider, api_model=options.api_model_id,
                          prompt_version=plan.prompt.version, samples=options.samples,
                          requested=len(plan.items) + len(plan.cached) + len(plan.no_audio),
                          skipped_cached=len(plan.cached))
    report.cost_usd = 0.0 if plan.price is not None and plan.price.known else None
    return report


def run_alm(store: Store, options: AlmRunOptions, *, config: AlmConfig | None = None,
            task: TaskContext | None = None, provider: AlmProvider | None = None,
            sleep: Callable[[float], None] = time.sleep,
            on_stored: Callable[[AlmRunReport], None] | None = None) -> AlmRunReport:
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

    Returns
    -------
    AlmRunReport
        Counts, failures and rejects with reasons, tokens and cost (None when no price is known).

    Raises
    ------
    InputError
        Unknown clips, provider or prompt; a model NAME holding imported predictions; an estimate
        over ``max_cost``. Nothing is sent or written.
    RunStopped
        The key was refused or the model is unknown (401/403/404): the run stopped; answers stored
        so far stay, a rerun resumes.
    """
    from sqlalchemy import update

    from storage.models import AlmJob, utcnow

    task = task or TaskContext()
    config = config or load_alm_config()
    if options.concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    if options.engine not in ("local", "ray"):
        raise InputError(f"--engine {options.engine!r}: expected local or ray")
    if options.engine == "ray" and options.provider != "transformers":
        raise InputError(f"--engine ray runs local models (--provider transformers); {options.provider} answers on the "
                         "provider's machines, so raise --concurrency instead")
    if options.engine == "local" and options.ray_address:
        raise InputError("--ray-address goes with --engine ray")
    plan = _plan(store, options, config)
    if options.max_cost is not None and plan.items:
        estimate = dry_run(store, options, config=config)
        if estimate.cost_usd is None:
            raise InputError(f"no price for {options.api_model_id!r} in {config.path}, so --max-cost cannot be "
                             "checked; add its prices or drop --max-cost (nothing was sent)")
        if estimate.cost_usd > options.max_cost:
            raise InputError(f"the estimate ${estimate.cost_usd:.2f} for {estimate.requests} request(s) exceeds "
                             f"--max-cost ${options.max_cost:.2f}; nothing was sent. Narrow --clips or raise --max-cost")
    if provider is None and plan.items and options.engine == "ray":
        from workbench.pool.alm import RayLocalProvider

        provider = RayLocalProvider(options.api_model_id, device=plan.settings.device, address=options.ray_address,
                                    workers=options.concurrency)
    elif provider is None and plan.items:
        provider = make_provider(options.provider, plan.settings, api_model=options.api_model_id,
                                 base_url=options.base_url, api_key_env=options.api_key_env)
    report = new_report(options, plan)
    # In-process local models answer one clip at a time; on Ray, one clip per actor.
    concurrency = 1 if options.provider == "transformers" and options.engine == "local" else options.concurrency
    open_job(store, options, plan, report, task)
    status = "done"
    runner = _Runner(store, options, plan, provider, task, report, sleep, concurrency, on_stored)  # type: ignore[arg-type]
    try:
        if plan.items:
            runner.run()
    except TaskCancelled:
        status = "cancelled"
        raise
    except RunStopped:
        status = "failed"
        raise
    finally:
        if provider is not None:
            provider.close()
        with store.write() as session:
            session.execute(update(AlmJob).where(AlmJob.id == report.job_id).values(
                status=status, finished_at=utcnow(), answered=report.answered, failed=len(report.failed),
                input_tokens=report.input_tokens, output_tokens=report.output_tokens, cost_usd=report.cost_usd))
    return report
