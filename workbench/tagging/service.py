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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlmodel import delete, select

from storage import Store
from storage.models import Clip, MediaRoot, Tag, TaggerRun, TagStatus, TagTimeline, utcnow
from workbench.audio.loader import load_audio
from workbench.errors import AglwError, InputError
from workbench.tagging.assets import LoadedCheckpoint
from workbench.tagging.inference import AudioTagger, TagResult
from workbench.tagging.ontology import AudioSetClass
from workbench.tagging.preprocess import SAMPLE_RATE

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


def _decode(job: _ClipJob) -> np.ndarray:
    from workbench.media import clip_audio

    status = clip_audio(job.key, job.audio_path, job.media_roots)
    if not status.ok or status.path is None:
        raise InputError(status.message or f"clip {job.key}: no audio")
    path = status.path
    audio = load_audio(path, sample_rate=SAMPLE_RATE, mono=True)
    return audio.samples[:, 0]


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
    batch_size: int = 16,
    fresh_run: bool = False,
    progress: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
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
        ``cpu`` or ``cuda``.
    workers
        Decoding threads.
    batch_size
        Windows per forward pass.
    fresh_run
        Start a new run instead of resuming the latest matching one.
    progress
        Called with 1 after each clip (tagged, failed or skipped).
    on_start
        Called once with the number of clips selected.
    should_cancel
        Checked before each clip; when it returns True the run stops, is marked
        ``cancelled`` and a later call resumes it.

    Returns
    -------
    TagRunSummary
        Counts and the failed clips with their errors.
    """
    if len(classes) != checkpoint.model.classifier[-1].out_features:
        raise AglwError(f"the class index has {len(classes)} classes but the model outputs {checkpoint.model.classifier[-1].out_features}")
    if workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    jobs = _select_jobs(store, clip_keys)
    unlinked: list[str] = []
    if not clip_keys:
        unlinked = [job.key for job in jobs if not job.audio_path]
        jobs = [job for job in jobs if job.audio_path]
    parameters = {"arch": checkpoint.arch, "tag_floor": TAG_FLOOR, "tag_min_top": TAG_MIN_TOP, "timeline_top_k": TIMELINE_TOP_K}
    run_id, resumed = _open_run(store, checkpoint, device, parameters, fresh_run)
    summary = TagRunSummary(
        run_id=run_id, model=checkpoint.name, checkpoint_sha256=checkpoint.sha256, device=device,
        n_selected=len(jobs), resumed=resumed, no_audio=unlinked,
    )
    with store.session() as session:
        done = set(
            session.exec(
                select(TagStatus.clip_id).where(TagStatus.tagger_run_id == run_id, TagStatus.status == "done")
            ).all()
        )
    todo = [job for job in jobs if job.clip_id not in done]
    summary.n_skipped = len(jobs) - len(todo)
    if on_start is not None:
        on_start(len(jobs))
    if progress is not None and summary.n_skipped:
        progress(summary.n_skipped)
    tagger = AudioTagger(checkpoint.model, device=device, batch_size=batch_size)
    final_status = "failed"
    try:
        cancelled = False
        for job, decoded in _prefetch(todo, workers):
            if should_cancel is not None and should_cancel():
                cancelled = True
                break
            try:
                result = tagger.tag(decoded.result())
            except (AglwError, ValueError) as exc:
                message = str(exc)
                # One line per clip would bury the summary (4,328 lines for a pool): -v shows them.
                log.info("tagging clip %s failed: %s", job.key, message)
                _store_failure(store, run_id, job, message)
                summary.failures.append(ClipFailure(job.key, message))
            else:
                _store_result(store, run_id, job, result, classes)
                summary.n_tagged += 1
            if progress is not None:
                progress(1)
        final_status = "cancelled" if cancelled else "done"
    except KeyboardInterrupt:
        final_status = "cancelled"
        raise
    finally:
        tagger.close()
        with store.write() as session:
            run = session.get(TaggerRun, run_id)
            run.status = final_status
            run.finished_at = utcnow()
            session.add(run)
    return summary
