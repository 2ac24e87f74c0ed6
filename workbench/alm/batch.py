"""Gemini's Batch API: submit a run at the batch price, collect its answers later (resumable).

The protocol — request map recorded before submitting, state, results matched on the custom id
(the request's label), each result journaled then stored, a batch that ended badly left as stored
failures, collecting again skipping what is stored — is the one batch driver's
(:mod:`workbench.llm.batch`); this module is its Gemini adapter for the ALM question kind.

What stays here: each recording is uploaded through the Files API (a batch of inline requests may
not exceed 20 MB, so the requests carry file references, not audio); what each request is (clip,
sample, fingerprint, what was sent) is stored with the job; a result is read exactly as a
synchronous answer (the same parsing, predictions and fingerprints) and priced at the batch
discount; the uploads are deleted once the batch is collected. Most batches end within hours, all
within 24 h; uploads expire after 48 h.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from workbench.alm.answers import close_job, job_answer_samples, submitted_jobs, update_job
from workbench.alm.backends import make_provider
from workbench.alm.config import AlmConfig, load_alm_config
from workbench.alm.gemini import reply_from_response
from workbench.alm.plan import AlmItem, AlmPlan, AlmRunOptions, model_options, plan_run
from workbench.alm.prompts import AlmPrompt
from workbench.alm.providers import AlmReply, AlmRequest, AnswerError, RetryableError, read_audio
from workbench.alm.records import ClipFacts
from workbench.alm.runner import AlmOutcome, AlmQuestions, AlmRunReport, new_report, start
from workbench.errors import InputError, UsageError
from workbench.llm.batch import BatchState, Replies, collect, submit
from workbench.tasks import TaskCancelled, TaskContext

if TYPE_CHECKING:
    from storage import Store

ENDED_OK = "JOB_STATE_SUCCEEDED"
ENDED_BADLY = ("JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")


def batch_state_name(batch: Any) -> str:
    """A Gemini batch job's state as its enum name ("JOB_STATE_SUCCEEDED")."""
    state = getattr(batch, "state", None)
    return str(getattr(state, "value", state) or "")


class GeminiSubmission:
    """Submitting one ALM job's uploaded requests (the driver's :class:`~workbench.llm.batch.BatchSubmission`)."""

    def __init__(self, store: Store, questions: AlmQuestions, provider: Any, probe: AlmRequest,
                 display_name: str) -> None:
        self.project, self.questions, self.provider, self.probe = store, questions, provider, probe
        self.display_name = display_name
        self.entries: list[dict[str, Any]] = []

    def options(self, name: str | None) -> dict[str, Any]:
        """The job's options: the model's, and the batch (its name, request map and prompt)."""
        prompt = self.questions.plan.prompt
        return {**model_options(self.questions.plan.entry), "batch": {
            "name": name, "entries": self.entries,
            "prompt": {"version": prompt.version, "before": prompt.before, "after": prompt.after}}}

    def record(self, request_map: dict[str, dict[str, Any]]) -> None:
        self.entries = list(request_map.values())
        update_job(self.project, self.questions.job_id, status="submitting",  # type: ignore[arg-type]
                   options=self.options(None), failed=len(self.questions.report.failed))

    def submit(self, requests: list[tuple[str, Any]]) -> str:
        batch = self.provider.create_batch(self.probe, [request for _, request in requests], self.display_name)
        return str(batch.name)

    def submitted(self, batch_id: str) -> None:
        update_job(self.project, self.questions.job_id, status="submitted",  # type: ignore[arg-type]
                   options=self.options(batch_id), failed=len(self.questions.report.failed))

    def not_submitted(self, exc: BaseException) -> None:
        discard(self.project, self.questions, self.provider, [entry["file"] for entry in self.entries], exc)


def discard(store: Store, questions: AlmQuestions, provider: Any, files: list[str], exc: BaseException) -> None:
    """Nothing was submitted (the batch is created whole or not at all): delete the uploads rather
    than leave them on the provider for 48 h, and close the job, so that it is neither collected nor
    shown as running; a re-run submits everything again."""
    for name in files:
        provider.delete(name)
    close_job(store, questions.job_id, "cancelled" if isinstance(exc, TaskCancelled) else "failed",  # type: ignore[arg-type]
              failed=len(questions.report.failed))


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
        raise UsageError("--mode batch uses Gemini's Batch API: it needs --provider gemini")
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
    probe = AlmRequest("batch", plan.prompt, None, options.api_model_id, plan.entry)  # type: ignore[arg-type]
    submission = GeminiSubmission(store, questions, provider, probe, f"aglw {options.model}")
    requests: list[tuple[str, Any, dict[str, Any]]] = []
    failures: list[AlmOutcome] = []
    batch_name: str | None = None
    try:
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
                requests.append((item.label, types.InlinedRequest(contents=contents, config=generation,
                                                                  metadata={"key": item.label}),
                                 {"label": item.label, "clip": asdict(item.clip), "sample": item.sample,
                                  "fingerprint": item.fingerprint, "cache_key": item.cache_key,
                                  "audio": audio.record("files"), "file": uploaded.name}))
                # The uploads are the long part: the bar moves per upload (a failed one counts when announced).
                task.advance()
            questions.store(failures)
            questions.announce(failures, task)
            task.check_cancel()  # the last moment a cancel costs nothing: the batch is paid once created
        except Exception as exc:
            discard(store, questions, provider, [entry["file"] for _, _, entry in requests], exc)
            raise
        if requests:
            # A failure discards the uploads and closes the job.
            batch_name = submit(submission, requests, what=f"model {options.model!r}", task=task)
    finally:
        provider.close()
    if batch_name is None:
        update_job(store, questions.job_id, status="failed", options=submission.options(None),  # type: ignore[arg-type]
                   failed=len(report.failed))
        report.stopped = "nothing was submitted"
        return report
    report.stopped = (f"submitted {len(submission.entries)} request(s) as batch {batch_name} at the batch price; "
                      "collect the answers with --collect (most batches end within hours, all within 24 h)")
    return report


