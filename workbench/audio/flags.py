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

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from storage import tables as T
from workbench.audio.quality import DEFAULT_THRESHOLDS, MIN_RELATIVE_POOL, QualityThresholds, describe_flag, pool_flags

PROJECT_POOL = "analysed clips of the project with a measured ACI"


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


def quality_flags_now(source: Any, thresholds: QualityThresholds = DEFAULT_THRESHOLDS) -> QualityFlagsNow:
    """The quality flags every analysed clip has now (see the module notes).

    Parameters
    ----------
    source
        A Store (read on its Core connection), or a Session or Connection already open.
    thresholds
        The cut-offs (a fit passes its parameters'; everyone else the defaults).
    """
    if hasattr(source, "read"):
        with source.read() as connection:
            return quality_flags_now(connection, thresholds)
    q = T.clip_quality.c
    rows = {
        int(clip): (float("-inf") if rms is None else rms, flatness, clipping, aci)  # NULL rms: digital silence
        for clip, rms, flatness, clipping, aci in source.execute(
            select(q.clip_id, q.rms_dbfs, q.spectral_flatness, q.clipping_ratio, q.aci)
        )
    }
    flags, pool = pool_flags(rows, thresholds, what=PROJECT_POOL)
    return QualityFlagsNow(flags=flags, pool=pool, measured=frozenset(rows))


def clip_quality_flags_now(source: Any, clip_id: int,
                           thresholds: QualityThresholds = DEFAULT_THRESHOLDS) -> list[dict[str, Any]]:
    """One clip's quality flags now (``quality overrule`` checks a named flag against these)."""
    return quality_flags_now(source, thresholds).of(clip_id)


__all__ = ["MIN_RELATIVE_POOL", "PROJECT_POOL", "QualityFlagsNow", "clip_quality_flags_now", "describe_flag",
           "quality_flags_now"]
