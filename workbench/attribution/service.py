"""Running the judges over a project: inputs from the store, sync and batch modes, the result cache.

Every request and reply is stored (``JudgeCall``, retries too); each judged clip gets one
``Judgment`` per listed category from its final attempt. A request's fingerprint keys the result
cache: a fingerprint with an ``ok`` call is answered and is not sent again unless ``force``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from sqlmodel import Session, col, select

from storage import Store
from storage.models import AlmRun, Clip, JudgeCall, JudgeRun, Judgment, Prediction, Tag, utcnow
from workbench.attribution.config import JudgeConfig, JudgesConfig
from workbench.attribution.cost import call_cost
from workbench.attribution.prompts import (
    CategoryInput,
    ClipInput,
    RenderedPrompt,
    load_template,
    render_clip_prompt,
    request_fingerprint,
)
from workbench.attribution.providers import (
    JudgeAuthError,
    JudgeProvider,
    JudgeRequest,
    ProviderCallError,
    ProviderReply,
    TokenUsage,
    make_provider,
)
from workbench.attribution.schema import ReplyCheck, check_reply, output_schema
from workbench.errors import AglwError, InputError
from workbench.metrics.core import prediction_error_km
from workbench.tagging.ontology import Ontology, load_local_ontology

log = logging.getLogger(__name__)

TAG_THRESHOLD = 0.15
TOP_CATEGORIES = 10
# The ceiling for the one retry of a truncated reply (twice the configured budget, at most this).
MAX_RETRY_TOKENS = 32_000

ProviderFactory = Callable[[JudgeConfig], JudgeProvider]


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class SkippedClip:
    """A clip that was not judged, and why."""

    key: str
    reason: str


@dataclass(frozen=True)
class ClipSelection:
    """The clips to judge for one ALM run, with the tagger run their categories come from."""

    alm_run_id: int
    alm_model: str
    tagger_run_id: int | None
    inputs: list[ClipInput]
    skipped: list[SkippedClip]


def resolve_alm_run(session: Session, alm_model: str | None) -> AlmRun:
    """The ALM run named ``alm_model``, or the only one imported.

    Raises
    ------
    AglwError
        No run of that name, none imported, or several and no name given.
    """
    runs = session.exec(select(AlmRun).order_by(AlmRun.model)).all()
    if alm_model is not None:
        for run in runs:
            if run.model == alm_model:
                return run
        known = ", ".join(r.model for r in runs) or "none"
        raise AglwError(f"no imported ALM results named {alm_model!r} (imported: {known}); check --alm")
    if not runs:
        raise AglwError("no ALM results imported yet: run `aglw import predictions --model NAME FILE` first")
    if len(runs) > 1:
        raise AglwError(f"several ALM models are imported ({', '.join(r.model for r in runs)}); choose one with --alm")
    return runs[0]


def latest_tagger_run_id(session: Session) -> int | None:
    """The tagger run whose tags the judges read: the project's current one (one definition,
    :func:`workbench.project.current_tagger_run_id`)."""
    from workbench.project import current_tagger_run_id

    return current_tagger_run_id(session)


def select_clip_inputs(
    store: Store,
    *,
    alm_model: str | None = None,
    clip_keys: list[str] | None = None,
    tagger_run_id: int | None = None,
    tau: float = TAG_THRESHOLD,
    top_n: int = TOP_CATEGORIES,
    names: Ontology | None = None,
) -> ClipSelection:
    """Gather what the judges read for every selected clip that has a prediction from the ALM run.

    Parameters
    ----------
    store
        The project.
    alm_model
        The ALM whose chain-of-thought is judged (default: the only one imported).
    clip_keys
        Clip keys to judge; None for all clips with a prediction.
    tagger_run_id
        The tagger run whose tags are the categories (default: the latest with tags).
    tau, top_n
        Tags with probability ≥ ``tau``, at most ``top_n`` per clip, highest first.
    names
        AudioSet names and roots (default: the configured or cached ontology; without one,
        ids are shown as unknown).

    Returns
    -------
    ClipSelection
        Inputs in clip-key order plus the clips skipped with their reasons (no tags, no CoT, ...).
    """
    if names is None:
        names = load_local_ontology() or Ontology.empty()
    with store.session() as session:
        alm_run = resolve_alm_run(session, alm_model)
        if tagger_run_id is None:
            tagger_run_id = latest_tagger_run_id(session)
        rows = session.exec(
            select(Prediction, Clip)
            .join(Clip, col(Prediction.clip_id) == col(Clip.id))
            .where(Prediction.alm_run_id == alm_run.id)
            .order_by(Clip.key)
        ).all()
        tags_by_clip: dict[int, list[Tag]] = {}
        if tagger_run_id is not None:
            for tag in session.exec(
                select(Tag)
                .where(Tag.tagger_run_id == tagger_run_id, Tag.probability >= tau)
                .order_by(col(Tag.probability).desc(), Tag.audioset_id)
            ):
                tags_by_clip.setdefault(tag.clip_id, []).append(tag)
    skipped: list[SkippedClip] = []
    by_key = {clip.key: (prediction, clip) for prediction, clip in rows}
    if clip_keys is not None:
        wanted = []
        # A key given twice is judged (and paid for) once.
        for key in dict.fromkeys(clip_keys):
            if key in by_key:
                wanted.append(by_key[key])
            else:
                skipped.append(SkippedClip(key, f"no prediction from {alm_run.model!r} for this clip key"))
    else:
        wanted = list(by_key.values())
    inputs: list[ClipInput] = []
    for prediction, clip in wanted:
        tags = tags_by_clip.get(clip.id or -1, [])[:top_n]
        if tagger_run_id is None:
            skipped.append(SkippedClip(clip.key, "no tagger run yet: run `aglw tag` first"))
            continue
        if not tags:
            skipped.append(SkippedClip(clip.key, f"no tag with probability ≥ {tau} in tagger run {tagger_run_id}"))
            continue
        if not (prediction.reasoning or "").strip():
            skipped.append(SkippedClip(clip.key, "the prediction has no chain-of-thought (reasoning) to judge"))
            continue
        inputs.append(clip_input(clip, prediction, tags, names))
    return ClipSelection(alm_run.id or 0, alm_run.model, tagger_run_id, inputs, skipped)


def clip_input(clip: Clip, prediction: Prediction, tags: list[Tag], names: Ontology) -> ClipInput:
    """Assemble one clip's judge input from its stored rows."""
    true_lat = clip.latitude if clip.latitude is not None else prediction.true_latitude
    true_lon = clip.longitude if clip.longitude is not None else prediction.true_longitude
    return ClipInput(
        clip_id=clip.id or 0,
        clip_key=clip.key,
        categories=tuple(
            CategoryInput(t.audioset_id, names.name(t.audioset_id), names.primary_root(t.audioset_id), float(t.probability))
            for t in tags
        ),
        cot=prediction.reasoning or "",
        predicted_city=prediction.predicted_city,
        predicted_country=prediction.predicted_country,
        predicted_latitude=prediction.predicted_latitude,
        predicted_longitude=prediction.predicted_longitude,
        true_city=clip.city or prediction.true_city,
        true_country=clip.country or prediction.true_country,
        true_latitude=true_lat,
        true_longitude=true_lon,
        error_km=prediction_error_km(true_lat, true_lon, prediction.predicted_latitude, prediction.predicted_longitude),
    )


