"""Gather the curation model's inputs from a project store, as plain DataFrames.

Choices documented here:

* **Pool**: the clips that have a prediction in the chosen ALM run.
* **ALM run**: ``alm_model`` when given; otherwise the only ALM run that has
  judge runs (or the only ALM run at all). Anything else is ambiguous and
  raises an error that lists the models.
* **Judges**: every judge run of that ALM run. A judge is identified by its
  ``judge_name``; when a judge was run several times on the same (clip,
  category), its latest valid judgment (status ok, with a score) counts.
* **Tags**: the project's current tagger run (:func:`workbench.project.current_tagger_run_id`);
  with none, no detection filter.
* **Errors** are memoised per process (geodesics are pure-Python and the
  predictions rarely change between refits); a changed coordinate is a new
  cache key, so the memo can never serve a stale error.
* **Ground truth** for e_k: the clip's own coordinates, else the prediction's
  ``true_latitude`` / ``true_longitude``.
* **Several experts** on one categorical value (per-category polarity,
  per-clip polarity, accept/reject, quality overrule): an adjudicator's value
  wins (the most recent adjudicator's, if several); otherwise the majority,
  ties going to the most recent edit. Numeric values (contribution, rating)
  are averaged as the design doc says (adjudicators only, where present).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, defaultdict
from functools import lru_cache
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy import select

from storage import Store
from storage.models import (
    Annotator,
    CategoryLabel,
    CategoryPolarity,
    Clip,
    ClipLabel,
    QualityOverrule,
    ClipQuality,
    JudgeRun,
    Judgment,
    Prediction,
    Tag,
)
from workbench.errors import AglwError
from workbench.metrics.distance import answer_distance_km

CLIP_COLUMNS = [
    "key", "short_key", "latitude", "longitude", "country", "city", "continent", "human_sounds",
]


@dataclass
class FitInputs:
    """Everything one fit needs, read in one unit of work (plain data, no ORM objects).

    DataFrames use the integer ``clip`` id; ``clips`` maps ids to keys and
    metadata.
    """

    alm_run_id: int
    alm_model: str
    clips: pd.DataFrame
    errors: pd.Series
    judge_run_ids: list[int]
    judge_scores: pd.DataFrame
    expert_scores: pd.DataFrame
    tagger_run_id: int | None
    tags: pd.DataFrame
    category_polarity: dict[str, str]
    clip_polarity: pd.DataFrame
    decisions: pd.Series
    ratings: pd.Series
    quality: pd.DataFrame
    quality_overruled: set[int]  # clips whose every flag is overruled (clip_label.quality_overruled)
    fingerprint: str
    fingerprint_detail: dict[str, Any] = field(default_factory=dict)
    # (clip, flag) pairs whose quality flag the resolved votes overrule (aglw quality overrule)
    flag_overrules: set[tuple[int, str]] = field(default_factory=set)

    def flag_overruled(self, clip: Any, flag: str) -> bool:
        """Whether the experts' resolved votes keep ``clip`` despite its quality flag ``flag``."""
        return int(clip) in self.quality_overruled or (int(clip), flag) in self.flag_overrules


_FLAG_VOTE_COLUMNS = ["id", "annotator", "clip", "flag", "overruled", "version", "updated_at"]


def _overrules(clip_votes: pd.DataFrame, flag_votes: pd.DataFrame, adjudicator_ids: set[int],
               pool: set[int] | None) -> tuple[set[int], set[tuple[int, str]]]:
    """The experts' overrules as resolved now: clips whose every flag is overruled (the clip vote
    ``quality_overruled``) and (clip, flag) pairs (``aglw quality overrule``), each resolved like
    every clip vote (an adjudicator's latest, else the majority). ``clip_votes`` has an
    ``adjudicator`` column already; ``pool`` (None: every clip) limits both."""
    overruled = resolve_votes(clip_votes, ["clip"], "quality_overruled")
    quality_overruled = {int(c) for c, v in overruled.itertuples(index=False, name=None) if bool(v)}
    flag_votes = flag_votes.assign(adjudicator=flag_votes["annotator"].isin(adjudicator_ids))
    if pool is not None:
        flag_votes = flag_votes[flag_votes["clip"].isin(pool)]
    flag_overrules = {(int(c), str(f)) for c, f, v in resolve_votes(flag_votes, ["clip", "flag"], "overruled")
                      .itertuples(index=False, name=None) if bool(v)}
    return quality_overruled, flag_overrules


