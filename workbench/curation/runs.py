"""Stored curation runs read back: their results' shape, the runs, one run's clips and flags, diffs.

:mod:`workbench.curation.service` fits and stores a run; this module reads stored runs back
(the cockpit, selection, export, the Hugging Face export, the review window's quality flags,
the sensitivity study). "The latest run" is :func:`workbench.project.latest_curation_run_id`'s
answer, asked here, never re-derived. Callers get plain dataclasses, never ORM rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import case, func, select

from storage import Store
from storage.models import Clip, CurationCategoryResult, CurationClipResult, CurationRun
from workbench.curation import model
from workbench.curation.model import RunDiff
from workbench.errors import AglwError

DIFF_TOP_MOVES = 20


@dataclass(frozen=True)
class CategoryResult:
    id: str
    name: str | None
    a: float
    a_bar: float
    support: int
    fitted_polarity: str
    polarity: str
    overridden: bool


@dataclass(frozen=True)
class ClipResult:
    clip_id: int
    key: str
    localizability: float
    percentile: float
    candidate: bool
    quality_flags: list[dict[str, Any]] = field(default_factory=list)
@dataclass
class FitResult:
    """One fit (stored or preview). ``run_id`` is None for a preview."""

    run_id: int | None
    parameters: dict[str, Any]
    alm_model: str
    input_fingerprint: str
    categories: list[CategoryResult]
    clips: list[ClipResult]
    diff: RunDiff | None
    summary: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The `aglw fit --json` contract: run_id, parameters, categories, clips, diff (+ extras)."""
        return {
            "run_id": self.run_id,
            "alm_model": self.alm_model,
            "input_fingerprint": self.input_fingerprint,
            "parameters": self.parameters,
            "categories": [
                {
                    "id": c.id, "name": c.name, "a": c.a, "a_bar": c.a_bar, "support": c.support,
                    "polarity": c.polarity, "fitted_polarity": c.fitted_polarity, "overridden": c.overridden,
                }
                for c in self.categories
            ],
            "clips": [
                {
                    "key": c.key, "localizability": c.localizability, "percentile": c.percentile,
                    "candidate": c.candidate, "quality_flags": c.quality_flags,
                }
                for c in self.clips
            ],
            "diff": self.diff.to_dict() if self.diff is not None else None,
            "summary": self.summary,
        }


@dataclass(frozen=True)
class RunInfo:
    id: int
    created_at: datetime
    alm_run_id: int | None
    input_fingerprint: str
    parameters: dict[str, Any]
    summary: dict[str, Any]
    # counted from the run's stored clip rows (a run another tool stored may have a shorter summary)
    n_candidates: int = 0
    n_clips: int = 0


# --------------------------------------------------------------------------- reading back


def _latest_run_id(store: Store, before: int | None = None) -> int | None:
    from workbench.project import latest_curation_run_id

    with store.session() as s:
        return latest_curation_run_id(s, before=before)


def _load_for_diff(store: Store, run_id: int) -> tuple[pd.Series, pd.DataFrame]:
    with store.session() as s:
        conn = s.connection()
        categories = conn.execute(
            select(CurationCategoryResult.category_id, CurationCategoryResult.polarity).where(
                CurationCategoryResult.run_id == run_id
            )
        ).all()
        clips = conn.execute(
            select(CurationClipResult.clip_id, CurationClipResult.localizability, CurationClipResult.candidate).where(
                CurationClipResult.run_id == run_id
            )
        ).all()
    polarity = pd.Series({c: p for c, p in categories}, dtype=object)
    frame = pd.DataFrame(clips, columns=["clip", "localizability", "candidate"]).set_index("clip")
    return polarity, frame


def _diff_with_keys(store: Store, diff: RunDiff) -> RunDiff:
    ids = {*diff.entered, *diff.left, *(m.clip for m in diff.largest_moves)}
    if not ids:
        return diff
    with store.session() as s:
        keys = dict(s.connection().execute(select(Clip.id, Clip.key).where(Clip.id.in_([int(i) for i in ids]))).all())
    return RunDiff(
        polarity_changes=diff.polarity_changes,
        entered=sorted(keys[i] for i in diff.entered),
        left=sorted(keys[i] for i in diff.left),
        largest_moves=[model.ScoreMove(keys[m.clip], m.old, m.new) for m in diff.largest_moves],
        base_run_id=diff.base_run_id,
    )


def diff_against_latest(store: Store, polarity: pd.Series, clips: pd.DataFrame) -> RunDiff | None:
    """What a new fit (category polarity; per-clip ``localizability`` and ``candidate``, indexed
    by clip id) changes from the latest stored run; None when no run is stored."""
    previous = _latest_run_id(store)
    if previous is None:
        return None
    old_polarity, old_clips = _load_for_diff(store, previous)
    diff = model.diff_runs(old_polarity, old_clips, polarity, clips, top=DIFF_TOP_MOVES)
    diff.base_run_id = previous
    return _diff_with_keys(store, diff)