# --------------------------------------------------------------------------- plan


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


# --------------------------------------------------------------------------- one clip


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


# --------------------------------------------------------------------------- storing


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


def _new_run(store: Store, judge: JudgeConfig, selection: ClipSelection, mode: str, status: str) -> JudgeRun:
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


def _finish_run(store: Store, run_id: int, status: str, **changes: Any) -> None:
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
        models = listed.setdefault(id(provider), provider.list_models())
        if plan.judge.model not in models:
            near = sorted(m for m in models if m.split("-")[:2] == plan.judge.model.split("-")[:2])[:5]
            hint = f"; similar ids offered: {', '.join(near)}" if near else ""
            raise InputError(
                f"judge {plan.judge.name!r}: model id {plan.judge.model!r} is not in the {plan.judge.provider} "
                f"model list{hint}. Fix `model` in judges.toml"
            )


# --------------------------------------------------------------------------- sync


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
    on_clip_done: Callable[[str, str, bool], None] | None = None,
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
        later with :func:`collect_batches`).
    force
        Send even requests whose fingerprint is already answered.
    concurrency
        Requests in flight at once per judge in sync mode.
    base_url
        Another endpoint for every judge (a proxy, or a test server).
    provider_factory
        Builds a provider per judge (default: :func:`make_provider`).
    on_clip_done
        Called with (judge name, clip key, ok) in the calling thread as each clip is stored.

    Raises
    ------
    JudgeAuthError
        The provider refused the key; work stored so far is kept and the run is marked failed.
    """
    if mode not in ("sync", "batch"):
        raise InputError(f"--mode must be sync or batch, got {mode!r}")
    if concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    judges = config.select(judge_names)
    selection = select_clip_inputs(store, alm_model=alm_model, clip_keys=clip_keys, names=names)
    plans = plan_requests(store, judges, selection.inputs, force=force)
    report = RunReport(alm_model=selection.alm_model, judges=[], skipped=selection.skipped)
    active = [p for p in plans if p.to_send]
    factory = provider_factory or (lambda judge: make_provider(judge, base_url=base_url))
    providers = {plan.judge.name: factory(plan.judge) for plan in active}
    try:
        if active:
            verify_models(active, providers)
        _run_plans(store, config, plans, providers, selection, report, mode, concurrency, on_clip_done)
    finally:
        close_providers(providers.values())
    return report


def close_providers(providers: Iterable[Any]) -> None:
    """Close each provider's HTTP connections (providers without ``close`` are left alone)."""
    for provider in providers:
        close = getattr(provider, "close", None)
        if callable(close):
            close()


