"""What an ALM run would ask: clips, their recordings and fingerprints, and what is already answered.

Read-only: planning reads the store, never writes. Each recording's hash comes from the store
(``Clip.content_hash``); only a clip whose hash was never stored is hashed from its file.
The same plan drives the run (:mod:`workbench.alm.runner`) and the offline estimate
(:func:`dry_run`), so the estimate prices exactly the requests the run would send.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.alm.config import AlmConfig, ModelEntry, Price, ProviderSettings, load_alm_config
from workbench.alm.estimate import Estimate, estimate_requests
from workbench.alm.prompts import AlmPrompt, load_prompt
from workbench.alm.records import ClipFacts
from workbench.errors import InputError, UsageError

if TYPE_CHECKING:
    from storage import Store

RUN_CONTAINER = "alm-run"  # AlmRun.container of a model whose predictions `aglw alm run` made


@dataclass
class AlmRunOptions:
    """What to run: model NAME, provider, endpoint, clips, prompt and limits."""

    model: str
    provider: str
    api_model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    clip_keys: list[str] | None = None
    prompt: str = "agl1k"
    concurrency: int = 4
    max_cost: float | None = None
    force: bool = False
    samples: int = 1
    seed: int | None = 42
    # transformers only: clips per ``generate`` call. 1 is the reference's way (AGL1K asked its
    # open models one clip per call); above 1 is an opt-in whose answers may differ (bf16 over a
    # left-padded batch), so it is part of each answer's fingerprint.
    gpu_batch: int = 1

    @property
    def api_model_id(self) -> str:
        return self.api_model or self.model


@dataclass(frozen=True)
class AlmItem:
    """One (clip, sample) to answer."""

    clip: ClipFacts
    sample: int
    path: Path | None
    seconds: float | None
    fingerprint: str | None
    cache_key: str | None
    problem: str | None = None  # no audio: a failure without a request
    digest: str | None = None  # the recording's sha256 the fingerprint was made of

    @property
    def label(self) -> str:
        return self.clip.key if self.sample == 0 else f"{self.clip.key}#{self.sample}"


@dataclass
class AlmPlan:
    """What a run asks (``items``), skips (``cached``) and fails without asking (``no_audio``)."""

    items: list[AlmItem]
    cached: list[AlmItem]
    no_audio: list[AlmItem]
    run_id: int | None
    entry: ModelEntry
    settings: ProviderSettings
    price: Price | None
    prompt: AlmPrompt


# How the transformers provider builds a local model's input (workbench/alm/local.py: per family,
# the message of the reference that produced the published numbers). Bump it when that changes: an
# answer to another message is another answer, not a cached one. API providers' fingerprints do not
# carry it, so their paid answers stay found.
LOCAL_MESSAGE_FORMAT = "agl1k-reference-messages-2"


def fingerprint(provider: str, api_model: str, prompt_version: str, audio_sha256: str,
                options: dict[str, Any], seed: int | None, *, gpu_batch: int = 1) -> str:
    """The key under which an answer is never paid for twice (the engine's one fingerprint).

    ``gpu_batch`` (clips per ``generate`` call of a local model) is in it only above 1: one clip
    per call is the reference's way, and the answers stored before the option existed were keyed
    without it, so they are still found; a batched answer is another answer.
    """
    from workbench.llm.fingerprint import fingerprint as request_fingerprint

    if provider == "transformers":
        options = {**options, "message_format": LOCAL_MESSAGE_FORMAT}
    if gpu_batch > 1:
        options = {**options, "gpu_batch": gpu_batch}
    return request_fingerprint({"provider": provider, "api_model": api_model, "prompt_version": prompt_version,
                                "audio_sha256": audio_sha256, "options": options, "seed": seed})


def model_options(entry: ModelEntry) -> dict[str, Any]:
    return {"max_output_tokens": entry.max_output_tokens, "temperature": entry.temperature,
            "structured_output": entry.structured_output, "audio_format": entry.audio_format}


def gpu_batch_of(options: AlmRunOptions) -> int | None:
    """Clips per ``generate`` call of the run (a local model's), None for a provider that has none."""
    return options.gpu_batch if options.provider == "transformers" else None


def run_settings(options: AlmRunOptions, entry: ModelEntry) -> dict[str, Any]:
    """The settings a job stores (``alm_job.options``): the model's, and a local run's clips per call."""
    settings = model_options(entry)
    if options.provider == "transformers":
        settings["gpu_batch"] = options.gpu_batch
    return settings


def check_gpu_batch(options: AlmRunOptions) -> None:
    """Refuse a ``gpu_batch`` below 1, or above 1 where no generate call is batched (an API provider).

    Raises
    ------
    UsageError
        Named for ``--gpu-batch`` (the CLI exits 2); nothing is sent or written.
    """
    if options.gpu_batch < 1:
        raise UsageError(f"--gpu-batch must be at least 1 (1 = one clip per generate call), got {options.gpu_batch}")
    if options.gpu_batch > 1 and options.provider != "transformers":
        raise UsageError(f"--gpu-batch batches the generate calls of a local model (--provider transformers); "
                         f"{options.provider} is asked one request per clip")


def _file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def plan_run(store: Store, options: AlmRunOptions, config: AlmConfig) -> AlmPlan:
    """Clips, their audio and fingerprints, and which answers are already stored (reads only)."""
    from sqlalchemy import select

    from storage.models import AlmAnswer, AlmRun, Clip
    from workbench.media import clip_audio, dataset_roots

    if options.samples < 1:
        raise UsageError("--samples must be at least 1")
    check_gpu_batch(options)
    settings = config.provider(options.provider)
    entry = config.model(options.provider, options.api_model_id)
    prompt = load_prompt(options.prompt)
    roots = dataset_roots(store)
    with store.session() as session:
        query = select(Clip).order_by(Clip.id)
        if options.clip_keys is not None:
            query = query.where(Clip.key.in_(options.clip_keys))  # type: ignore[attr-defined]
        clips = list(session.execute(query).scalars())
        run = session.execute(select(AlmRun).where(AlmRun.model == options.model)).scalars().first()
        if run is not None and run.container != RUN_CONTAINER:
            raise InputError(
                f"model {options.model!r} holds predictions imported from {run.source_path}; a run files its "
                "answers under a name of its own: choose another --model"
            )
        stored_keys: set[str] = set()
        if run is not None:
            stored_keys = set(session.execute(
                select(AlmAnswer.cache_key).where(AlmAnswer.alm_run_id == run.id, AlmAnswer.cache_key.is_not(None))
            ).scalars())
    if options.clip_keys is not None:
        found = {clip.key for clip in clips}
        unknown = [key for key in options.clip_keys if key not in found]
        if unknown:
            shown = ", ".join(unknown[:10]) + (f", … ({len(unknown) - 10} more)" if len(unknown) > 10 else "")
            raise InputError(f"no clip with key {shown} in the project; check --clips (nothing was sent)")
    if not clips:
        raise InputError("the project has no clips; import a dataset first (`aglw import dataset`)")
    seen: set[str] = set()
    items: list[AlmItem] = []
    cached: list[AlmItem] = []
    no_audio: list[AlmItem] = []
    opts = model_options(entry)
    for clip in clips:
        if clip.key in seen:  # the same key in two datasets: one prediction per key and model
            continue
        seen.add(clip.key)
        facts = ClipFacts(clip.id, clip.key, clip.city, clip.country, clip.continent, clip.longitude,
                          clip.latitude, clip.description, clip.title)
        seconds = clip.duration_s or clip.mp3seconds
        status = clip_audio(clip.key, clip.audio_path, roots.get(clip.dataset_id, []))
        digest = None
        problem = None
        if status.ok and status.path is not None and clip.content_hash:
            digest = clip.content_hash  # the store's hash; the worker checks it against the bytes it sends
        elif status.ok and status.path is not None:
            try:
                digest = _file_sha256(status.path)
            except OSError as exc:
                problem = f"cannot read the recording {status.path} ({exc.strerror or exc})"
        else:
            problem = status.message or f"clip {clip.key} has no audio"
        for sample in range(options.samples):
            if digest is None:
                item = AlmItem(facts, sample, None, seconds, None, None, problem)
                no_audio.append(item)
                continue
            fp = fingerprint(options.provider, options.api_model_id, prompt.version, digest, opts, options.seed,
                             gpu_batch=options.gpu_batch)
            item = AlmItem(facts, sample, status.path, seconds, fp, f"{fp}:{sample}", digest=digest)
            if not options.force and run is not None and f"{run.id}:{item.cache_key}" in stored_keys:
                cached.append(item)
            else:
                items.append(item)
    return AlmPlan(items, cached, no_audio, run.id if run is not None else None, entry, settings,
                 config.price(options.api_model_id), prompt)


def dry_run(store: Store, options: AlmRunOptions, *, config: AlmConfig | None = None) -> Estimate:
    """Tokens and cost of the run offline (durations and the price table); nothing is sent or written.

    Clips without audio are priced too (they would fail until their recording is linked) and
    counted in ``no_audio``.
    """
    config = config or load_alm_config(write_defaults=False)
    plan = plan_run(store, options, config)
    estimate = Estimate(model=options.model, provider=options.provider, api_model=options.api_model_id,
                        prompt_version=plan.prompt.version, clips=len({i.clip.key for i in plan.items + plan.cached
                                                                       + plan.no_audio}),
                        samples=options.samples, skipped_cached=len(plan.cached), no_audio=len(plan.no_audio),
                        gpu_batch=gpu_batch_of(options))
    durations = [item.seconds for item in plan.items + plan.no_audio]
    estimate_requests(estimate, durations, plan.prompt.text, plan.entry, plan.price, plan.settings.batch_discount)
    if plan.price is None:
        estimate.notes.append(f"no price for {options.api_model_id!r} in {config.path}: cost unknown")
    if plan.no_audio:
        estimate.notes.append(f"{len(plan.no_audio)} request(s) are for clips without audio: priced, but they "
                              "fail until the recordings are linked (`aglw media link`)")
    return estimate
