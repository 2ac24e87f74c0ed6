"""Gemini's Batch API: submit a run at the batch price, collect its answers later (resumable).

Submitting uploads each recording through the Files API (a batch of inline requests may not
exceed 20 MB, so the requests carry file references, not audio) and creates one batch job; the
job's name and what each request is (clip, sample, fingerprint, what was sent) are stored with
the job, so collecting survives a restart. Collecting asks for the batch's state; once it has
ended, every result is stored exactly as a synchronous answer would be (the same parsing,
predictions and fingerprints), priced at the batch discount; a failed, expired or cancelled
batch leaves its clips as stored failures to be asked again. Most batches end within hours,
all within 24 h; uploads expire after 48 h.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from workbench.alm.answers import close_job, submitted_jobs, update_job
from workbench.alm.config import AlmConfig, load_alm_config
from workbench.alm.plan import AlmItem, AlmPlan, AlmRunOptions, model_options, plan_run
from workbench.alm.prompts import AlmPrompt
from workbench.alm.backends import make_provider
from workbench.alm.providers import AlmRequest, AnswerError, RetryableError, read_audio
from workbench.alm.records import ClipFacts
from workbench.alm.runner import AlmOutcome, AlmQuestions, AlmRunReport, new_report, start
from workbench.errors import InputError
from workbench.tasks import TaskCancelled, TaskContext

if TYPE_CHECKING:
    from storage import Store

ENDED_OK = "JOB_STATE_SUCCEEDED"
ENDED_BADLY = ("JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")


def _state(batch: Any) -> str:
    state = getattr(batch, "state", None)
    return str(getattr(state, "value", state) or "")


def submit_batch(store: Store, options: AlmRunOptions, *, config: AlmConfig | None = None,
                 task: TaskContext | None = None) -> AlmRunReport:
    """Upload the recordings and submit one Gemini batch job; returns with ``stopped`` naming the batch.

    Raises
    ------
    InputError
        A provider other than ``gemini``, or the errors of :func:`workbench.alm.runner.run_alm`.
    """
    from google.genai import types

    if options.provider != "gemini":
        raise InputError("--mode batch uses Gemini's Batch API: it needs --provider gemini")
    task = task or TaskContext()
    config = config or load_alm_config()
    plan = plan_run(store, options, config)
    report = new_report(options, plan)
    questions = AlmQuestions(store, options, plan, None, report)
    if not plan.items:
        questions.ensure_job()
        start(store, options, plan, report, questions, task)
        return report
    provider = make_provider("gemini", plan.settings, api_model=options.api_model_id, base_url=options.base_url,
                             api_key_env=options.api_key_env)
    questions.ensure_job()
    start(store, options, plan, report, questions, task)
    requests: list[Any] = []
    entries: list[dict[str, Any]] = []
    failures: list[AlmOutcome] = []
    batch = None
    try:
        for item in plan.items:
            task.check_cancel()
            seed = None if options.seed is None else options.seed + item.sample
            try:
                audio = read_audio(item.path, provider.accepted_formats, seconds=item.seconds)  # type: ignore[arg-type]
                request = AlmRequest(item.clip.key, plan.prompt, audio, options.api_model_id, plan.entry, seed)
                uploaded = provider.upload(request)  # type: ignore[attr-defined]
            except (AnswerError, RetryableError) as exc:
                failures.append(AlmOutcome(item, "failed", f"upload for the batch failed: {exc}"))
                continue
            contents, generation = provider.contents_and_config(  # type: ignore[attr-defined]
                request, provider.file_part(uploaded, audio.mime_type))  # type: ignore[attr-defined]
            requests.append(types.InlinedRequest(contents=contents, config=generation, metadata={"key": item.label}))
            entries.append({"label": item.label, "clip": asdict(item.clip), "sample": item.sample,
                            "fingerprint": item.fingerprint, "cache_key": item.cache_key,
                            "audio": audio.record("files"), "file": uploaded.name})
            # The uploads are the long part: the bar moves per upload (a failed one counts when announced).
            task.advance()
        questions.store(failures)
        questions.announce(failures, task)
        task.check_cancel()  # the last moment a cancel costs nothing: the batch is paid once created
        if requests:
            probe = AlmRequest("batch", plan.prompt, None, options.api_model_id, plan.entry)  # type: ignore[arg-type]
            batch = provider.create_batch(probe, requests, f"aglw {options.model}")  # type: ignore[attr-defined]
    except Exception as exc:
        # Nothing was submitted (the batch is one item, created whole or not at all): delete the
        # uploads rather than leave them on the provider for 48 h, and close the job, so that it is
        # neither collected nor shown as running; a re-run submits everything again.
        for entry in entries:
            provider.delete(entry["file"])  # type: ignore[attr-defined]
        close_job(store, questions.job_id, "cancelled" if isinstance(exc, TaskCancelled) else "failed",  # type: ignore[arg-type]
                  failed=len(report.failed))
        raise
    finally:
        provider.close()
    job_options = {**model_options(plan.entry), "batch": {
        "name": getattr(batch, "name", None), "entries": entries,
        "prompt": {"version": plan.prompt.version, "before": plan.prompt.before, "after": plan.prompt.after}}}
    update_job(store, questions.job_id, status="submitted" if batch is not None else "failed",  # type: ignore[arg-type]
               options=job_options, failed=len(report.failed))
    report.stopped = (f"submitted {len(entries)} request(s) as batch {batch.name} at the batch price; collect the "
                      "answers with --collect (most batches end within hours, all within 24 h)") if batch is not None \
        else "nothing was submitted"
    return report


def collect_batches(store: Store, model: str, *, config: AlmConfig | None = None,
                    task: TaskContext | None = None, base_url: str | None = None) -> AlmRunReport:
    """Collect the ended Gemini batches of ``model``; a batch still running is left for later.

    Returns
    -------
    AlmRunReport
        Answers stored now, failures (those of a batch that failed, expired or was cancelled, and
        requests without a result), tokens and cost at the batch price; ``stopped`` lists batches
        still running.
    """
    task = task or TaskContext()
    config = config or load_alm_config()
    jobs = submitted_jobs(store, model)
    report = AlmRunReport(model=model, provider="gemini", api_model="", prompt_version="")
    if not jobs:
        report.stopped = f"no submitted batch of model {model!r} to collect"
        return report
    waiting: list[str] = []
    settings = config.provider("gemini")
    for job, run_id in jobs:
        batch_info = (job.options or {}).get("batch") or {}
        report.api_model, report.prompt_version = job.api_model, job.prompt_version
        prompt_data = batch_info.get("prompt") or {}
        prompt = AlmPrompt(prompt_data.get("version", job.prompt_version), prompt_data.get("before", ""),
                           prompt_data.get("after", ""), "stored with the batch")
        entry = config.model("gemini", job.api_model)
        provider = make_provider("gemini", settings, api_model=job.api_model, base_url=base_url or job.base_url)
        try:
            probe = AlmRequest("batch", prompt, None, job.api_model, entry)  # type: ignore[arg-type]
            batch = provider.get_batch(probe, batch_info["name"])  # type: ignore[attr-defined]
            state = _state(batch)
            if state != ENDED_OK and state not in ENDED_BADLY:
                waiting.append(f"{batch_info['name']} ({state or 'unknown state'})")
                continue
            options = AlmRunOptions(model=model, provider="gemini", api_model=job.api_model, seed=job.seed,
                                    samples=job.samples)
            plan = AlmPlan([], [], [], run_id, entry, settings, config.price(job.api_model), prompt)
            discount = settings.batch_discount or 0.5
            report.job_id = job.id
            questions = AlmQuestions(store, options, plan, provider, report, discount=discount)
            questions.spent = report.cost_usd or 0.0
            entries = batch_info.get("entries", [])
            task.set_total(task.total + len(entries))
            results = list(getattr(getattr(batch, "dest", None), "inlined_responses", None) or []) if state == ENDED_OK else []
            by_key = {}
            for index, result in enumerate(results):
                key = (getattr(result, "metadata", None) or {}).get("key")
                by_key[key if key is not None else entries[index]["label"] if index < len(entries) else index] = result
            outcomes = []
            for item_data in entries:
                item = AlmItem(ClipFacts(**item_data["clip"]), item_data["sample"], None, None,
                             item_data["fingerprint"], item_data["cache_key"])
                result = by_key.get(item_data["label"])
                if state != ENDED_OK:
                    outcomes.append(AlmOutcome(item, "failed", f"the batch ended {state.removeprefix('JOB_STATE_').lower()}; "
                                             "run again to ask these clips"))
                elif result is None:
                    outcomes.append(AlmOutcome(item, "failed", "no result for this request in the batch"))
                elif getattr(result, "error", None) is not None:
                    error = result.error
                    outcomes.append(AlmOutcome(item, "failed", f"batch request failed: {getattr(error, 'message', error)}"))
                else:
                    try:
                        from workbench.alm.gemini import reply_from_response

                        reply = reply_from_response(result.response, "files")
                    except AnswerError as exc:
                        outcomes.append(AlmOutcome(item, "failed", str(exc)))
                        continue
                    outcomes.append(questions.outcome(item, reply, item_data["audio"], discount=discount))
            questions.store(outcomes)
            close_job(store, job.id, "done")
            for item_data in entries:
                provider.delete(item_data["file"])  # type: ignore[attr-defined]
            questions.announce(outcomes, task)
        finally:
            provider.close()
    if waiting:
        report.stopped = "still running: " + ", ".join(waiting) + "; collect again later"
    return report