def _run_plans(
    store: Store,
    config: JudgesConfig,
    plans: list[JudgePlan],
    providers: dict[str, JudgeProvider],
    selection: ClipSelection,
    report: RunReport,
    mode: str,
    concurrency: int,
    on_clip_done: Any,
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
        provider = providers[plan.judge.name]
        if mode == "batch" and provider.supports_batch:
            _submit_batch(store, plan, provider, selection, summary)
        else:
            _run_sync(store, config, plan, provider, selection, summary, concurrency, on_clip_done)


def _run_sync(
    store: Store,
    config: JudgesConfig,
    plan: JudgePlan,
    provider: JudgeProvider,
    selection: ClipSelection,
    summary: JudgeSummary,
    concurrency: int,
    on_clip_done: Callable[[str, str, bool], None] | None,
) -> None:
    run = _new_run(store, plan.judge, selection, "sync", "running")
    summary.run_id = run.id
    summary.mode = "sync"
    schema = output_schema()
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=f"judge-{plan.judge.name}")
    queue = list(plan.to_send)
    in_flight: dict[Future[list[Attempt]], PlannedRequest] = {}
    try:
        while queue or in_flight:
            # Submitting lazily keeps at most `concurrency` requests queued, so a stop is prompt.
            while queue and len(in_flight) < concurrency:
                planned = queue.pop(0)
                in_flight[executor.submit(judge_one_clip, provider, plan.judge, planned.prompt, schema)] = planned
            done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                planned = in_flight.pop(future)
                attempts = future.result()
                with store.write() as session:
                    store_attempts(session, run, planned, attempts, config, summary)
                summary.sent += len(attempts)
                if on_clip_done is not None:
                    on_clip_done(plan.judge.name, planned.clip.clip_key, attempts[-1].ok)
    except JudgeAuthError:
        summary.status = "failed"
        _finish_run(store, run.id or 0, "failed")
        raise
    except BaseException:
        summary.status = "cancelled"
        _finish_run(store, run.id or 0, "cancelled")
        raise
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
    _finish_run(store, run.id or 0, "done")


# --------------------------------------------------------------------------- batch


def custom_id_for(planned: PlannedRequest) -> str:
    """A batch custom id (``[A-Za-z0-9_-]{1,64}``) unique per clip and request."""
    return f"c{planned.clip.clip_id}-{planned.fingerprint[:24]}"


def _submit_batch(
    store: Store, plan: JudgePlan, provider: JudgeProvider, selection: ClipSelection, summary: JudgeSummary
) -> None:
    schema = output_schema()
    request_map = {
        custom_id_for(p): {"clip_id": p.clip.clip_id, "fingerprint": p.fingerprint, "attempt": 1}
        for p in plan.to_send
    }
    # The run (with its request map) is stored before submitting so that a crash right after the
    # submission leaves a record to investigate, never an untracked paid batch.
    run = _new_run(store, plan.judge, selection, "batch", "submitting")
    _finish_run(store, run.id or 0, "submitting", request_map=request_map)
    summary.run_id = run.id
    summary.mode = "batch"
    try:
        # Keyed by custom id: a batch holding one id twice is rejected whole by the API.
        unique = {custom_id_for(p): p for p in plan.to_send}
        batch_id = provider.submit_batch([(cid, JudgeRequest(plan.judge, p.prompt, schema)) for cid, p in unique.items()])
    except (ProviderCallError, JudgeAuthError) as exc:
        _finish_run(store, run.id or 0, "failed")
        summary.status = "failed"
        if isinstance(exc, JudgeAuthError):
            raise
        summary.failures.append({"clip": "*", "reason": f"batch submission failed: {exc}"})
        return
    _finish_run(store, run.id or 0, "submitted", batch_id=batch_id)
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
) -> RunReport:
    """Collect the results of every submitted batch that has ended (safe to repeat after a restart).

    Results are matched on ``custom_id`` through the stored request map; a succeeded reply that is
    invalid gets its one retry as an interactive request; errored, expired and canceled requests are
    stored as failed calls (a later ``judge`` run sends them again).
    """
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
            _collect_run(store, run, judge, provider, config, schema, summary, names)
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
) -> None:
    """Store the results of one ended batch run (or note that it is still in progress)."""
    state = provider.batch_state(run.batch_id or "")
    if not state.ended:
        summary.status = f"in progress ({state.counts.get('processing', 0)} requests processing)"
        return
    planned_by_clip = _replan_run(store, run, judge, names)
    request_map = run.request_map or {}
    seen: set[str] = set()
    for item in provider.batch_results(run.batch_id or ""):
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
    missing = [cid for cid in request_map if cid not in seen]
    for cid in missing:
        entry = request_map[cid]
        planned = planned_by_clip.get(int(entry["clip_id"])) or _stale_request(store, run, entry)
        attempt = Attempt(1, None, None, "the batch ended without a result for this request", custom_id=cid, batch=True)
        with store.write() as session:
            store_attempts(session, run, planned, [attempt], config, summary)
    _finish_run(store, run.id or 0, "done")
    summary.status = "collected"


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


# --------------------------------------------------------------------------- dry run


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