def flag_overrules_now(store: Store) -> Callable[[Any, str], bool]:
    """Whether the experts' votes, resolved now, keep a clip despite a quality flag: ``(clip, flag)
    -> bool``, the rule :meth:`FitInputs.flag_overruled` applies (the export asks it outside a fit)."""
    with store.read() as conn:
        adjudicator_ids = set(conn.execute(select(Annotator.id).where(Annotator.role == "adjudicator")).scalars())
        clip_votes = _frame(conn.execute(select(
            ClipLabel.id, ClipLabel.annotator_id, ClipLabel.clip_id, ClipLabel.quality_overruled, ClipLabel.version,
            ClipLabel.updated_at)).all(), ["id", "annotator", "clip", "quality_overruled", "version", "updated_at"])
        flag_votes = _frame(conn.execute(select(
            QualityOverrule.id, QualityOverrule.annotator_id, QualityOverrule.clip_id, QualityOverrule.flag,
            QualityOverrule.overruled, QualityOverrule.version, QualityOverrule.updated_at)).all(), _FLAG_VOTE_COLUMNS)
    clip_votes["adjudicator"] = clip_votes["annotator"].isin(adjudicator_ids)
    whole, pairs = _overrules(clip_votes, flag_votes, adjudicator_ids, None)
    return lambda clip, flag: int(clip) in whole or (int(clip), str(flag)) in pairs


def choose_alm_run(store: Store, alm_model: str | None) -> tuple[int, str]:
    """The ALM run a fit uses (see the module notes); a handled error when ambiguous."""
    from workbench.metrics.records import answered_alm_runs, unanswered_alm_run_text

    with store.session() as s:
        # ordered by id as before: the ambiguity message lists the runs in the order they came
        runs = sorted(answered_alm_runs(s))
        judged = set(s.scalars(select(JudgeRun.alm_run_id).where(JudgeRun.alm_run_id.is_not(None))).all())
        empty = unanswered_alm_run_text(s, alm_model) if alm_model is not None else None
    if empty is not None:
        raise AglwError(empty)
    if not runs:
        raise AglwError("the project has no ALM predictions; run `aglw import predictions --model NAME FILE` first")
    if alm_model is not None:
        for run_id, model in runs:
            if model == alm_model:
                return int(run_id), model
        raise AglwError(
            f"no ALM run named {alm_model!r}; imported models: {', '.join(m for _, m in runs)}"
        )
    with_judges = [(i, m) for i, m in runs if i in judged]
    if len(with_judges) == 1:
        return int(with_judges[0][0]), with_judges[0][1]
    if len(runs) == 1:
        return int(runs[0][0]), runs[0][1]
    raise AglwError(
        "several ALM runs could be the reference; pass --alm MODEL (one of: "
        + ", ".join(m for _, m in (with_judges or runs))
        + ")"
    )