def run_diff(store: Store, run_a: int, run_b: int, *, top: int = DIFF_TOP_MOVES) -> RunDiff:
    """What changed from stored run ``run_a`` to stored run ``run_b`` (clips named by key)."""
    for run_id in (run_a, run_b):
        with store.session() as s:
            if s.get(CurationRun, run_id) is None:
                raise AglwError(f"no curation run {run_id}; `aglw fit` lists stored runs")
    old_polarity, old_clips = _load_for_diff(store, run_a)
    new_polarity, new_clips = _load_for_diff(store, run_b)
    diff = model.diff_runs(old_polarity, old_clips, new_polarity, new_clips, top=top)
    diff.base_run_id = run_a
    return _diff_with_keys(store, diff)


def list_runs(store: Store) -> list[RunInfo]:
    """Every stored curation run, oldest first, with its candidates and clips counted from its stored clip rows."""
    with store.session() as s:
        runs = s.scalars(select(CurationRun).order_by(CurationRun.id)).all()
        counts = {
            int(run_id): (int(candidates or 0), int(clips))
            for run_id, candidates, clips in s.execute(
                select(CurationClipResult.run_id,
                       func.sum(case((CurationClipResult.candidate, 1), else_=0)), func.count())
                .group_by(CurationClipResult.run_id)
            )
        }
    return [
        RunInfo(
            id=int(r.id), created_at=r.created_at, alm_run_id=r.alm_run_id, input_fingerprint=r.input_fingerprint,
            parameters=dict(r.parameters or {}), summary=dict(r.summary or {}),
            n_candidates=counts.get(int(r.id), (0, 0))[0], n_clips=counts.get(int(r.id), (0, 0))[1],
        )
        for r in runs
    ]


def latest_run_id(store: Store) -> int | None:
    """The id of the most recent stored run, or None."""
    return _latest_run_id(store)


def load_run_clips(store: Store, run_id: int) -> pd.DataFrame:
    """A stored run's per-clip results with clip metadata (plain DataFrame indexed by clip id).

    Columns: ``key``, ``localizability``, ``percentile``, ``candidate``,
    ``quality_flags`` plus every AGL1K field of the clip.
    """
    with store.session() as s:
        if s.get(CurationRun, run_id) is None:
            raise AglwError(f"no curation run {run_id}; run `aglw fit` first")
        rows = s.connection().execute(
            select(
                CurationClipResult.clip_id, Clip.key, CurationClipResult.localizability,
                CurationClipResult.percentile, CurationClipResult.candidate, CurationClipResult.quality_flags,
                Clip.continent, Clip.human_sounds,
            )
            .join(Clip, Clip.id == CurationClipResult.clip_id)
            .where(CurationClipResult.run_id == run_id)
        ).all()
    frame = pd.DataFrame(
        rows,
        columns=["clip", "key", "localizability", "percentile", "candidate", "quality_flags", "continent", "human_sounds"],
    ).set_index("clip")
    frame["candidate"] = frame["candidate"].astype(bool)
    frame["localizability"] = frame["localizability"].astype(float)
    return frame


def run_info(store: Store, run_id: int) -> RunInfo:
    """One stored run's parameters and summary."""
    with store.session() as s:
        r = s.get(CurationRun, run_id)
        if r is None:
            raise AglwError(f"no curation run {run_id}; run `aglw fit` first")
        return RunInfo(
            id=int(r.id), created_at=r.created_at, alm_run_id=r.alm_run_id, input_fingerprint=r.input_fingerprint,
            parameters=dict(r.parameters or {}), summary=dict(r.summary or {}),
        )


def stored_fit(store: Store, run_id: int | None = None) -> FitResult | None:
    """A stored run (default: the latest) read back as the :class:`FitResult` its fit returned.

    Its ``diff`` is against the stored run before it (None for the first run), so the flips
    it shows are those between two real runs.  None when no run is stored.
    """
    run_id = run_id if run_id is not None else _latest_run_id(store)
    if run_id is None:
        return None
    info = run_info(store, run_id)
    with store.session() as s:
        rows = s.scalars(
            select(CurationCategoryResult).where(CurationCategoryResult.run_id == run_id).order_by(CurationCategoryResult.id)
        ).all()
        categories = [
            CategoryResult(
                id=r.category_id, name=r.name, a=float(r.a), a_bar=float(r.a_bar), support=int(r.support),
                fitted_polarity=r.fitted_polarity, polarity=r.polarity, overridden=bool(r.overridden),
            )
            for r in rows
        ]
    frame = load_run_clips(store, run_id).sort_index()
    clips = [
        ClipResult(
            clip_id=int(clip), key=str(row.key), localizability=float(row.localizability),
            percentile=float(row.percentile), candidate=bool(row.candidate), quality_flags=list(row.quality_flags or []),
        )
        for clip, row in frame.iterrows()
    ]
    previous = _latest_run_id(store, before=run_id)
    return FitResult(
        run_id=run_id, parameters=info.parameters, alm_model=str(info.parameters.get("alm_model") or ""),
        input_fingerprint=info.input_fingerprint, categories=categories, clips=clips,
        diff=run_diff(store, previous, run_id) if previous is not None else None, summary=info.summary,
    )


__all__ = [
    "DIFF_TOP_MOVES", "CategoryResult", "ClipResult", "FitResult", "RunInfo", "diff_against_latest",
    "latest_run_id", "list_runs", "load_run_clips", "run_diff", "run_info", "stored_fit",
]
