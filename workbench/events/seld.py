"""DCASE SELD metrics, equal to the official DCASE Task 3 baseline code (spatial-events.md "Metrics").

Two metrics, chosen by the reference files:

* without distances, the **DCASE 2023** metric (``SELD_evaluation_metrics.SELDMetrics`` of the
  2023 baseline, ``SELDMetricsSegmentLevel`` of the 2024 one): 1 s segments of 10 frames;
  per segment and class, the reference and predicted directions of each frame common to
  both are matched with the Hungarian algorithm and averaged per reference track;
  location-aware F-score and error rate with a DOA threshold, class-dependent localization
  error (180° for a class without matches) and recall, macro-averaged over classes,
  SELD = mean(ER, 1 − F, LE/180, 1 − LR).
* with the distance column, the **DCASE 2024** metric (``SELDMetrics`` of the 2024 baseline with
  ``evaluate_distance``): per 100 ms frame, a match is a true positive only within the DOA
  threshold and the relative distance threshold; DOA and relative distance errors averaged
  over the classes that have matches; SELD = mean over classes of nanmean(1 − F, DOA/180, RDE).

The official code's quirks are kept on purpose, because they change the numbers: the
recording's length is taken as the *last reference frame index* (so that frame itself is
dropped at frame level, and segments stop at ``ceil(last / 10)``); in a segment where a class
is in both but no frame is shared, the *predicted* track count is added to the misses; a track
within a frame is identified by its position in that frame (2023) or its source index (2024).
Distances of both folders are in cm (the baseline converts only the reference to metres; the
relative error does not depend on the unit when both agree).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from workbench.errors import InputError
from workbench.events.starss23 import MetadataFile

_EPS = float(np.finfo(float).eps)
FRAMES_PER_SEGMENT = 10


def unit_vectors(azimuth_deg: np.ndarray, elevation_deg: np.ndarray) -> np.ndarray:
    """Cartesian unit vectors (x front, y left, z up) of directions in degrees, shaped (n, 3)."""
    az = np.radians(np.asarray(azimuth_deg, dtype=float))
    el = np.radians(np.asarray(elevation_deg, dtype=float))
    return np.stack([np.cos(az) * np.cos(el), np.sin(az) * np.cos(el), np.sin(el)], axis=-1)


def angular_distance_matrix(ref: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Great-circle distance in degrees between every row of ``ref`` and of ``pred`` (Cartesian).

    Normalised as the 2024 baseline does (``sqrt(x² + y² + z² + 1e-10)``), so that even a
    perfect match gives its 8·10⁻⁴° and the figures agree to 1e-6.
    """
    ref = ref / np.sqrt((ref**2).sum(-1, keepdims=True) + 1e-10)
    pred = pred / np.sqrt((pred**2).sum(-1, keepdims=True) + 1e-10)
    return np.degrees(np.arccos(np.clip(ref @ pred.T, -1.0, 1.0)))


def spherical_distance_matrix(ref: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Great-circle distance in degrees between (azimuth, elevation) rows in radians (the 2023 baseline's polar path)."""
    az1, el1 = ref[:, 0:1], ref[:, 1:2]
    az2, el2 = pred[None, :, 0], pred[None, :, 1]
    cos = np.sin(el1) * np.sin(el2) + np.cos(el1) * np.cos(el2) * np.cos(np.abs(az1 - az2))
    return np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))


def _angle_cartesian(a: np.ndarray, b: np.ndarray) -> float:
    """:func:`angular_distance_matrix` of one pair, in plain floats."""
    ax, ay, az = float(a[0]), float(a[1]), float(a[2])
    bx, by, bz = float(b[0]), float(b[1]), float(b[2])
    na = math.sqrt(ax * ax + ay * ay + az * az + 1e-10)
    nb = math.sqrt(bx * bx + by * by + bz * bz + 1e-10)
    cos = (ax / na) * (bx / nb) + (ay / na) * (by / nb) + (az / na) * (bz / nb)
    return math.degrees(math.acos(min(1.0, max(-1.0, cos))))


