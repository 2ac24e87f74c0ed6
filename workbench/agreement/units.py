"""The long rating table of a project: who rated which unit with what.

``load_ratings`` reads the store once and returns plain DataFrames; ``add_derived_raters``
is pure.  Units are (clip, category) for contribution, effect and polarity labels, and the
clip for localizability labels (rating, decision, localizability).  A category that a rater
did not score has no row: it is *missing*, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sqlmodel import select

from storage import Store
from storage.models import (
    AlmRun,
    Annotator,
    CategoryLabel,
    Clip,
    ClipLabel,
    CurationCategoryResult,
    CurationClipResult,
    CurationRun,
    JudgeRun,
    Judgment,
)
from workbench.errors import InputError
from workbench.speech import is_speech_clip

RATING_COLUMNS = ["clip_id", "clip_key", "category_id", "unit", "rater", "rater_kind", "label", "value"]

# label → (level of measurement, category domain); None = the observed values
LABELS: dict[str, tuple[str, tuple | None]] = {
    "contribution": ("ordinal", (0, 1, 2, 3)),
    "effect": ("nominal", ("helped", "misled", "neutral")),
    "polarity": ("nominal", ("P", "N", "neutral")),
    "rating": ("ordinal", (1, 2, 3, 4, 5)),
    "decision": ("nominal", ("accept", "reject")),
    "localizability": ("interval", None),
}

CODING_DECISIONS = [
    "A category that a rater did not score is missing, not 0 (no row in the long table).",
    "Units are (clip, category) for contribution, effect and polarity; the clip for rating, decision "
    "and localizability.",
    "Each LLM judge is one rater: for every unit its rating comes from its latest judge run (by creation "
    "time, then id) with an ok judgment; earlier runs on the same unit are used only for test-retest.",
    "Failed judgments (status failed or no value) are missing.",
    "An expert decision of 'unsure' is missing for accept/reject agreement.",
    "Derived rater judge_majority: the most frequent judge effect on a unit; ties are missing.",
    "Derived rater judge_mean: the mean judge contribution on a unit (at least one judge).",
    "Derived rater expert_consensus (only when at least two experts rated the label): the most frequent "
    "expert effect/polarity/decision (ties missing) and the mean expert contribution/rating; judges and the "
    "curation fit are compared with it.",
    "An expert is never compared with a consensus that contains her own rating: expert vs "
    "expert_consensus_others uses the consensus of the OTHER experts (leave one out), on units at least two "
    "other experts rated; with fewer the comparison is not available (empty value, with the reason).",
    "Derived rater curation_fit (latest curation run): the fitted category polarity (P/N/neutral; "
    "'insufficient' is missing) on every (clip, category) unit an expert gave a polarity, the clip's "
    "localizability l_k, and decision accept when the clip is a candidate (l_k > theta), else reject.",
    "Speech clips: AGL1K human_sounds >= 0.1 or the Speech tag /m/09x0r >= 0.15 (current tagger run).",
    "Multi-rater coefficients (Fleiss over judges; Krippendorff and AC1 over judges and experts) "
    "leave derived raters out because they are functions of the others.",
    "Confidence intervals: cluster bootstrap over clips (clips resampled with replacement with all their "
    "units and raters), percentile intervals; resamples where a statistic is undefined are counted and "
    "left out of the interval.",
]


@dataclass
class RatingData:
    """Everything the agreement export reads from a project, as plain data."""

    ratings: pd.DataFrame  # RATING_COLUMNS
    retest: pd.DataFrame  # RATING_COLUMNS + judge_run_id: earlier judge runs (test-retest)
    clips: pd.DataFrame  # clip_id, clip_key, continent, speech
    judge_runs: list[dict] = field(default_factory=list)
    annotators: list[dict] = field(default_factory=list)  # id, name, pseudonym, rater
    curation_run_id: int | None = None
    alm_model: str | None = None


def _empty_ratings() -> pd.DataFrame:
    return pd.DataFrame({column: pd.Series(dtype=object) for column in RATING_COLUMNS})


def load_ratings(store: Store, *, alm_model: str | None = None, reveal_annotators: bool = False) -> RatingData:
    """Read judges', experts' and the curation fit's ratings from the store.

    Parameters
    ----------
    store
        The project.
    alm_model
        Only judge runs over this ALM's predictions; default: the ALM of the most recent
        judge run (judgments of different ALMs rate different reasoning, so they never mix).
    reveal_annotators
        Name expert raters by annotator name instead of pseudonym.
    """
    with store.session() as s:
        clips = s.exec(select(Clip)).all()
        runs = s.exec(select(JudgeRun).order_by(JudgeRun.id)).all()  # the order of the store
        alm_by_id = {r.id: r.model for r in s.exec(select(AlmRun)).all()}
        if alm_model is not None and alm_model not in alm_by_id.values():
            raise InputError(f"--alm {alm_model!r}: no ALM run of that name in the project; check `aglw` imports")
        if alm_model is None and runs:
            alm_model = alm_by_id.get(runs[-1].alm_run_id)
        runs = [r for r in runs if alm_by_id.get(r.alm_run_id) == alm_model]
        run_ids = [r.id for r in runs]
        judgments = s.exec(select(Judgment).where(Judgment.judge_run_id.in_(run_ids))).all() if run_ids else []
        annotators = s.exec(select(Annotator).order_by(Annotator.id)).all()
        category_labels = s.exec(select(CategoryLabel)).all()
        clip_labels = s.exec(select(ClipLabel)).all()
        from workbench.project import latest_curation_run_id

        curation_id = latest_curation_run_id(s)
        curation = s.get(CurationRun, curation_id) if curation_id is not None else None
        fitted = clip_results = []
        if curation is not None:
            fitted = s.exec(select(CurationCategoryResult).where(CurationCategoryResult.run_id == curation.id)).all()
            clip_results = s.exec(select(CurationClipResult).where(CurationClipResult.run_id == curation.id)).all()
        from workbench.project import speech_probabilities

        speech_probability = speech_probabilities(s)

    key_of = {c.id: c.key for c in clips}
    rows: list[tuple] = []
    retest_rows: list[tuple] = []

    def unit_of(clip_id: int, category_id: str | None) -> str:
        return f"{key_of[clip_id]}|{category_id}" if category_id is not None else key_of[clip_id]

    # judges: the standing judgment (the one rule, workbench.project.judgment_standing) is the
    # rating when it is ok; ok answers of the judge's earlier runs are re-tests
    from workbench.project import EARLIER_RUN, STANDING, judgment_standing

    judge_of = {r.id: r.judge_name for r in runs}
    standing = judgment_standing(
        (j.id, j.judge_run_id, judge_of[j.judge_run_id], None, j.clip_id, j.category_id) for j in judgments
    )
    for j in sorted(judgments, key=lambda j: j.id):
        if j.status != "ok" or standing[j.id] not in (STANDING, EARLIER_RUN):
            continue
        target, extra = (rows, ()) if standing[j.id] == STANDING else (retest_rows, (j.judge_run_id,))
        for label, value in (("contribution", j.contribution), ("effect", j.effect)):
            if value is not None:
                target.append(
                    (j.clip_id, key_of[j.clip_id], j.category_id, unit_of(j.clip_id, j.category_id),
                     f"judge:{judge_of[j.judge_run_id]}", "judge", label, value) + extra
                )

    rater_of: dict[int, str] = {}
    annotator_info = []
    for a in annotators:
        rater_of[a.id] = f"expert:{a.name if reveal_annotators else a.pseudonym}"
        annotator_info.append({"id": a.id, "name": a.name, "pseudonym": a.pseudonym, "rater": rater_of[a.id]})
    for cl in category_labels:
        for label, value in (("contribution", cl.contribution), ("effect", cl.effect), ("polarity", cl.polarity)):
            if value is not None:
                rows.append(
                    (cl.clip_id, key_of[cl.clip_id], cl.category_id, unit_of(cl.clip_id, cl.category_id),
                     rater_of[cl.annotator_id], "expert", label, value)
                )
    for cl in clip_labels:
        for label, value in (("rating", cl.rating), ("decision", cl.decision)):
            if value is None or (label == "decision" and value == "unsure"):
                continue
            rows.append((cl.clip_id, key_of[cl.clip_id], None, unit_of(cl.clip_id, None), rater_of[cl.annotator_id], "expert", label, value))

    if curation is not None:
        polarity_of = {f.category_id: f.fitted_polarity for f in fitted if f.fitted_polarity in ("P", "N", "neutral")}
        polarity_units = {(r[0], r[2]) for r in rows if r[6] == "polarity"}
        for clip_id, category_id in sorted(polarity_units):
            if category_id in polarity_of:
                rows.append((clip_id, key_of[clip_id], category_id, unit_of(clip_id, category_id), "curation_fit",
                             "derived", "polarity", polarity_of[category_id]))
        for result in clip_results:
            base = (result.clip_id, key_of[result.clip_id], None, unit_of(result.clip_id, None), "curation_fit", "derived")
            rows.append(base + ("localizability", float(result.localizability)))
            rows.append(base + ("decision", "accept" if result.candidate else "reject"))

    ratings = pd.DataFrame(rows, columns=RATING_COLUMNS) if rows else _empty_ratings()
    retest = pd.DataFrame(retest_rows, columns=RATING_COLUMNS + ["judge_run_id"]) if retest_rows else pd.DataFrame(
        columns=RATING_COLUMNS + ["judge_run_id"]
    )

    clip_table = pd.DataFrame(
        {
            "clip_id": [c.id for c in clips],
            "clip_key": [c.key for c in clips],
            "continent": [c.continent or "unknown" for c in clips],
            "speech": [bool(is_speech_clip(c.human_sounds, speech_probability.get(c.id))) for c in clips],
        }
    )
    return RatingData(
        ratings=add_derived_raters(ratings),
        retest=retest,
        clips=clip_table,
        judge_runs=[
            {"id": r.id, "judge_name": r.judge_name, "provider": r.provider, "model_id": r.model_id,
             "prompt_version": r.prompt_version, "created_at": str(r.created_at)}
            for r in runs
        ],
        annotators=annotator_info,
        curation_run_id=curation.id if curation is not None else None,
        alm_model=alm_model,
    )


def majority_per_unit(subset: pd.DataFrame) -> pd.Series:
    """The most frequent value per unit of long rows (unit, value); units with a tie are left out."""
    counts = pd.crosstab(subset["unit"], subset["value"].astype(str))
    ordered = np.sort(counts.to_numpy(), axis=1)
    unique_top = ordered[:, -1] > (ordered[:, -2] if ordered.shape[1] > 1 else 0)
    winners = counts.columns.to_numpy()[counts.to_numpy().argmax(axis=1)]
    return pd.Series(winners, index=counts.index)[unique_top]


def add_derived_raters(ratings: pd.DataFrame) -> pd.DataFrame:
    """Append judge_majority / judge_mean and expert_consensus rows (pure).

    Nominal labels get the majority value (ties missing), ordinal labels the mean.
    """
    frames = [ratings]
    for kind in ("judge", "expert"):
        part = ratings[ratings["rater_kind"] == kind]
        for label in ("contribution", "effect", "polarity", "rating", "decision"):
            subset = part[part["label"] == label]
            if subset.empty or (kind == "expert" and subset["rater"].nunique() < 2):
                continue  # a single expert is already their own consensus
            if LABELS[label][0] == "nominal":
                combined = majority_per_unit(subset)
                rater = "judge_majority" if kind == "judge" else "expert_consensus"
            else:
                combined = subset.assign(value=subset["value"].astype(float)).groupby("unit")["value"].mean()
                rater = "judge_mean" if kind == "judge" else "expert_consensus"
            meta = subset.drop_duplicates("unit").set_index("unit")[["clip_id", "clip_key", "category_id"]]
            frame = meta.loc[combined.index].reset_index()
            frame["rater"] = rater
            frame["rater_kind"] = "derived"
            frame["label"] = label
            frame["value"] = combined.to_numpy(dtype=object)
            frames.append(frame[RATING_COLUMNS])
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else ratings.reset_index(drop=True)


def category_root_column(ratings: pd.DataFrame, category_roots: Mapping[str, str] | None) -> pd.Series:
    """The AudioSet root of each row's category ('unmapped' when unknown, None for clip units)."""
    if category_roots is None:
        return pd.Series([None] * len(ratings), index=ratings.index, dtype=object)
    return ratings["category_id"].map(lambda c: None if c is None or pd.isna(c) else category_roots.get(c, "unmapped"))
