"""Where ALM answers are written and read back: the job row, the answers and the predictions (SQL).

The runner decides what to store; this module is the only one that writes ``alm_run``,
``alm_job`` and ``alm_answer`` rows for a run, so the rules (a clip's prediction holds its newest
answer of sample 0, ``--force`` moves the cache entry, the job's counters move with its answers in
the same transaction) live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlmodel import Session

    from storage import Store


@dataclass(frozen=True)
class AnswerRow:
    """One answer (or failure) to write, as plain values."""

    clip_id: int
    clip_key: str
    sample: int
    fingerprint: str | None
    cache_key: str | None  # the item's cache key; set on the row only for an answer (ok or rejected)
    status: str  # ok | rejected | failed
    reason: str | None
    raw_output: str | None
    parsed: dict[str, Any] | None
    input_tokens: int | None
    output_tokens: int | None
    latency_s: float | None
    cost_usd: float | None
    attempts: int
    audio: dict[str, Any] | None
    prediction: dict[str, Any] | None = None  # the prediction row's values (sample 0 answers)

    @property
    def is_answer(self) -> bool:
        return self.status in ("ok", "rejected") and self.raw_output is not None


def stored_cache_keys(store: Store, run_id: int | None, cache_keys: list[str]) -> set[str]:
    """Which of ``cache_keys`` already hold an answer of run ``run_id``."""
    from sqlalchemy import select

    from storage.models import AlmAnswer

    if run_id is None or not cache_keys:
        return set()
    found: set[str] = set()
    with store.session() as session:
        for start in range(0, len(cache_keys), 500):
            chunk = [f"{run_id}:{key}" for key in cache_keys[start:start + 500]]
            found.update(session.execute(select(AlmAnswer.cache_key).where(AlmAnswer.cache_key.in_(chunk))).scalars())
    return {key.split(":", 1)[1] for key in found}


def open_job(session: Session, *, run_id: int | None, model: str, provider: str, api_model: str, container: str,
             seed: int | None, base_url: str | None, prompt_version: str, options: dict[str, Any], samples: int,
             requested: int, skipped_cached: int) -> tuple[int, int]:
    """Create the model's run (the first time) and a job; runs of it left ``running`` by a killed
    process are marked ``interrupted`` (the caller holds the run's journal lock, so none is alive).

    Returns (run id, job id).
    """
    from sqlalchemy import update

    from storage.models import AlmJob, AlmRun, utcnow
    from workbench.llm.urls import safe_url

    run = session.get(AlmRun, run_id) if run_id is not None else None
    if run is None:
        run = AlmRun(model=model, source_path=f"{provider}:{api_model}", container=container, seed=seed)
        session.add(run)
        session.flush()
    else:
        session.execute(update(AlmJob).where(AlmJob.alm_run_id == run.id, AlmJob.status == "running")
                        .values(status="interrupted", finished_at=utcnow()))
    job = AlmJob(alm_run_id=run.id, provider=provider, api_model=api_model, base_url=safe_url(base_url),
                 prompt_version=prompt_version, options=options, seed=seed, samples=samples, requested=requested,
                 skipped_cached=skipped_cached)
    session.add(job)
    session.flush()
    return int(run.id), int(job.id)  # type: ignore[arg-type]


def mark_interrupted(store: Store, model: str) -> None:
    """Mark the jobs of ``model`` left ``running`` by a killed process as ``interrupted``."""
    from sqlalchemy import select, update

    from storage.models import AlmJob, AlmRun, utcnow

    with store.session() as session:
        stale = list(session.execute(select(AlmJob.id).join(AlmRun, AlmRun.id == AlmJob.alm_run_id).where(
            AlmRun.model == model, AlmJob.status == "running")).scalars())
    if not stale:
        return  # the usual case: nothing to write
    with store.write() as session:
        session.execute(update(AlmJob).where(AlmJob.id.in_(stale), AlmJob.status == "running")
                        .values(status="interrupted", finished_at=utcnow()))


@cache
def _write_statements() -> dict[str, Any]:
    """The statements of :func:`write_answers`, built once with bound parameters: building and
    compiling them anew for every stored group cost more CPU than executing them (P13)."""
    from sqlalchemy import bindparam, insert, select, update

    from storage.models import AlmAnswer, AlmJob, Prediction

    return {
        "release_cache": update(AlmAnswer).where(AlmAnswer.cache_key.in_(bindparam("keys", expanding=True)))
        .values(cache_key=None),
        "predictions": select(Prediction.question_id, Prediction.id).where(
            Prediction.alm_run_id == bindparam("run"), Prediction.question_id.in_(bindparam("keys", expanding=True))),
        "unlink": update(AlmAnswer).where(AlmAnswer.prediction_id == bindparam("prediction"))
        .values(prediction_id=None),
        "insert_predictions": insert(Prediction.__table__),
        "insert_answers": insert(AlmAnswer.__table__),
        # The counters' values are the SET clause's parameters (named after their columns).
        "job": update(AlmJob.__table__).where(AlmJob.__table__.c.id == bindparam("job_row")),
    }


def write_answers(session: Session, *, run_id: int, job_id: int, rows: list[AnswerRow], force: bool,
                  totals: dict[str, Any]) -> None:
    """Write a group of answers, the predictions of their sample-0 answers and the job's counters."""
    from sqlalchemy import update

    from storage.models import Prediction, utcnow

    sql = _write_statements()
    answered = [row for row in rows if row.is_answer]
    predictions = {row.clip_key: row.prediction for row in answered if row.sample == 0 and row.prediction is not None}
    now = utcnow()
    # Core statements on the transaction's connection: the ORM's execute path costs several times
    # more CPU per statement, paid once per stored group on the engine's one storing thread (P13).
    conn = session.connection()
    if answered and force:
        # --force: the new answer takes over the cache entry (the old one stays, superseded).
        conn.execute(sql["release_cache"], {"keys": [f"{run_id}:{row.cache_key}" for row in answered]})
    ids: dict[str, int] = {}
    if predictions:
        keys = {"run": run_id, "keys": list(predictions)}
        existing = dict(conn.execute(sql["predictions"], keys).all())
        table = Prediction.__table__
        for key, prediction_id in existing.items():
            # The clip's prediction now holds the new answer; earlier answers no longer back it.
            conn.execute(sql["unlink"], {"prediction": prediction_id})
            conn.execute(update(table).where(table.c.id == prediction_id).values(**predictions[key]))
        new = [values for key, values in predictions.items() if key not in existing]
        if new:
            conn.execute(sql["insert_predictions"], new)
        ids = dict(conn.execute(sql["predictions"], keys).all())
    conn.execute(sql["insert_answers"], [{
        "alm_job_id": job_id, "alm_run_id": run_id, "clip_id": row.clip_id, "clip_key": row.clip_key,
        "fingerprint": row.fingerprint, "sample": row.sample,
        "cache_key": f"{run_id}:{row.cache_key}" if row.is_answer else None, "status": row.status,
        "reason": row.reason if row.status != "ok" else None, "raw_output": row.raw_output, "parsed": row.parsed,
        "input_tokens": row.input_tokens, "output_tokens": row.output_tokens, "latency_s": row.latency_s,
        "cost_usd": row.cost_usd, "attempts": row.attempts, "audio": row.audio, "created_at": now,
        "prediction_id": ids.get(row.clip_key) if row.is_answer and row.sample == 0 else None,
    } for row in rows])
    conn.execute(sql["job"], {**totals, "job_row": job_id})


def close_job(store: Store, job_id: int, status: str, **totals: Any) -> None:
    """End a job: its status, the time, and its final counters."""
    from sqlalchemy import update

    from storage.models import AlmJob, utcnow

    with store.write() as session:
        session.execute(update(AlmJob).where(AlmJob.id == job_id).values(status=status, finished_at=utcnow(), **totals))


def update_job(store: Store, job_id: int, **values: Any) -> None:
    """Change a job's columns (a batch's state and request map)."""
    from sqlalchemy import update

    from storage.models import AlmJob

    with store.write() as session:
        session.execute(update(AlmJob).where(AlmJob.id == job_id).values(**values))


def job_answer_samples(store: Store, job_id: int) -> set[tuple[str, int]]:
    """The (clip key, sample) pairs job ``job_id`` holds an answer or a failure for."""
    from sqlalchemy import select

    from storage.models import AlmAnswer

    with store.session() as session:
        return {(key, int(sample)) for key, sample in session.execute(
            select(AlmAnswer.clip_key, AlmAnswer.sample).where(AlmAnswer.alm_job_id == job_id)).all()}


def submitted_jobs(store: Store, model: str) -> list[tuple[Any, int]]:
    """The jobs of ``model`` whose batch was submitted and not yet collected, with their run id."""
    from sqlalchemy import select

    from storage.models import AlmJob, AlmRun

    with store.session() as session:
        return [(job, run_id) for job, run_id in session.execute(
            select(AlmJob, AlmRun.id).join(AlmRun, AlmRun.id == AlmJob.alm_run_id).where(
                AlmRun.model == model, AlmJob.status == "submitted")).all()]
