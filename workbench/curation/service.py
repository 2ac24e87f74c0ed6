"""Fit, store and preview curation runs (design doc curation-model.md section 6).

A *stored* fit writes one :class:`storage.models.CurationRun` with its
parameters and input fingerprint, one result row per category and per clip,
all in one transaction. A *preview* computes the same thing, may apply
"what if" overrides, and writes nothing. Both report a diff against the latest
stored run. Callers get plain dataclasses (:mod:`workbench.curation.runs` defines
them and reads stored runs back), never ORM rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy import insert

from storage import Store
from storage.models import CurationCategoryResult, CurationClipResult, CurationRun
from workbench.audio.flags import QualityFlagsNow, quality_flags_now
from workbench.curation import model
from workbench.curation.inputs import FitInputs, gather_inputs
from workbench.curation.model import POLARITIES, FitParameters, ThetaCalibration
from workbench.curation.runs import CategoryResult, ClipResult, FitResult, diff_against_latest
from workbench.errors import AglwError
from workbench.tasks import TaskContext


@dataclass
class WhatIf:
    """Hypothetical expert input for a preview (nothing is stored).

    Attributes
    ----------
    category_polarity
        Category id → P / N / neutral (e.g. ``{"/m/020bb7": "N"}``: "what if bird
        song were N?").
    clip_polarity
        (clip key, category id) → P / N / neutral.
    contributions
        (clip key, category id) → expert contribution on the 0–3 rubric; it
        replaces the consensus like a real expert label would.
    """

    category_polarity: dict[str, str] = field(default_factory=dict)
    clip_polarity: dict[tuple[str, str], str] = field(default_factory=dict)
    contributions: dict[tuple[str, str], float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "category_polarity": dict(self.category_polarity),
            "clip_polarity": [[k, c, p] for (k, c), p in self.clip_polarity.items()],
            "contributions": [[k, c, v] for (k, c), v in self.contributions.items()],
        }


# --------------------------------------------------------------------------- computing


@dataclass
class _Computed:
    categories: pd.DataFrame
    scores: pd.Series
    percentile: pd.Series
    candidate: pd.Series
    flags: dict[int, list[dict[str, Any]]]
    quality_pool: dict[str, Any]
    calibration: ThetaCalibration
    theta: float
    frame: pd.DataFrame


def _apply_what_if(inputs: FitInputs, what_if: WhatIf) -> FitInputs:
    id_of = {key: int(clip) for clip, key in inputs.clips["key"].items()}

    def clip_id(key: str) -> int:
        if key not in id_of:
            raise AglwError(f"what-if names clip {key!r}, which is not in the fit's pool")
        return id_of[key]

    for value in [*what_if.category_polarity.values(), *what_if.clip_polarity.values()]:
        if value not in POLARITIES:
            raise AglwError(f"what-if polarity must be P, N or neutral, got {value!r}")
    extra_scores = pd.DataFrame(
        [(clip_id(k), c, "what-if", float(v), True) for (k, c), v in what_if.contributions.items()],
        columns=["clip", "category", "annotator", "score", "adjudicator"],
    )
    if ((extra_scores["score"] < 0) | (extra_scores["score"] > 3)).any():
        raise AglwError("what-if contributions use the 0–3 rubric")
    extra_polarity = pd.DataFrame(
        [(clip_id(k), c, p) for (k, c), p in what_if.clip_polarity.items()], columns=["clip", "category", "polarity"]
    )
    expert = inputs.expert_scores
    if len(extra_scores):
        keys = pd.MultiIndex.from_frame(extra_scores[["clip", "category"]])
        expert = pd.concat(
            [expert[~pd.MultiIndex.from_frame(expert[["clip", "category"]]).isin(keys)], extra_scores],
            ignore_index=True,
        ) if len(expert) else extra_scores
    clip_polarity = pd.concat([inputs.clip_polarity, extra_polarity], ignore_index=True)
    return FitInputs(
        **{
            **inputs.__dict__,
            "expert_scores": expert,
            "clip_polarity": clip_polarity.drop_duplicates(["clip", "category"], keep="last"),
            "category_polarity": {**inputs.category_polarity, **what_if.category_polarity},
        }
    )


def build_fit_frame(
    inputs: FitInputs, params: FitParameters, roots_of: Mapping[str, list[str]] | None = None
) -> pd.DataFrame:
    """The long (clip, category, x, error_km) frame of a fit.

    Judge-sourced contributions count only for the clip's detected categories
    C_k when a tagger run exists; an expert's contribution counts whatever the
    tagger said (the expert heard the category).
    """
    contributions = model.consensus_contributions(inputs.judge_scores, inputs.expert_scores)
    if len(inputs.tags):
        detected = model.detected_categories(inputs.tags, params.tau, params.top_n)
        detected_keys = pd.MultiIndex.from_frame(detected[["clip", "category"]])
        is_detected = pd.MultiIndex.from_frame(contributions[["clip", "category"]]).isin(detected_keys)
        contributions = contributions[is_detected | (contributions["source"] == "expert").to_numpy()]
    contributions = contributions[["clip", "category", "x"]]
    if params.rollup == "root":
        if roots_of is None:
            raise AglwError("the root roll-up needs the AudioSet ontology; none was given")
        try:
            contributions = model.roll_up(contributions, roots_of)
        except ValueError as exc:
            raise AglwError(str(exc)) from exc
    return contributions.assign(error_km=contributions["clip"].map(inputs.errors).to_numpy(dtype=float))


def _compute(
    inputs: FitInputs,
    params: FitParameters,
    recalibrate: bool,
    roots_of: Mapping[str, list[str]] | None,
    flags_now: QualityFlagsNow,
) -> _Computed:
    frame = build_fit_frame(inputs, params, roots_of)
    try:
        categories = model.fit_categories(frame, params, inputs.category_polarity)
        scores = model.localizability(frame, categories, inputs.clips.index, inputs.clip_polarity)
    except ValueError as exc:
        raise AglwError(str(exc)) from exc
    calibration = model.recalibrate_theta(scores, inputs.decisions, inputs.ratings)
    theta = calibration.theta if (recalibrate and calibration.theta is not None) else params.theta
    return _Computed(
        categories=categories,
        scores=scores,
        percentile=model.percentiles(scores),
        candidate=scores > theta,
        # the flags the fit's clips have now, by the one owner (workbench/audio/flags.py)
        flags={int(clip): flags_now.of(clip) for clip in inputs.clips.index if flags_now.names(clip)},
        quality_pool=flags_now.pool,
        calibration=calibration,
        theta=float(theta),
        frame=frame,
    )


# --------------------------------------------------------------------------- public API


def fit(
    store: Store,
    params: FitParameters | None = None,
    *,
    alm_model: str | None = None,
    preview: bool = False,
    what_if: WhatIf | None = None,
    recalibrate_theta: bool = False,
    roots_of: Mapping[str, list[str]] | None = None,
    category_names: Mapping[str, str] | None = None,
    created_by: int | None = None,
    task: TaskContext | None = None,
) -> FitResult:
    """Fit the curation model on the project's current inputs.

    Parameters
    ----------
    store
        The project store.
    params
        Model parameters (defaults: the design doc's).
    alm_model
        Reference ALM (see :func:`workbench.curation.inputs.choose_alm_run`).
    preview
        Compute without storing anything.
    what_if
        Hypothetical overrides; only allowed with ``preview`` (a stored run
        must be reproducible from the stored labels its fingerprint names).
    recalibrate_theta
        Use the θ that best matches expert accept/reject decisions (when at
        least 20 clips carry one); the requested θ is kept in the summary.
    roots_of
        Class id → root ids, needed for ``rollup="root"``.
    category_names
        Category id → display name.
    created_by
        Annotator id recorded with a stored run.
    task
        Progress and cancel: the fit is one item, stored whole; a cancel before the run is
        stored leaves nothing (fitting again does it all).

    Returns
    -------
    FitResult
        With the diff against the latest stored run (None when there is none).

    Raises
    ------
    AglwError
        A stored fit (not a preview) where no category could be fitted: the message names what
        is missing and the command that supplies it (:func:`missing_inputs`); nothing is stored.
    """
    params = params or FitParameters()
    if what_if is not None and not preview:
        raise AglwError("what-if overrides are for previews only; record real labels to change a stored fit")
    task = task or TaskContext()
    task.set_total(1)
    inputs = gather_inputs(store, alm_model)
    task.check_cancel()
    if what_if is not None:
        inputs = _apply_what_if(inputs, what_if)
    computed = _compute(inputs, params, recalibrate_theta, roots_of,
                        quality_flags_now(store, model.quality_thresholds(params)))
    stored_params = {**params.to_dict(), "theta": computed.theta, "alm_model": inputs.alm_model}
    summary = _summary(inputs, computed, params, what_if)
    if summary["missing"] and not preview:
        # a run without a category gives every clip l = 0: a selection from it would be empty (issue 40)
        raise AglwError("no category could be fitted, so no run was stored: missing "
                        + "; missing ".join(summary["missing"])
                        + " (`aglw fit --preview` shows the fit without storing it)")
    names = dict(category_names or {})
    categories = [
        CategoryResult(
            id=str(category), name=names.get(str(category)), a=float(row.a), a_bar=float(row.a_bar),
            support=int(row.support), fitted_polarity=str(row.fitted_polarity), polarity=str(row.polarity),
            overridden=bool(row.overridden),
        )
        for category, row in computed.categories.iterrows()
    ]
    keys = inputs.clips["key"]
    clips = [
        ClipResult(
            clip_id=int(clip), key=str(key), localizability=float(score), percentile=float(percent),
            candidate=bool(candidate), quality_flags=_flags_with_overrule(computed.flags.get(clip), clip, inputs),
        )
        for clip, key, score, percent, candidate in zip(
            inputs.clips.index, keys.to_numpy(), computed.scores.to_numpy(), computed.percentile.to_numpy(),
            computed.candidate.to_numpy(),
        )
    ]
    diff = diff_against_latest(
        store, computed.categories["polarity"],
        pd.DataFrame({"localizability": computed.scores, "candidate": computed.candidate}),
    )
    run_id = None
    # The last safe point: from here the run is stored whole.
    task.check_cancel()
    if not preview:
        run_id = _store_run(store, inputs, stored_params, summary, categories, clips, created_by)
    task.item_done("curation run" if run_id is None else f"curation run {run_id}")
    return FitResult(
        run_id=run_id, parameters=stored_params, alm_model=inputs.alm_model,
        input_fingerprint=inputs.fingerprint, categories=categories, clips=clips, diff=diff, summary=summary,
    )


def _flags_with_overrule(flags: list[dict[str, Any]] | None, clip: int, inputs: FitInputs) -> list[dict[str, Any]]:
    if not flags:
        return []
    return [{**flag, "overruled": inputs.flag_overruled(clip, flag["flag"])} for flag in flags]


def missing_inputs(inputs: FitInputs) -> list[str]:
    """Why a fit found no category: what the project lacks, each with the command that supplies it.

    A category needs a tag (≥ τ among a clip's top tags) and a contribution from an LLM judge or
    an expert label on the same clip.
    """
    missing: list[str] = []
    if inputs.tagger_run_id is None or len(inputs.tags) == 0:
        missing.append("tags: no finished tagger run (run `aglw tag`)")
    if len(inputs.judge_scores) == 0 and len(inputs.expert_scores) == 0:
        missing.append("contributions: no LLM judge scores for the reference ALM "
                       f"{inputs.alm_model!r} (run `aglw judge`) and no expert labels (`aglw label set`)")
    if not missing:
        missing.append("overlap: no tagged category (probability ≥ τ among a clip's top tags) has a judge "
                       "or expert contribution on the same clip; check --tau and --top-n")
    return missing


def _summary(
    inputs: FitInputs, computed: _Computed, params: FitParameters, what_if: WhatIf | None
) -> dict[str, Any]:
    polarity_counts = computed.categories["polarity"].value_counts()
    errors = inputs.errors
    summary: dict[str, Any] = {
        "n_clips": int(len(inputs.clips)),
        "n_candidates": int(computed.candidate.sum()),
        "n_categories": int(len(computed.categories)),
        "n_positive": int(polarity_counts.get("P", 0)),
        "n_negative": int(polarity_counts.get("N", 0)),
        "n_error_undefined": int(errors.isna().sum()),
        "n_refusals": int((errors == model.REFUSAL_ERROR_KM).sum()),
        "n_quality_flagged": int(len(computed.flags)),
        # the pool the low_complexity cut-off is relative to (why_not: why it was not raised)
        "quality_pool": computed.quality_pool,
        "theta_requested": params.theta,
        "theta_used": computed.theta,
        "theta_calibration": computed.calibration.to_dict(),
        "inputs": inputs.fingerprint_detail,
        "missing": missing_inputs(inputs) if len(computed.categories) == 0 else [],
    }
    if what_if is not None:
        summary["what_if"] = what_if.to_dict()
    return summary


def _store_run(
    store: Store,
    inputs: FitInputs,
    parameters: dict[str, Any],
    summary: dict[str, Any],
    categories: list[CategoryResult],
    clips: list[ClipResult],
    created_by: int | None,
) -> int:
    with store.write() as s:
        run = CurationRun(
            parameters=parameters, input_fingerprint=inputs.fingerprint, alm_run_id=inputs.alm_run_id,
            summary=summary, created_by=created_by,
        )
        s.add(run)
        s.flush()
        run_id = int(run.id)
        if categories:
            s.execute(
                insert(CurationCategoryResult),
                [
                    {
                        "run_id": run_id, "category_id": c.id, "name": c.name, "a": c.a, "a_bar": c.a_bar,
                        "support": c.support, "fitted_polarity": c.fitted_polarity, "polarity": c.polarity,
                        "overridden": c.overridden,
                    }
                    for c in categories
                ],
            )
        if clips:
            s.execute(
                insert(CurationClipResult),
                [
                    {
                        "run_id": run_id, "clip_id": c.clip_id, "localizability": c.localizability,
                        "percentile": c.percentile, "candidate": c.candidate,
                        "quality_flags": c.quality_flags or None,
                    }
                    for c in clips
                ],
            )
    return run_id


__all__ = [
    "WhatIf", "build_fit_frame", "fit", "missing_inputs",
]
