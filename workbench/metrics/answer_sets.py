"""Leaderboard rows of a named set of answers that may hold several answers per clip (a crowd).

The leaderboard's models answer each clip once; a pooled human row (a web study's crowd, the
desktop's ``human (pooled)``) may answer a clip several times. Its row is computed by the same
:func:`~workbench.metrics.aggregate.metric_inputs` and :func:`~workbench.metrics.aggregate.metrics_of`
as a model's, over every answer (``n`` counts answers, ``n_clips`` the clips). Its intervals
resample clips, each with all its answers (a cluster bootstrap: the answers to one clip are not
independent). On common clips (``leaderboard --common``) a clip's score is the mean over its
answers (:func:`~workbench.metrics.intervals.clip_terms`), so every clip weighs the same as in
a model's row, and the rows are comparable clip for clip.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np

from workbench.metrics.aggregate import MetricInputs, metric_inputs, metrics_of
from workbench.metrics.intervals import clip_terms, resample_counts, row_terms, term_intervals


def clip_mean_metrics(inputs: MetricInputs, profile: str, clips: np.ndarray) -> dict[str, float]:
    """Each metric that is a mean over answers (:func:`~workbench.metrics.intervals.row_terms`) as the mean over clips of the
    clip's own mean over its answers (clips where the metric counts no answer are left out)."""
    _, terms = clip_terms(row_terms(inputs, profile), clips, mean=True)
    out = {}
    for key, (value, counted) in terms.items():
        n = counted.sum()
        out[key] = float(value[counted > 0].mean()) if n else math.nan
    return out


def answer_set_rows(
    name: str,
    columns: Mapping[str, np.ndarray],
    profiles: Sequence[str],
    *,
    groups: Callable[[str], np.ndarray] | None = None,
    clips: Collection[Any] | None = None,
    ci: bool = False,
    bootstrap: int = 2000,
    seed: int = 0,
    accepted: np.ndarray | None = None,
    coverage: Callable[[str, set[Any], Any], int | None] | None = None,
) -> list[dict[str, Any]]:
    """The leaderboard rows (one per profile and group) of the answers in ``columns``.

    Parameters
    ----------
    columns : mapping of str to numpy.ndarray
        One object array per record field: the leaderboard's record fields, ``question_id``
        (the clip), ``dataset_id``, ``confidence`` and ``members`` (per answer, the tuple of
        people whose guesses it stands for; may be absent).
    groups : callable, optional
        Profile -> each answer's group (``--by``); None: one row per profile.
    clips : collection, optional
        Rank on these clips only (``--common``): a clip's score is the mean over its answers.
    accepted : numpy.ndarray, optional
        Per answer, accepted under the country alias table.
    coverage : callable, optional
        (profile, datasets, group) -> ``n_dataset``.

    Returns
    -------
    list of dict
        The metric keys, ``n`` (answers counted), ``n_clips``, ``n_participants`` (where
        ``members`` is given), ``n_dataset``, ``mean_confidence``, ``group`` with ``groups`` and
        the ``<key>_ci`` intervals with ``ci``. No row for a profile and group without answers.
    """
    keys = columns["question_id"]
    keep = np.ones(len(keys), dtype=bool)
    if clips is not None:
        wanted = set(clips)
        keep = np.array([key in wanted for key in keys.tolist()], dtype=bool)
    if not keep.any():
        return []
    columns = {k: v[keep] for k, v in columns.items()}
    keys = columns["question_id"]
    inputs = metric_inputs(columns, profiles, alias_accepted=None if accepted is None else accepted[keep])
    rows = []
    for profile in profiles:
        labels = groups(profile) if groups is not None else None
        if labels is not None and clips is not None:
            labels = labels[keep]
        names = [None] if labels is None else sorted(set(labels.tolist()))
        for group in names:
            mask = np.ones(len(keys), dtype=bool) if labels is None else labels == group
            part, part_keys = inputs.take(np.flatnonzero(mask)), keys[mask]
            metrics = metrics_of(part, profile, name)
            if clips is not None:
                metrics.update(clip_mean_metrics(part, profile, part_keys))
            n_clips = len(set(part_keys.tolist()))
            row: dict[str, Any] = {} if group is None else {"group": group}
            row.update(metrics)
            row["n_clips"] = n_clips
            if "members" in columns:
                row["n_participants"] = len(set().union(*(m or () for m in columns["members"][mask].tolist())))
            datasets = {d for d in columns["dataset_id"][mask].tolist() if d is not None}
            row["n_dataset"] = coverage(profile, datasets, group) if coverage is not None else None
            confidence = [c for c in columns["confidence"][mask].tolist() if c is not None and c == c]
            row["mean_confidence"] = float(np.mean(confidence)) if confidence else None
            if ci:
                label = name if group is None else f"{name}|{group}"
                _, terms = clip_terms(row_terms(part, profile), part_keys, mean=clips is not None)
                counts = resample_counts(n_clips, bootstrap, seed, label)
                row.update(term_intervals(terms, counts))
            rows.append(row)
    return rows