def _frame(rows: Iterable[Any], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame([tuple(r) for r in rows], columns=columns)


def resolve_votes(votes: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """One value per key from several annotators' votes.

    Parameters
    ----------
    votes
        Columns ``keys`` + ``value`` + ``adjudicator`` (bool) + ``updated_at``.
        Rows with a missing value are ignored.

    Returns
    -------
    DataFrame
        Columns ``keys`` + ``value``: the adjudicators' most recent value where
        one exists, else the majority value, ties to the most recent edit.
    """
    votes = votes.dropna(subset=[value])
    grouped: dict[tuple, list[tuple[bool, Any, Any]]] = defaultdict(list)
    for row in votes.itertuples(index=False):
        record = row._asdict()
        grouped[tuple(record[k] for k in keys)].append(
            (bool(record["adjudicator"]), record["updated_at"], record[value])
        )
    resolved = []
    for key, entries in grouped.items():
        adjudicated = [e for e in entries if e[0]]
        if adjudicated:
            chosen = max(adjudicated, key=lambda e: e[1])[2]
        else:
            counts = Counter(e[2] for e in entries)
            top = max(counts.values())
            tied = {v for v, c in counts.items() if c == top}
            chosen = max((e for e in entries if e[2] in tied), key=lambda e: e[1])[2]
        resolved.append((*key, chosen))
    return pd.DataFrame(resolved, columns=[*keys, value])


def _mean_rating(ratings: pd.DataFrame) -> pd.Series:
    ratings = ratings.dropna(subset=["rating"])
    if ratings.empty:
        return pd.Series(dtype=float)
    has_adjudicator = ratings.groupby("clip")["adjudicator"].transform("any")
    deciding = ratings[~has_adjudicator | ratings["adjudicator"].astype(bool)]
    return deciding.groupby("clip")["rating"].mean().astype(float)


def gather_inputs(store: Store, alm_model: str | None = None) -> FitInputs:
    """Read every input of a fit from ``store`` in one read session.

    Parameters
    ----------
    store
        The project store.
    alm_model
        The reference ALM (``AlmRun.model``); see :func:`choose_alm_run`.
    """
    alm_run_id, model = choose_alm_run(store, alm_model)
    with store.session() as s:
        conn = s.connection()
        predictions = conn.execute(
            select(
                Prediction.clip_id, Clip.key, Clip.short_key, Clip.latitude, Clip.longitude, Clip.country,
                Clip.city, Clip.continent, Clip.human_sounds, Prediction.true_latitude,
                Prediction.true_longitude, Prediction.predicted_latitude, Prediction.predicted_longitude,
            )
            .join(Clip, Clip.id == Prediction.clip_id)
            .where(Prediction.alm_run_id == alm_run_id)
            .order_by(Prediction.clip_id, Prediction.id)
        ).all()
        judge_runs = conn.execute(
            select(JudgeRun.id, JudgeRun.judge_name).where(JudgeRun.alm_run_id == alm_run_id).order_by(JudgeRun.id)
        ).all()
        judge_run_ids = [int(r[0]) for r in judge_runs]
        every_judgment = conn.execute(
            select(
                Judgment.id, Judgment.judge_run_id, Judgment.clip_id, Judgment.category_id, JudgeRun.judge_name,
                Judgment.contribution, Judgment.status,
            )
            .join(JudgeRun, JudgeRun.id == Judgment.judge_run_id)
            .where(JudgeRun.alm_run_id == alm_run_id)
        ).all()
        from workbench.project import STANDING, judgment_standing

        # Each judge's standing judgment (the one rule), when it is an ok score.
        standing = judgment_standing((j.id, j.judge_run_id, j.judge_name, None, j.clip_id, j.category_id)
                                     for j in every_judgment)
        judgments = [(j.id, j.clip_id, j.category_id, j.judge_name, j.contribution) for j in every_judgment
                     if standing[j.id] == STANDING and j.status == "ok" and j.contribution is not None]
        from workbench.project import current_tagger_run_id

        tagger_run_id = current_tagger_run_id(conn)
        tags = (
            conn.execute(
                select(Tag.clip_id, Tag.audioset_id, Tag.probability).where(Tag.tagger_run_id == tagger_run_id)
            ).all()
            if tagger_run_id is not None
            else []
        )
        adjudicator_ids = set(
            conn.execute(select(Annotator.id).where(Annotator.role == "adjudicator")).scalars().all()
        )
        category_labels = conn.execute(
            select(
                CategoryLabel.id, CategoryLabel.annotator_id, CategoryLabel.clip_id, CategoryLabel.category_id,
                CategoryLabel.contribution, CategoryLabel.polarity, CategoryLabel.version, CategoryLabel.updated_at,
            )
        ).all()
        polarities = conn.execute(
            select(
                CategoryPolarity.id, CategoryPolarity.annotator_id, CategoryPolarity.category_id,
                CategoryPolarity.polarity, CategoryPolarity.version, CategoryPolarity.updated_at,
            )
        ).all()
        clip_labels = conn.execute(
            select(
                ClipLabel.id, ClipLabel.annotator_id, ClipLabel.clip_id, ClipLabel.rating, ClipLabel.decision,
                ClipLabel.quality_overruled, ClipLabel.version, ClipLabel.updated_at,
            )
        ).all()
        flag_votes = conn.execute(
            select(
                QualityOverrule.id, QualityOverrule.annotator_id, QualityOverrule.clip_id, QualityOverrule.flag,
                QualityOverrule.overruled, QualityOverrule.version, QualityOverrule.updated_at,
            )
        ).all()
        quality = conn.execute(
            select(
                ClipQuality.clip_id, ClipQuality.rms_dbfs, ClipQuality.spectral_flatness,
                ClipQuality.clipping_ratio, ClipQuality.aci, ClipQuality.content_hash,
            )
        ).all()

    pred = _frame(
        predictions,
        ["clip", *CLIP_COLUMNS, "true_latitude", "true_longitude", "predicted_latitude", "predicted_longitude"],
    ).drop_duplicates("clip", keep="first")
    clips = pred.set_index("clip")[CLIP_COLUMNS]
    pool = set(clips.index)
    errors = pd.Series(
        [
            _error_km(row.latitude, row.longitude, row.true_latitude, row.true_longitude,
                      row.predicted_latitude, row.predicted_longitude)
            for row in pred.itertuples(index=False)
        ],
        index=pred["clip"].to_numpy(),
        dtype=float,
    )

    judged = _frame(judgments, ["id", "clip", "category", "judge", "score"])
    judged = judged[judged["clip"].isin(pool)].sort_values("id")

    labels = _frame(
        category_labels,
        ["id", "annotator", "clip", "category", "score", "polarity", "version", "updated_at"],
    )
    labels["adjudicator"] = labels["annotator"].isin(adjudicator_ids)
    labels = labels[labels["clip"].isin(pool)]
    expert_scores = labels.dropna(subset=["score"])[["clip", "category", "annotator", "score", "adjudicator"]]
    clip_polarity = resolve_votes(labels, ["clip", "category"], "polarity")

    polarity_votes = _frame(polarities, ["id", "annotator", "category", "polarity", "version", "updated_at"])
    polarity_votes["adjudicator"] = polarity_votes["annotator"].isin(adjudicator_ids)
    category_polarity = dict(
        resolve_votes(polarity_votes, ["category"], "polarity").itertuples(index=False, name=None)
    )

    clip_votes = _frame(
        clip_labels,
        ["id", "annotator", "clip", "rating", "decision", "quality_overruled", "version", "updated_at"],
    )
    clip_votes["adjudicator"] = clip_votes["annotator"].isin(adjudicator_ids)
    clip_votes = clip_votes[clip_votes["clip"].isin(pool)]
    decisions = resolve_votes(clip_votes, ["clip"], "decision").set_index("clip")["decision"]
    quality_overruled, flag_overrules = _overrules(clip_votes, _frame(flag_votes, _FLAG_VOTE_COLUMNS),
                                                   adjudicator_ids, pool)
    ratings = _mean_rating(clip_votes[["clip", "rating", "adjudicator"]])

    quality_frame = _frame(
        quality, ["clip", "rms_dbfs", "spectral_flatness", "clipping_ratio", "aci", "content_hash"]
    )
    quality_frame = quality_frame[quality_frame["clip"].isin(pool)].reset_index(drop=True)

    detail = {
        "alm_run_id": alm_run_id,
        "judge_runs": sorted(judge_run_ids),
        "judgments": [len(judged), int(judged["id"].max()) if len(judged) else None],
        "tagger_run_id": tagger_run_id,
        "category_labels": sorted((int(r[0]), int(r[6])) for r in category_labels),
        "category_polarities": sorted((int(r[0]), int(r[4])) for r in polarities),
        "clip_labels": sorted((int(r[0]), int(r[6])) for r in clip_labels),
        "quality": sorted((int(r[0]), str(r[5])) for r in quality),
        "pool": len(pool),
    }
    if flag_votes:  # only when there are any: the fingerprints of projects without overrules stay as they were
        detail["quality_overrules"] = sorted((int(r[0]), int(r[5])) for r in flag_votes)
    fingerprint = hashlib.sha256(json.dumps(detail, sort_keys=True, default=str).encode()).hexdigest()
    return FitInputs(
        alm_run_id=alm_run_id,
        alm_model=model,
        clips=clips,
        errors=errors,
        judge_run_ids=judge_run_ids,
        judge_scores=judged[["clip", "category", "judge", "score"]].reset_index(drop=True),
        expert_scores=expert_scores.reset_index(drop=True),
        tagger_run_id=int(tagger_run_id) if tagger_run_id is not None else None,
        tags=_frame(tags, ["clip", "category", "probability"]),
        category_polarity=category_polarity,
        clip_polarity=clip_polarity,
        decisions=decisions,
        ratings=ratings,
        quality=quality_frame.drop(columns=["content_hash"]),
        quality_overruled=quality_overruled,
        flag_overrules=flag_overrules,
        fingerprint=fingerprint,
        fingerprint_detail={
            "alm_run_id": alm_run_id,
            "judge_run_ids": sorted(judge_run_ids),
            "tagger_run_id": detail["tagger_run_id"],
            "n_judgments": len(judged),
            "n_category_labels": len(category_labels),
            "n_category_polarities": len(polarities),
            "n_clip_labels": len(clip_labels),
        },
    )


@lru_cache(maxsize=262_144)
def _error_km(
    clip_lat: Any, clip_lon: Any, true_lat: Any, true_lon: Any, pred_lat: Any, pred_lon: Any
) -> float:
    error = answer_distance_km(pred_lat, pred_lon, clip_lat, clip_lon, true_lat, true_lon)
    return math.nan if error is None else float(error)
