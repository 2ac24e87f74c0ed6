"""Select M clips from a curation run, stratified by speech and continent (design doc section 7).

Rules (in this order):

1. **Eligible** clips are the run's candidates (l_k > θ) plus expert accepts,
   minus expert rejects and minus clips with a quality flag no expert has
   overruled (an accept does not lift a quality flag: overrule the flag).
2. **Accepts are always in**. If more clips are accepted than M, the M
   accepted clips with the highest l_k are taken and nothing else.
3. **Every continent** present among the eligible clips gets at least one
   clip, while slots remain: continents without a clip yet, in order of
   their best score, each contribute their best clip, taken from whichever
   speech stratum is further below its target.
4. **Speech balance**: each stratum (speech / no speech) is filled by rank up
   to half of M (the larger half going to speech when M is odd); a stratum
   that runs out of clips leaves its slots to the other one, filled by rank.

A clip has speech when its Speech tag (``/m/09x0r``) is ≥ τ, or its AGL1K
``human_sounds`` value is ≥ 0.1. A clip with no continent counts under
``unknown``, which is not a continent to represent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select as sql_select

from storage import Store
from storage.models import AlmRun, Clip, Selection
from workbench.audio.quality import stored_flag_name
from workbench.curation import runs
from workbench.curation.inputs import gather_inputs
from workbench.curation.model import FitParameters
from workbench.curation.stored import run_to_select_from, selection_to_export
from workbench.project import speech_probabilities
from workbench.speech import is_speech_clip
from workbench.errors import AglwError

UNKNOWN_CONTINENT = "unknown"


@dataclass
class SelectionPlan:
    """The chosen clips (best first) and counts per stratum."""

    clips: list[Any]
    counts: dict[str, Any]
    excluded: dict[str, int] = field(default_factory=dict)


def select_clips(pool: pd.DataFrame, size: int) -> SelectionPlan:
    """Pick ``size`` clips following the module's rules.

    Parameters
    ----------
    pool
        Indexed by clip, columns ``localizability`` (float), ``candidate``
        (bool), ``speech`` (bool), ``continent`` (str or None), ``decision``
        (accept / reject / unsure / None), ``quality_blocked`` (bool).
    size
        M, the number of clips wanted (≥ 1).
    """
    if size < 1:
        raise ValueError(f"the selection size must be ≥ 1, got {size}")
    decision = pool["decision"].fillna("")
    accepted = decision == "accept"
    rejected = decision == "reject"
    blocked = pool["quality_blocked"].astype(bool)
    eligible = (pool["candidate"].astype(bool) | accepted) & ~rejected & ~blocked
    excluded = {
        "rejected": int(rejected.sum()),
        "quality_flagged": int((blocked & ~rejected).sum()),
        "below_theta": int((~pool["candidate"].astype(bool) & ~accepted & ~rejected & ~blocked).sum()),
    }
    ranked = pool[eligible].assign(
        continent=pool.loc[eligible, "continent"].fillna("").replace("", UNKNOWN_CONTINENT),
        accepted=accepted[eligible],
    )
    # rank by score, then key order, so equal scores give a reproducible choice
    ranked = ranked.iloc[np.lexsort((np.arange(len(ranked)), -ranked["localizability"].to_numpy()))]

    chosen: list[Any] = list(ranked.index[ranked["accepted"].to_numpy()][:size])
    taken = set(chosen)
    speech_target = (size + 1) // 2
    targets = {True: speech_target, False: size - speech_target}

    def stratum_count(speech: bool) -> int:
        return int(ranked.loc[chosen, "speech"].astype(bool).eq(speech).sum()) if chosen else 0

    represented = set(ranked.loc[chosen, "continent"]) if chosen else set()
    continents = [c for c in ranked["continent"].drop_duplicates() if c != UNKNOWN_CONTINENT]
    for continent in continents:
        if len(chosen) >= size:
            break
        if continent in represented:
            continue
        options = ranked[(ranked["continent"] == continent) & ~ranked.index.isin(taken)]
        deficits = {s: targets[s] - stratum_count(s) for s in (True, False)}
        preferred = max((True, False), key=lambda s: deficits[s])
        in_preferred = options[options["speech"].astype(bool) == preferred]
        pick = (in_preferred if len(in_preferred) else options).index[0]
        chosen.append(pick)
        taken.add(pick)
        represented.add(continent)

    for speech in (True, False):
        room = targets[speech] - stratum_count(speech)
        if room <= 0 or len(chosen) >= size:
            continue
        options = ranked[(ranked["speech"].astype(bool) == speech) & ~ranked.index.isin(taken)]
        picks = list(options.index[: min(room, size - len(chosen))])
        chosen.extend(picks)
        taken.update(picks)
    if len(chosen) < size:
        rest = list(ranked.index[~ranked.index.isin(taken)][: size - len(chosen)])
        chosen.extend(rest)

    final = ranked.loc[chosen]
    final = final.iloc[np.lexsort((np.arange(len(final)), -final["localizability"].to_numpy()))]
    speech_flags = final["speech"].astype(bool)
    counts = {
        "size_requested": size,
        "selected": len(final),
        "eligible": int(eligible.sum()),
        "accepted_in": int(final["accepted"].sum()),
        "speech": int(speech_flags.sum()),
        "no_speech": int((~speech_flags).sum()),
        "by_continent": {str(k): int(v) for k, v in final["continent"].value_counts().sort_index().items()},
        "by_stratum": {
            f"{'speech' if s else 'no_speech'}|{c}": int(n)
            for (s, c), n in final.groupby([speech_flags, final["continent"]]).size().items()
        },
        "continents_in_pool": sorted(continents),
        "continents_missing": sorted(set(continents) - set(final["continent"])),
    }
    return SelectionPlan(clips=list(final.index), counts=counts, excluded=excluded)


def accepted_left_out(pool: pd.DataFrame, chosen: list[Any], keys: pd.Series, size: int) -> list[dict[str, Any]]:
    """Every clip with an expert "accept" that the selection left out, with why.

    An accept does not lift a quality flag (the flag must be overruled: ``aglw quality
    overrule``); with more eligible accepts than ``size`` the lower-ranked accepts stay out.
    """
    from workbench.audio.quality import describe_flag

    taken = set(chosen)
    out: list[dict[str, Any]] = []
    accepted = pool.index[pool["decision"].fillna("").eq("accept").to_numpy()]
    for clip in accepted:
        if clip in taken:
            continue
        flags = list(pool.at[clip, "unresolved_flags"] or []) if "unresolved_flags" in pool else []
        if flags:
            reason = ("unresolved quality flag(s): " + "; ".join(describe_flag(f) for f in flags)
                      + " — an accept does not lift a flag; overrule it with `aglw quality overrule`")
        else:
            reason = f"more eligible accepts than --size {size}; accepts are taken by localizability, best first"
        out.append({"key": str(keys.at[clip]), "reason": reason, "flags": [stored_flag_name(f) for f in flags]})
    return sorted(out, key=lambda r: r["key"])


def left_out(pool: pd.DataFrame, chosen: list[Any], keys: pd.Series) -> list[dict[str, Any]]:
    """Every clip of the pool the selection left out, by key, with why: ``rejected`` (an expert's
    reject), ``quality_flagged`` (flags no expert overruled: ``flags`` names them, ``detail``
    gives their values), ``below_theta`` (not a candidate, not accepted) or ``not_chosen``
    (eligible, but the M slots went to better-ranked clips or to another stratum or continent)."""
    from workbench.audio.quality import describe_flag

    taken = set(chosen)
    decision = pool["decision"].fillna("")
    out: list[dict[str, Any]] = []
    for clip in pool.index:
        if clip in taken:
            continue
        flags = list(pool.at[clip, "unresolved_flags"] or []) if "unresolved_flags" in pool else []
        entry: dict[str, Any] = {"key": str(keys.at[clip]), "flags": [stored_flag_name(f) for f in flags]}
        if decision.at[clip] == "reject":
            entry["reason"] = "rejected"
        elif pool.at[clip, "quality_blocked"]:
            entry["reason"] = "quality_flagged"
            entry["detail"] = "; ".join(describe_flag(f) for f in flags)
        elif not pool.at[clip, "candidate"] and decision.at[clip] != "accept":
            entry["reason"] = "below_theta"
        else:
            entry["reason"] = "not_chosen"
        out.append(entry)
    return sorted(out, key=lambda r: r["key"])


@dataclass(frozen=True)
class SelectionResult:
    selection_id: int
    run_id: int | None  # None only for a stored selection whose run was removed
    keys: list[str]
    counts: dict[str, Any]
    # every clip of the run left out, with why (see :func:`left_out`); not stored with the selection
    left_out: list[dict[str, Any]] = field(default_factory=list)


def make_selection(store: Store, size: int, *, run_id: int | None = None) -> SelectionResult:
    """Select ``size`` clips from a stored run (default: the latest) and store the Selection.

    Decisions and quality overrules are read as they are now, so a clip
    accepted or rejected after the fit is honoured without a refit.
    """
    # refused (with what to run first) when no run is stored or the run fitted no category
    run_id = run_to_select_from(store, run_id)
    pool, keys, params = selection_pool(store, run_id)
    try:
        plan = select_clips(pool, size)
    except ValueError as exc:
        raise AglwError(str(exc)) from exc
    plan.counts["excluded"] = plan.excluded
    plan.counts["accepted_left_out"] = accepted_left_out(pool, plan.clips, keys, size)
    everyone_left_out = left_out(pool, plan.clips, keys)
    keys = [str(keys.at[c]) for c in plan.clips]
    with store.write() as s:
        row = Selection(
            run_id=run_id, size=size, parameters={"size": size, "run_id": run_id, **params.to_dict()},
            clip_ids=[int(c) for c in plan.clips], counts=plan.counts,
        )
        s.add(row)
        s.flush()
        selection_id = int(row.id)
    return SelectionResult(selection_id=selection_id, run_id=run_id, keys=keys, counts=plan.counts,
                           left_out=everyone_left_out)


@dataclass(frozen=True)
class StoredSelection:
    """One stored selection as listed (``aglw select`` or the cockpit made it)."""

    id: int
    run_id: int | None
    size: int
    n_selected: int
    created_at: datetime


def list_selections(store: Store) -> list[StoredSelection]:
    """Every stored selection, newest first."""
    with store.session() as s:
        rows = s.scalars(sql_select(Selection).order_by(Selection.id.desc())).all()
        return [
            StoredSelection(id=int(r.id), run_id=r.run_id, size=int(r.size), n_selected=len(r.clip_ids or []),
                            created_at=r.created_at)
            for r in rows
        ]


def stored_selection(session: Any, selection_id: int | None = None) -> Selection:
    """The stored selection ``selection_id`` (default: the latest): what the Selection view,
    ``export selection`` and the cockpit all mean by "the selection"."""
    selection_id = selection_to_export(session, selection_id)  # refused with what to run first
    return session.scalars(sql_select(Selection).where(Selection.id == selection_id)).one()


def load_selection(store: Store, selection_id: int | None = None) -> SelectionResult:
    """A stored selection (default: the latest) as the :class:`SelectionResult` that made it.

    Keys come in the stored order (best localizability first); a clip deleted since is left out.
    """
    with store.session() as s:
        row = stored_selection(s, selection_id)
        clip_ids = [int(c) for c in row.clip_ids or []]
        key_of = dict(s.execute(sql_select(Clip.id, Clip.key).where(Clip.id.in_(clip_ids))).all()) if clip_ids else {}
        return SelectionResult(
            selection_id=int(row.id), run_id=row.run_id, keys=[str(key_of[c]) for c in clip_ids if c in key_of],
            counts=dict(row.counts or {}),
        )


def _reference_alm(store: Store, info: Any) -> str | None:
    """The ALM a stored run was fitted against: its ``alm_model`` parameter, else the model of
    its ``alm_run_id`` (runs written without the parameter). Without either the project's only
    judged ALM is used, as ``gather_inputs`` decides; a second ALM imported later must not make
    an older run unreadable."""
    model = info.parameters.get("alm_model")
    if model is None and info.alm_run_id is not None:
        with store.session() as s:
            run = s.get(AlmRun, info.alm_run_id)
            model = run.model if run is not None else None
    return model


def selection_pool(store: Store, run_id: int) -> tuple[pd.DataFrame, pd.Series, FitParameters]:
    """The pool :func:`select_clips` draws from for stored run ``run_id``, as it is now.

    Returns
    -------
    (pool, keys, params)
        The pool (columns as :func:`select_clips` documents), clip id → key, and the run's parameters.
    """
    info = runs.run_info(store, run_id)
    params = FitParameters.from_dict(info.parameters)
    clips = runs.load_run_clips(store, run_id)
    inputs = gather_inputs(store, _reference_alm(store, info))
    # Speech as the fit saw it: the tags of the fit's tagger run, at the fit's τ (the one rule).
    tagger_run_id = info.summary.get("inputs", {}).get("tagger_run_id")
    speech_probability: dict[int, float] = {}
    if tagger_run_id is not None:
        with store.session() as s:
            speech_probability = speech_probabilities(s, tagger_run_id=int(tagger_run_id))
    # the flags each clip has now (the one owner, with the run's cut-offs), less those the experts overrule now
    from workbench.audio.flags import quality_flags_now
    from workbench.curation.model import quality_thresholds

    flags_now = quality_flags_now(store, quality_thresholds(params))
    unresolved = pd.Series(
        [[f for f in flags_now.of(clip) if not inputs.flag_overruled(clip, f["flag"])] for clip in clips.index],
        index=clips.index, dtype=object,
    )
    pool = pd.DataFrame(
        {
            "localizability": clips["localizability"],
            "candidate": clips["candidate"],
            "speech": [
                bool(is_speech_clip(None if pd.isna(h) else float(h), speech_probability.get(clip), tag_threshold=params.tau))
                for clip, h in zip(clips.index, clips["human_sounds"])
            ],
            "continent": clips["continent"],
            "decision": inputs.decisions.reindex(clips.index),
            "quality_blocked": unresolved.map(bool),
            "unresolved_flags": unresolved,
        },
        index=clips.index,
    ).sort_index()
    return pool, clips["key"].astype(str), params