def _angle_spherical(a: np.ndarray, b: np.ndarray) -> float:
    """:func:`spherical_distance_matrix` of one pair, in plain floats."""
    az1, el1, az2, el2 = float(a[0]), float(a[1]), float(b[0]), float(b[1])
    cos = math.sin(el1) * math.sin(el2) + math.cos(el1) * math.cos(el2) * math.cos(abs(az1 - az2))
    return math.degrees(math.acos(min(1.0, max(-1.0, cos))))


def _assign(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hungarian assignment (scipy's, as the official code) with a fast path for one pair."""
    if cost.shape == (1, 1):
        return np.zeros(1, dtype=int), np.zeros(1, dtype=int)
    from scipy.optimize import linear_sum_assignment

    return linear_sum_assignment(cost)


@dataclass
class SeldResult:
    """The SELD figures of one evaluation (``classwise``: per class, when macro-averaged)."""

    metric: str  # dcase2023 | dcase2024
    n_files: int
    error_rate: float
    f_score: float
    doa_error_deg: float | None
    localization_recall: float
    seld_score: float
    relative_distance_error: float | None = None
    distance_error_cm: float | None = None
    classwise: dict[str, list[float | None]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "metric": self.metric,
            "n_files": self.n_files,
            "error_rate": self.error_rate,
            "f_score": self.f_score,
            "doa_error_deg": self.doa_error_deg,
            "localization_recall": self.localization_recall,
            "seld_score": self.seld_score,
        }
        if self.metric == "dcase2024":
            out["relative_distance_error"] = self.relative_distance_error
            out["distance_error_cm"] = self.distance_error_cm
        out["classwise"] = self.classwise
        return out


class _Counts:
    def __init__(self, n_classes: int) -> None:
        z = lambda: np.zeros(n_classes)  # noqa: E731 - one zero vector per counter
        self.tp, self.fp, self.fp_spatial, self.fn, self.nref = z(), z(), z(), z(), z()
        self.total_de, self.total_dist, self.total_reldist = z(), z(), z()
        self.de_tp, self.de_fp, self.de_fn = z(), z(), z()
        self.s = self.d = self.i = 0


def _frames_dict(metadata: MetadataFile, cartesian: bool) -> dict[int, list[tuple[int, int, np.ndarray, float | None]]]:
    """frame -> [(class, source, direction, distance)] in file order.

    The direction is a Cartesian vector (2024) or (azimuth, elevation) in radians (2023).
    """
    out: dict[int, list[tuple[int, int, np.ndarray, float | None]]] = {}
    if not metadata.rows:
        return out
    az = np.array([r.azimuth for r in metadata.rows], dtype=float)
    el = np.array([r.elevation for r in metadata.rows], dtype=float)
    directions = unit_vectors(az, el) if cartesian else np.radians(np.stack([az, el], axis=-1))
    for row, direction in zip(metadata.rows, directions):
        out.setdefault(row.frame, []).append((row.class_index, row.source, direction, row.distance))
    return out


# ----------------------------------------------------------------------------------- 2023


def _segments(frames: dict[int, list], max_frames: int) -> list[dict[int, dict[int, list[np.ndarray]]]]:
    """segment -> class -> {frame in segment: [unit vectors in file order]}, as the baseline's segment_labels."""
    n_blocks = int(math.ceil(max_frames / float(FRAMES_PER_SEGMENT)))
    blocks: list[dict[int, dict[int, list[np.ndarray]]]] = [{} for _ in range(n_blocks)]
    # The baseline walks whole segments, so frames after max_frames inside the last segment count.
    limit = n_blocks * FRAMES_PER_SEGMENT
    for frame in sorted(frames):
        if frame >= limit:
            continue
        block = blocks[frame // FRAMES_PER_SEGMENT]
        for class_index, _source, vector, _distance in frames[frame]:
            block.setdefault(class_index, {}).setdefault(frame % FRAMES_PER_SEGMENT, []).append(vector)
    return blocks


def _update_2023(counts: _Counts, ref_blocks: list, pred_blocks: list, n_classes: int, doa_threshold: float) -> None:
    for ref_block, pred_block in zip(ref_blocks, pred_blocks):
        loc_fn = loc_fp = 0
        for c in sorted(set(ref_block) | set(pred_block)):
            if c >= n_classes:
                continue
            ref = ref_block.get(c)
            pred = pred_block.get(c)
            n_ref = max(len(v) for v in ref.values()) if ref is not None else None
            n_pred = max(len(v) for v in pred.values()) if pred is not None else None
            if n_ref is not None:
                counts.nref[c] += n_ref
            if ref is not None and pred is not None:
                assert n_ref is not None and n_pred is not None
                track_dist: dict[int, list[float]] = {}
                for frame, ref_vectors in ref.items():
                    if frame not in pred:
                        continue
                    pred_vectors = pred[frame]
                    if len(ref_vectors) == 1 and len(pred_vectors) == 1:
                        track_dist.setdefault(0, []).append(_angle_spherical(ref_vectors[0], pred_vectors[0]))
                        continue
                    cost = spherical_distance_matrix(np.array(ref_vectors), np.array(pred_vectors))
                    rows, cols = _assign(cost)
                    for r, k in zip(rows, cols):
                        track_dist.setdefault(int(r), []).append(float(cost[r, k]))
                if not track_dist:
                    # As the baseline: the predicted count is what is added to the misses here.
                    loc_fn += n_pred
                    counts.fn[c] += n_pred
                    counts.de_fn[c] += n_pred
                    continue
                for distances in track_dist.values():
                    mean_distance = sum(distances) / len(distances)
                    counts.total_de[c] += mean_distance
                    counts.de_tp[c] += 1
                    if mean_distance <= doa_threshold:
                        counts.tp[c] += 1
                    else:
                        loc_fp += 1
                        counts.fp_spatial[c] += 1
                if n_pred > n_ref:
                    loc_fp += n_pred - n_ref
                    counts.fp[c] += n_pred - n_ref
                    counts.de_fp[c] += n_pred - n_ref
                elif n_pred < n_ref:
                    loc_fn += n_ref - n_pred
                    counts.fn[c] += n_ref - n_pred
                    counts.de_fn[c] += n_ref - n_pred
            elif ref is not None:
                assert n_ref is not None
                loc_fn += n_ref
                counts.fn[c] += n_ref
                counts.de_fn[c] += n_ref
            else:
                assert n_pred is not None
                loc_fp += n_pred
                counts.fp[c] += n_pred
                counts.de_fp[c] += n_pred
        counts.s += min(loc_fp, loc_fn)
        counts.d += max(0, loc_fn - loc_fp)
        counts.i += max(0, loc_fp - loc_fn)


def _scores_2023(counts: _Counts, n_classes: int, class_names: Sequence[str]) -> SeldResult:
    er = (counts.s + counts.d + counts.i) / (counts.nref.sum() + _EPS)
    f = counts.tp / (_EPS + counts.tp + counts.fp_spatial + 0.5 * (counts.fp + counts.fn))
    le = counts.total_de / (counts.de_tp + _EPS)
    le[counts.de_tp == 0] = 180.0
    lr = counts.de_tp / (_EPS + counts.de_tp + counts.de_fn)
    seld = np.mean([np.repeat(er, n_classes), 1 - f, le / 180.0, 1 - lr], 0)
    classwise = {
        name: [float(f[i]), float(le[i]), float(lr[i]), float(seld[i])] for i, name in enumerate(class_names[:n_classes])
    }
    return SeldResult("dcase2023", 0, float(er), float(f.mean()), float(le.mean()), float(lr.mean()), float(seld.mean()),
                      classwise={"columns": ["f_score", "doa_error_deg", "localization_recall", "seld_score"], **classwise})  # type: ignore[dict-item]


# ----------------------------------------------------------------------------------- 2024


def _organize(frames: dict[int, list], max_frames: int) -> dict[int, dict[int, dict[int, tuple[np.ndarray, float]]]]:
    """frame -> class -> {track id: (unit vector, distance)}, as the baseline's organize_labels."""
    out: dict[int, dict[int, dict[int, tuple[np.ndarray, float]]]] = {}
    for frame in sorted(frames):
        if frame >= max_frames:
            continue
        per_class = out.setdefault(frame, {})
        for class_index, source, vector, distance in frames[frame]:
            tracks = per_class.setdefault(class_index, {})
            if source not in tracks:
                tracks[source] = (vector, float(distance) if distance is not None else math.nan)
            else:
                # A repeated source id: the baseline gives the row a new negative id.
                lowest = min(tracks)
                tracks[lowest - 1 if lowest < 0 else -1] = (vector, float(distance) if distance is not None else math.nan)
    return out


def _update_2024(counts: _Counts, ref: dict, pred: dict, n_classes: int, doa_threshold: float,
                 reldist_threshold: float, dist_threshold: float) -> None:
    for frame in sorted(set(ref) | set(pred)):
        ref_frame = ref.get(frame, {})
        pred_frame = pred.get(frame, {})
        loc_fn = loc_fp = 0
        for c in sorted(set(ref_frame) | set(pred_frame)):
            if c >= n_classes:
                continue
            r_tracks = ref_frame.get(c)
            p_tracks = pred_frame.get(c)
            if r_tracks is not None and p_tracks is not None and len(r_tracks) == 1 and len(p_tracks) == 1:
                # The common case, one track on each side, without numpy's per-call overhead.
                (r_v, r_d), = r_tracks.values()
                (p_v, p_d), = p_tracks.values()
                doa = _angle_cartesian(r_v, p_v)
                dist = abs(r_d - p_d)
                rel = dist / (r_d + _EPS)
                failed = int(doa > doa_threshold or dist > dist_threshold or rel > reldist_threshold)
                counts.nref[c] += 1
                counts.total_de[c] += doa
                counts.total_dist[c] += dist
                counts.total_reldist[c] += rel
                counts.tp[c] += 1 - failed
                counts.de_tp[c] += 1
                counts.fp_spatial[c] += failed
                loc_fp += failed
                continue
            if r_tracks is not None:
                counts.nref[c] += len(r_tracks)
            if r_tracks is not None and p_tracks is not None:
                r_vec = np.array([v for v, _ in r_tracks.values()])
                r_dist = np.array([d for _, d in r_tracks.values()])
                p_vec = np.array([v for v, _ in p_tracks.values()])
                p_dist = np.array([d for _, d in p_tracks.values()])
                cost = angular_distance_matrix(r_vec, p_vec)
                rows, cols = _assign(cost)
                doa_err = cost[rows, cols]
                dist_err = np.abs(r_dist[rows] - p_dist[cols])
                rel_err = dist_err / (r_dist[rows] + _EPS)
                n_pred, n_ref = len(p_tracks), len(r_tracks)
                fn = max(0, n_ref - n_pred)
                fp_inf = max(0, n_pred - n_ref)
                matched = min(n_pred, n_ref)
                failed = int(np.sum((doa_err > doa_threshold) | (dist_err > dist_threshold) | (rel_err > reldist_threshold)))
                counts.total_de[c] += doa_err.sum()
                counts.total_dist[c] += dist_err.sum()
                counts.total_reldist[c] += rel_err.sum()
                counts.tp[c] += matched - failed
                counts.de_tp[c] += matched
                counts.fp[c] += fp_inf
                counts.de_fp[c] += fp_inf
                counts.fp_spatial[c] += failed
                loc_fp += fp_inf + failed
                counts.fn[c] += fn
                counts.de_fn[c] += fn
                loc_fn += fn
            elif r_tracks is not None:
                loc_fn += len(r_tracks)
                counts.fn[c] += len(r_tracks)
                counts.de_fn[c] += len(r_tracks)
            else:
                assert p_tracks is not None
                loc_fp += len(p_tracks)
                counts.fp[c] += len(p_tracks)
                counts.de_fp[c] += len(p_tracks)
        counts.s += min(loc_fp, loc_fn)
        counts.d += max(0, loc_fn - loc_fp)
        counts.i += max(0, loc_fp - loc_fn)


def _nanmean(values: np.ndarray) -> float | None:
    finite = values[~np.isnan(values)]
    return float(finite.mean()) if finite.size else None


def _scores_2024(counts: _Counts, n_classes: int, class_names: Sequence[str]) -> SeldResult:
    er = (counts.s + counts.d + counts.i) / (counts.nref.sum() + _EPS)
    f = counts.tp / (_EPS + counts.tp + counts.fp_spatial + 0.5 * (counts.fp + counts.fn))
    with np.errstate(invalid="ignore", divide="ignore"):
        ang = counts.total_de / (counts.de_tp + _EPS)
        dist = counts.total_dist / (counts.de_tp + _EPS)
        rel = counts.total_reldist / (counts.de_tp + _EPS)
    none = counts.de_tp == 0
    ang[none] = np.nan
    dist[none] = np.nan
    rel[none] = np.nan
    lr = counts.de_tp / (_EPS + counts.de_tp + counts.de_fn)
    parts = np.stack([1 - f, ang / 180.0, rel])
    # nanmean over the three parts per class (1 − F is never NaN).
    seld = np.array([np.mean(col[~np.isnan(col)]) for col in parts.T])

    def _opt(v: float) -> float | None:
        return None if math.isnan(v) else float(v)

    classwise = {
        name: [float(f[i]), _opt(ang[i]), _opt(rel[i]), float(lr[i]), float(seld[i])]
        for i, name in enumerate(class_names[:n_classes])
    }
    return SeldResult(
        "dcase2024", 0, float(er), float(f.mean()), _nanmean(ang), float(lr.mean()), float(seld.mean()),
        relative_distance_error=_nanmean(rel), distance_error_cm=_nanmean(dist),
        classwise={"columns": ["f_score", "doa_error_deg", "relative_distance_error", "localization_recall",  # type: ignore[dict-item]
                               "seld_score"], **classwise},
    )


# ----------------------------------------------------------------------------------- API


def evaluate_seld(
    pairs: Sequence[tuple[MetadataFile, MetadataFile]],
    *,
    n_classes: int = 13,
    class_names: Sequence[str] | None = None,
    doa_threshold: float = 20.0,
    distance_threshold: float = 1.0,
    metric: str | None = None,
    scored: Callable[[MetadataFile], None] | None = None,
) -> SeldResult:
    """SELD metrics over (reference, prediction) file pairs.

    Parameters
    ----------
    pairs
        Parsed reference and prediction files of the same recordings.
    n_classes
        Number of classes (13 for STARSS23); macro averages run over all of them.
    class_names
        Names for the per-class figures (default: ``class 0`` ...).
    doa_threshold
        DOA threshold in degrees (20 in DCASE).
    distance_threshold
        Relative distance threshold of the 2024 metric (1.0 in DCASE 2024).
    metric
        ``dcase2023`` or ``dcase2024``; None chooses by the reference files (2024 when they
        carry distances).
    scored
        Called with each reference file once its pair is scored (a job's progress; it may
        raise to stop, as a cancelled task does).

    Raises
    ------
    InputError
        No pairs, a reference file without rows (the official code cannot score it), a mix
        of reference files with and without distances, or (2024) a prediction file without
        distances.
    """
    if not pairs:
        raise InputError("no reference/prediction pairs to evaluate")
    names = list(class_names) if class_names is not None else [f"class {i}" for i in range(n_classes)]
    with_distance = {ref.has_distance for ref, _ in pairs}
    if metric is None:
        if len(with_distance) > 1:
            raise InputError(
                "the reference folder mixes files with and without the distance column; use one format (2023 or 2024)"
            )
        metric = "dcase2024" if with_distance == {True} else "dcase2023"
    if metric not in ("dcase2023", "dcase2024"):
        raise InputError(f"metric must be dcase2023 or dcase2024, got {metric!r}")
    counts = _Counts(n_classes)
    for ref, pred in pairs:
        last = ref.last_frame
        if last is None:
            raise InputError(f"{ref.path}: the reference file has no rows; the DCASE metric needs at least one")
        if metric == "dcase2024":
            if not ref.has_distance:
                raise InputError(f"{ref.path}: the 2024 metric needs the distance column in the reference")
            if pred.rows and not pred.has_distance:
                raise InputError(f"{pred.path}: the prediction has no distance column; the 2024 metric needs one")
            _update_2024(counts, _organize(_frames_dict(ref, True), last), _organize(_frames_dict(pred, True), last),
                         n_classes, doa_threshold, distance_threshold, math.inf)
        else:
            _update_2023(counts, _segments(_frames_dict(ref, False), last), _segments(_frames_dict(pred, False), last),
                         n_classes, doa_threshold)
        if scored is not None:
            scored(ref)
    result = _scores_2024(counts, n_classes, names) if metric == "dcase2024" else _scores_2023(counts, n_classes, names)
    result.n_files = len(pairs)
    return result
