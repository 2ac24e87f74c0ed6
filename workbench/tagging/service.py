"""Tagging the clips of a project: batch, resumable, decoding in parallel threads.

What is stored per run (a :class:`storage.models.TaggerRun` with the model name and the
checkpoint's SHA-256):

* ``Tag`` rows: every class whose clip probability is at least :data:`TAG_FLOOR`, and always
  the :data:`TAG_MIN_TOP` most probable classes, so every tagged clip has tags;
* ``TagTimeline`` rows: the per-second probabilities (1 s hop) of the :data:`TIMELINE_TOP_K`
  most probable classes of the clip;
* a ``TagStatus`` row per clip (``done`` or ``failed`` with the error), written in the same
  transaction as the clip's tags, so an interrupted run loses at most the clip in flight.

Running again with the same model, checkpoint and parameters resumes the latest such run:
clips marked ``done`` are skipped, failed ones are retried. A clip whose audio is missing or
unreadable is marked ``failed`` and the run goes on. Tagging every clip leaves out the clips
whose audio was never linked (``aglw media link``) and names them in the summary; a clip
asked for by key without audio is a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol
from pathlib import Path

import numpy as np
from sqlmodel import delete, select

from storage import Store
from storage.models import Clip, MediaRoot, Tag, TaggerRun, TagStatus, TagTimeline, utcnow
from workbench.errors import AglwError, InputError
from workbench.tagging.assets import LoadedCheckpoint
from workbench.tagging.decode import decode_for_tagging
from workbench.tagging.inference import DEFAULT_GPU_BATCH_SIZE, AudioTagger, TagResult
from workbench.tagging.ontology import AudioSetClass
from workbench.tagging.precision import DEFAULT_PRECISION, check_precision
from workbench.tasks import TaskCancelled, TaskContext

log = logging.getLogger(__name__)

TAG_FLOOR = 0.01
TAG_MIN_TOP = 10
TIMELINE_TOP_K = 10


@dataclass(frozen=True)
class ClipFailure:
    key: str
    error: str


@dataclass
class TagRunSummary:
    """Outcome of one ``tag_clips`` call (plain data)."""

    run_id: int
    model: str
    checkpoint_sha256: str
    device: str
    n_selected: int
    precision: str = DEFAULT_PRECISION
    n_tagged: int = 0
    n_skipped: int = 0
    failures: list[ClipFailure] = field(default_factory=list)
    resumed: bool = False
    # Clips of an "all clips" run whose recording was never linked: not attempted, not failed
    # (a pool where 2 of 1,444 recordings are at hand is normal); named, so nobody is misled.
    no_audio: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _ClipJob:
    clip_id: int
    key: str
    audio_path: str | None
    media_roots: tuple[Path, ...]
    content_hash: str | None


def _resolve(job: _ClipJob) -> Path:
    from workbench.media import clip_audio

    status = clip_audio(job.key, job.audio_path, job.media_roots)
    if not status.ok or status.path is None:
        raise InputError(status.message or f"clip {job.key}: no audio")
    return status.path


def _decode(job: _ClipJob) -> np.ndarray:
    return decode_for_tagging(_resolve(job))


def _select_jobs(store: Store, clip_keys: Sequence[str] | None) -> list[_ClipJob]:
    with store.session() as session:
        roots: dict[int | None, list[Path]] = {}
        for root in session.exec(select(MediaRoot)).all():
            roots.setdefault(root.dataset_id, []).append(Path(root.path))
        query = select(Clip).order_by(Clip.id)
        if clip_keys:
            query = query.where(Clip.key.in_(list(clip_keys)))
        clips = session.exec(query).all()
    if clip_keys:
        found = {c.key for c in clips}
        unknown = [k for k in clip_keys if k not in found]
        if unknown:
            raise InputError(f"--clips: unknown clip key(s) {', '.join(unknown[:5])}; list clips with `aglw` import output")
    return [
        _ClipJob(
            clip_id=c.id,
            key=c.key,
            audio_path=c.audio_path,
            media_roots=tuple(roots.get(c.dataset_id, []) + roots.get(None, [])),
            content_hash=c.content_hash,
        )
        for c in clips
    ]


def _open_run(store: Store, checkpoint: LoadedCheckpoint, device: str, parameters: dict, fresh: bool) -> tuple[int, bool]:
    with store.write() as session:
        if not fresh:
            previous = session.exec(
                select(TaggerRun)
                .where(TaggerRun.model_name == checkpoint.name, TaggerRun.checkpoint_sha256 == checkpoint.sha256)
                .order_by(TaggerRun.id.desc())
            ).all()
            for run in previous:
                if run.parameters == parameters:
                    run.status = "running"
                    run.device = device
                    run.finished_at = None
                    session.add(run)
                    return int(run.id), True
        run = TaggerRun(
            model_name=checkpoint.name,
            checkpoint_sha256=checkpoint.sha256,
            device=device,
            parameters=parameters,
        )
        session.add(run)
        session.flush()
        return int(run.id), False


def _prefetch(jobs: Sequence[_ClipJob], workers: int) -> Iterator[tuple[_ClipJob, Future]]:
    """Decode ahead in ``workers`` threads while the caller runs the model (bounded queue)."""
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aglw-decode") as pool:
        pending: list[tuple[_ClipJob, Future]] = []
        upcoming = iter(jobs)
        for job in upcoming:
            pending.append((job, pool.submit(_decode, job)))
            if len(pending) >= 2 * workers:
                break
        while pending:
            job, future = pending.pop(0)
            following = next(upcoming, None)
            if following is not None:
                pending.append((following, pool.submit(_decode, following)))
            yield job, future


Outcome = tuple[_ClipJob, "TagResult | None", str]


def _local_outcomes(jobs: Sequence[_ClipJob], tagger: AudioTagger, workers: int) -> Iterator[Outcome]:
    """Decode ahead in threads, tag here; (job, result, '') or (job, None, error) per clip."""
    for job, decoded in _prefetch(jobs, workers):
        try:
            yield job, tagger.tag(decoded.result()), ""
        except (AglwError, ValueError) as exc:
            yield job, None, str(exc)


def _batched_local_outcomes(jobs: Sequence[_ClipJob], tagger: AudioTagger, workers: int) -> Iterator[Outcome]:
    """Decode in processes, windows of many clips per pass (:mod:`workbench.tagging.pipeline`)."""
    from workbench.tagging.pipeline import batched_outcomes

    resolved: list[tuple[_ClipJob, str]] = []
    for job in jobs:
        try:
            resolved.append((job, str(_resolve(job))))
        except AglwError as exc:
            yield job, None, str(exc)
    yield from batched_outcomes(resolved, tagger, workers=workers)


class RemoteTagging(Protocol):
    """Where :func:`tag_clips` runs the model when it does not run in this process.

    The command line chooses it and passes it down (``--engine ray``:
    :class:`workbench.pool.tagging.RayTagging`); tagging itself never branches on an engine name.
    """

    name: str

    def connect(self) -> None:
        """Join the workers (the first thing a wrong address makes the user hear about)."""

    def outcomes(self, items: Sequence[tuple[str, str]], checkpoint: LoadedCheckpoint, *, device: str,
                 batch_size: int, precision: str, batched: bool) -> Iterator[tuple[str, TagResult | None, str]]:
        """``(key, result, '')`` or ``(key, None, error)`` for each ``(key, recording path)``."""


def _remote_outcomes(jobs: Sequence[_ClipJob], remote: RemoteTagging, checkpoint: LoadedCheckpoint, *, device: str,
                     batch_size: int, precision: str, batched: bool) -> Iterator[Outcome]:
    """The same outcomes from the remote workers: recordings resolved here, by the one media rule."""
    resolved: list[tuple[_ClipJob, Path]] = []
    for job in jobs:
        try:
            resolved.append((job, _resolve(job)))
        except AglwError as exc:
            yield job, None, str(exc)
    by_key = {job.key: job for job, _ in resolved}
    for key, result, error in remote.outcomes([(job.key, str(path)) for job, path in resolved], checkpoint,
                                              device=device, batch_size=batch_size, precision=precision,
                                              batched=batched):
        yield by_key[key], result, error


def _store_result(
    store: Store, run_id: int, job: _ClipJob, result: TagResult, classes: Sequence[AudioSetClass]
) -> None:
    top_tags = set(result.top(TAG_MIN_TOP))
    timeline_classes = result.top(TIMELINE_TOP_K)
    with store.write() as session:
        _clear_clip(session, run_id, job.clip_id)
        for index, probability in enumerate(result.probabilities.tolist()):
            if probability >= TAG_FLOOR or index in top_tags:
                session.add(
                    Tag(
                        tagger_run_id=run_id,
                        clip_id=job.clip_id,
                        class_index=index,
                        audioset_id=classes[index].id,
                        probability=float(probability),
                    )
                )
        if result.timeline is not None:
            for index in timeline_classes:
                session.add(
                    TagTimeline(
                        tagger_run_id=run_id,
                        clip_id=job.clip_id,
                        class_index=index,
                        audioset_id=classes[index].id,
                        hop_s=result.timeline_hop_s,
                        values=[float(v) for v in result.timeline[:, index]],
                    )
                )
        session.add(TagStatus(tagger_run_id=run_id, clip_id=job.clip_id, status="done", content_hash=job.content_hash))


def _clear_clip(session, run_id: int, clip_id: int) -> None:  # type: ignore[no-untyped-def]
    for table in (Tag, TagTimeline, TagStatus):
        session.exec(delete(table).where(table.tagger_run_id == run_id, table.clip_id == clip_id))


def _store_failure(store: Store, run_id: int, job: _ClipJob, error: str) -> None:
    with store.write() as session:
        _clear_clip(session, run_id, job.clip_id)
        session.add(TagStatus(tagger_run_id=run_id, clip_id=job.clip_id, status="failed", error=error))


def tag_clips(
    store: Store,
    checkpoint: LoadedCheckpoint,
    classes: Sequence[AudioSetClass],
    *,
    clip_keys: Sequence[str] | None = None,
    device: str = "cpu",
    workers: int = 2,
    batch_size: int | None = None,
    fresh_run: bool = False,
    task: TaskContext | None = None,
    remote: RemoteTagging | None = None,
    precision: str = DEFAULT_PRECISION,
    batched: bool | None = None,
) -> TagRunSummary:
    """Tag the project's clips (all, or those keys) and store the results run by run.

    Parameters
    ----------
    store
        The project.
    checkpoint
        A verified model (see :func:`workbench.tagging.assets.load_named_checkpoint`).
    classes
        The 527 AudioSet classes in index order (from the ontology).
    clip_keys
        Clip keys to tag; None for every clip.
    device
        ``cpu`` or ``cuda``; recorded with the run.
    workers
        Decoding threads (per-clip path) or processes (batched path).
    batch_size
        Windows per forward pass (default: 16, capped by the cache on CPU; 256 on a GPU).
    precision
        ``full`` (IEEE float32 on every device, the conformance promise) or ``fast`` (TF32 and
        bf16 autocast on CUDA; :data:`workbench.tagging.precision.FAST_TOLERANCE`). Part of the
        run's parameters: a run resumes only a run of the same precision.
    batched
        Windows of many clips per pass, decoding in processes (:mod:`workbench.tagging.pipeline`);
        the same rows as one clip at a time. Default: on CUDA (and on Ray actors with a GPU).
    fresh_run
        Start a new run instead of resuming the latest matching one.
    remote
        None: decoding threads and the model in this process. Else where decoding and the model
        run instead (``--engine ray``: :class:`workbench.pool.tagging.RayTagging`, ``workers``
        actors, one model load each, a GPU each when ``device`` is cuda). Either way this process
        stores every result, one clip per transaction, so the rows and the resume rules are the
        same; a run started on one engine is resumed by the other.
    task
        Progress and cancel: the total is the clips selected (those done before count as
        done at once); each clip tagged or failed is one item. A cancel stops after the clip
        in hand is stored; the run is marked ``cancelled`` and a later call resumes it.

    Returns
    -------
    TagRunSummary
        Counts and the failed clips with their errors.
    """
    if len(classes) != checkpoint.model.classifier[-1].out_features:
        raise AglwError(f"the class index has {len(classes)} classes but the model outputs {checkpoint.model.classifier[-1].out_features}")
    if workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    try:
        check_precision(precision)
    except ValueError as exc:
        raise InputError(f"--precision: {exc}") from None
    on_gpu = device.startswith("cuda")
    batched = on_gpu if batched is None else batched
    if batch_size is None:
        batch_size = DEFAULT_GPU_BATCH_SIZE if on_gpu else 16
    if batch_size < 1:
        raise InputError(f"--batch-size must be at least 1, got {batch_size}")
    if remote is not None:
        remote.connect()  # before the run is opened: a wrong address is the first thing the user hears about
    jobs = _select_jobs(store, clip_keys)
    unlinked: list[str] = []
    if not clip_keys:
        unlinked = [job.key for job in jobs if not job.audio_path]
        jobs = [job for job in jobs if job.audio_path]
    # The precision changes the numbers, so it keys the run (a fast run never resumes a full one);
    # the device and the batching do not (same numbers up to float rounding).
    parameters = {"arch": checkpoint.arch, "tag_floor": TAG_FLOOR, "tag_min_top": TAG_MIN_TOP,
                  "timeline_top_k": TIMELINE_TOP_K, "precision": precision}
    run_id, resumed = _open_run(store, checkpoint, device, parameters, fresh_run)
    summary = TagRunSummary(
        run_id=run_id, model=checkpoint.name, checkpoint_sha256=checkpoint.sha256, device=device,
        n_selected=len(jobs), resumed=resumed, no_audio=unlinked, precision=precision,
    )
    with store.session() as session:
        done = set(
            session.exec(
                select(TagStatus.clip_id).where(TagStatus.tagger_run_id == run_id, TagStatus.status == "done")
            ).all()
        )
    todo = [job for job in jobs if job.clip_id not in done]
    summary.n_skipped = len(jobs) - len(todo)
    task = task or TaskContext()
    task.set_total(len(jobs))
    if summary.n_skipped:
        task.advance(summary.n_skipped)
    tagger = (AudioTagger(checkpoint.model, device=device, batch_size=batch_size, precision=precision)
              if remote is None else None)
    final_status = "failed"
    outcomes: Iterator[Outcome] | None = None
    try:
        task.check_cancel()
        if tagger is not None and batched:
            outcomes = _batched_local_outcomes(todo, tagger, workers)
        elif tagger is not None:
            outcomes = _local_outcomes(todo, tagger, workers)
        else:
            assert remote is not None
            outcomes = _remote_outcomes(todo, remote, checkpoint, device=device, batch_size=batch_size,
                                        precision=precision, batched=batched)
        for job, result, error in outcomes:
            if result is None:
                message = error
                # One line per clip would bury the summary (4,328 lines for a pool): -v shows them.
                log.info("tagging clip %s failed: %s", job.key, message)
                _store_failure(store, run_id, job, message)
                summary.failures.append(ClipFailure(job.key, message))
                task.item_done(job.key, False, message)
            else:
                _store_result(store, run_id, job, result, classes)
                summary.n_tagged += 1
                task.item_done(job.key)
        final_status = "done"
    except (TaskCancelled, KeyboardInterrupt):
        final_status = "cancelled"
        raise
    finally:
        if outcomes is not None:
            outcomes.close()  # type: ignore[attr-defined] - generators: stop decoders, threads and actors now
        if tagger is not None:
            tagger.close()
        with store.write() as session:
            run = session.get(TaggerRun, run_id)
            run.status = final_status
            run.finished_at = utcnow()
            session.add(run)
    return summary
