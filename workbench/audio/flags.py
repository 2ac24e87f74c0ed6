"""A clip's quality flags now: the one answer (issue 40).

`clips show`, the review window (Judgment panel, clip browser), `select`, `fit`, the Hugging Face
export and `quality overrule` ask :func:`quality_flags_now`; none computes a flag itself. The rule
is :func:`workbench.audio.quality.pool_flags` over the stored metrics (``clip_quality``): the
absolute filters per clip, and ``low_complexity`` relative to the pool, the project's analysed
clips with a measured ACI, raised only in a pool of at least ``MIN_RELATIVE_POOL`` of them (the
output says why it was not). A flag carries ``flag``, ``metric``, ``value``, ``threshold`` and,
for the pool-relative one, ``pool``.

Reads the Core tables, on a Store, a Session or a Connection alike (``clips show`` loads neither
the ORM nor numpy).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select

from storage import tables as T
from workbench.audio.quality import (
    DEFAULT_THRESHOLDS,
    MIN_RELATIVE_POOL,
    QualityThresholds,
    clip_flags,
    describe_flag,
    relative_pool,
)

PROJECT_POOL = "analysed clips of the project with a measured ACI"
_LARGEST = 1.0e308  # an ACI beyond it is infinite: not measured


@dataclass(frozen=True)
class QualityFlagsNow:
    """Every analysed clip's quality flags, and the pool the relative one was computed on."""

    flags: dict[int, list[dict[str, Any]]]
    pool: dict[str, Any]
    measured: frozenset[int] = field(default_factory=frozenset)  # clips with a stored analysis

    def of(self, clip_id: int) -> list[dict[str, Any]]:
        """The flags of one clip (empty when it has none or was never analysed)."""
        return [dict(flag) for flag in self.flags.get(int(clip_id), [])]

    def names(self, clip_id: int) -> tuple[str, ...]:
        """The flag names of one clip, in the rule's order."""
        return tuple(flag["flag"] for flag in self.flags.get(int(clip_id), []))

    @property
    def why_not(self) -> str | None:
        """Why ``low_complexity`` was not raised on this pool (None when it was)."""
        return self.pool.get("why_not")


def quality_flags_now(source: Any, thresholds: QualityThresholds = DEFAULT_THRESHOLDS, *,
                      clip_ids: Iterable[int] | None = None) -> QualityFlagsNow:
    """The quality flags every analysed clip (or each of ``clip_ids``) has now (see the module notes).

    Parameters
    ----------
    source
        A Store (read on its Core connection), or a Session or Connection already open.
    thresholds
        The cut-offs (a fit passes its parameters'; everyone else the defaults).
    clip_ids
        Only these clips (the pool is still the whole project's): the review window asks for the
        clip it shows, or the rows an edit changed, and reads two ACIs of the pool, not all.
    """
    if hasattr(source, "read"):
        with source.read() as connection:
            return quality_flags_now(connection, thresholds, clip_ids=clip_ids)
    q = T.clip_quality.c
    # The pool: clips with a finite ACI (SQLite stores NaN as NULL), the cut-off from two of them.
    finite = q.aci.is_not(None) & q.aci.between(-_LARGEST, _LARGEST)
    n_measured = int(source.execute(select(func.count(q.aci)).where(finite)).scalar() or 0)

    def value_at(k: int) -> float:
        return float(source.execute(select(q.aci).where(finite).order_by(q.aci).limit(1).offset(k)).scalar())

    pool = relative_pool(n_measured, value_at, thresholds, what=PROJECT_POOL)
    query = select(q.clip_id, q.rms_dbfs, q.spectral_flatness, q.clipping_ratio, q.aci)
    wanted = None if clip_ids is None else sorted({int(c) for c in clip_ids})
    found = []
    for part in ([None] if wanted is None else [wanted[i:i + 500] for i in range(0, len(wanted), 500)]):
        found.extend(source.execute(query if part is None else query.where(q.clip_id.in_(part))).all())
    flags: dict[int, list[dict[str, Any]]] = {}
    for clip, rms, flatness, clipping, aci in found:
        # NULL rms: digital silence (write_clip_analysis stores -inf so)
        raised = clip_flags((float("-inf") if rms is None else rms, flatness, clipping, aci), pool, thresholds)
        if raised:
            flags[int(clip)] = raised
    return QualityFlagsNow(flags=flags, pool=pool, measured=frozenset(int(row[0]) for row in found))


def clip_quality_flags_now(source: Any, clip_id: int,
                           thresholds: QualityThresholds = DEFAULT_THRESHOLDS) -> list[dict[str, Any]]:
    """One clip's quality flags now (``quality overrule`` checks a named flag against these)."""
    return quality_flags_now(source, thresholds, clip_ids=[clip_id]).of(clip_id)


__all__ = ["MIN_RELATIVE_POOL", "PROJECT_POOL", "QualityFlagsNow", "clip_quality_flags_now", "describe_flag",
           "quality_flags_now"]