class GeminiBatch:
    """One submitted ALM job's batch (the driver's :class:`~workbench.llm.batch.BatchCollection`);
    stored whole, in one transaction."""

    group = None

    def __init__(self, store: Store, job: Any, provider: Any, probe: AlmRequest, questions: AlmQuestions,
                 discount: float) -> None:
        self.project, self.job, self.provider, self.probe = store, job, provider, probe
        self.questions, self.discount = questions, discount
        info = (job.options or {}).get("batch") or {}
        self.batch_id: str = info["name"]
        self.entries: dict[str, dict[str, Any]] = {entry["label"]: entry for entry in info.get("entries", [])}
        self._batch: Any = None

    # ------------------------------------------------------------------ the provider's side
    def state(self) -> BatchState:
        self._batch = self.provider.get_batch(self.probe, self.batch_id)  # the results come with it
        state = batch_state_name(self._batch)
        if state == ENDED_OK:
            return BatchState(True)
        if state in ENDED_BADLY:
            return BatchState(True, failed=f"the batch ended {state.removeprefix('JOB_STATE_').lower()}; "
                                           "run again to ask these clips")
        return BatchState(False, words=f"{self.batch_id} ({state or 'unknown state'})")

    def results(self) -> Iterable[tuple[str, Any]]:
        labels = list(self.entries)
        responses = getattr(getattr(self._batch, "dest", None), "inlined_responses", None) or []
        for index, result in enumerate(responses):
            key = (getattr(result, "metadata", None) or {}).get("key")
            # A result without its metadata is the request at its position.
            yield (str(key) if key is not None else labels[index] if index < len(labels) else f"#{index}"), result

    def record(self, custom_id: str, result: Any) -> dict[str, Any]:
        if getattr(result, "error", None) is not None:
            error = result.error
            return {"failure": f"batch request failed: {getattr(error, 'message', error)}"}
        try:
            return {"reply": asdict(reply_from_response(result.response, "files"))}
        except AnswerError as exc:
            return {"failure": str(exc)}

    # ------------------------------------------------------------------ the kind's side
    def request_map(self) -> dict[str, dict[str, Any]]:
        return self.entries

    def stored(self) -> set[str]:
        held = job_answer_samples(self.project, self.job.id)
        return {label for label, entry in self.entries.items() if (entry["clip"]["key"], entry["sample"]) in held}

    def item(self, custom_id: str) -> AlmItem:
        entry = self.entries[custom_id]
        return AlmItem(ClipFacts(**entry["clip"]), entry["sample"], None, None, entry["fingerprint"], entry["cache_key"])

    def outcome(self, custom_id: str, replies: Replies) -> AlmOutcome:
        entry = replies.first
        if "reply" not in entry:
            return AlmOutcome(self.item(custom_id), "failed", entry.get("failure") or "failed")
        return self.questions.outcome(self.item(custom_id), AlmReply(**entry["reply"]),
                                      self.entries[custom_id]["audio"], discount=self.discount)

    def failed(self, custom_id: str, reason: str) -> AlmOutcome:
        return AlmOutcome(self.item(custom_id), "failed", reason)

    def store(self, outcomes: list[AlmOutcome]) -> None:
        self.questions.store(outcomes)

    def announce(self, outcomes: list[AlmOutcome], task: TaskContext) -> None:
        self.questions.announce(outcomes, task)

    def finish(self) -> None:
        close_job(self.project, self.job.id, "done")
        for entry in self.entries.values():
            self.provider.delete(entry["file"])


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
            options = AlmRunOptions(model=model, provider="gemini", api_model=job.api_model, seed=job.seed,
                                    samples=job.samples)
            plan = AlmPlan([], [], [], run_id, entry, settings, config.price(job.api_model), prompt)
            discount = settings.batch_discount or 0.5
            questions = AlmQuestions(store, options, plan, provider, report, discount=discount)
            questions.job_id = job.id
            questions.spent = report.cost_usd or 0.0
            probe = AlmRequest("batch", prompt, None, job.api_model, entry)  # type: ignore[arg-type]
            batch = GeminiBatch(store, job, provider, probe, questions, discount)
            state = collect(batch, store, what=f"model {model!r}", task=task)
            if not state.ended:
                waiting.append(state.words)
            else:
                report.job_id = job.id
        finally:
            provider.close()
    if waiting:
        report.stopped = "still running: " + ", ".join(waiting) + "; collect again later"
    return report
