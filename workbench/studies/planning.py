"""Planning a study: which annotator labels which clip, with a chosen overlap, balanced over strata.

Every clip is seen by exactly ``overlap`` different annotators; each annotator's share of every
stratum (continent × speech/non-speech) is as even as the counts allow; the plan is blind by
default (the review view hides judge output and other annotators' labels until the annotator has
labelled).  Only clips whose recording is usable (the one rule of :mod:`workbench.media`) are
drawn; the others are listed in the plan as excluded, with the reason.  Progress is read from the
labels themselves: a clip is done for an annotator once she has a stored, not undone, label on it
(category, clip, error mode or location guess; :func:`workbench.labels.labelled_pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import col, select

from storage import Store
from storage.models import Annotator, Clip, StudyAssignment, StudyPlan
from workbench.errors import InputError
from workbench.labels import labelled_pairs


def assign(clips: pd.DataFrame, annotators: Sequence[str], overlap: int, seed: int = 0) -> pd.DataFrame:
    """Assign clips to annotators (pure).

    Parameters
    ----------
    clips
        Columns ``clip_id``, ``stratum`` (e.g. "Europe/speech").
    annotators
        Annotator names (at least ``overlap``).
    overlap
        How many different annotators see each clip.
    seed
        Shuffles the clips inside each stratum (reproducibly).

    Returns
    -------
    DataFrame
        ``annotator``, ``clip_id``, ``stratum``, ``position`` (the annotator's order).

    Notes
    -----
    Clips are dealt stratum by stratum, each to the ``overlap`` annotators who hold the fewest
    clips of that stratum (then the fewest in all, then a rotating order), so both every
    annotator's load and her count per stratum differ from the others' by at most one.
    """
    names = list(dict.fromkeys(annotators))
    if overlap < 1:
        raise InputError(f"--overlap {overlap}: every clip needs at least one annotator")
    if len(names) < overlap:
        raise InputError(f"--overlap {overlap} needs at least {overlap} annotators, got {len(names)}")
    rng = np.random.default_rng(seed)
    total = dict.fromkeys(names, 0)
    rows: list[tuple[str, int, str]] = []
    turn = 0
    for stratum, part in sorted(clips.groupby("stratum", sort=True), key=lambda kv: str(kv[0])):
        per_stratum = dict.fromkeys(names, 0)
        ids = part["clip_id"].to_numpy()[rng.permutation(len(part))]
        for clip_id in ids:
            order = sorted(names, key=lambda n: (per_stratum[n], total[n], (names.index(n) - turn) % len(names)))
            for name in order[:overlap]:
                per_stratum[name] += 1
                total[name] += 1
                rows.append((name, int(clip_id), str(stratum)))
            turn += 1
    frame = pd.DataFrame(rows, columns=["annotator", "clip_id", "stratum"])
    # each annotator meets the strata interleaved, not one continent after another
    frame["_rank"] = frame.groupby(["annotator", "stratum"]).cumcount()
    frame = frame.sort_values(["annotator", "_rank", "stratum"]).drop(columns="_rank")
    frame["position"] = frame.groupby("annotator").cumcount()
    return frame.reset_index(drop=True)


@dataclass
class PlanSummary:
    """A stored plan and each annotator's progress."""

    name: str
    overlap: int
    blind: bool
    n_clips: int
    annotators: list[dict[str, Any]]
    # clips left out of the plan, as {key, reason} (no usable recording)
    excluded: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def clip_strata(store: Store, clip_keys: Sequence[str] | None, *,
                who: str = "a study plan") -> tuple[pd.DataFrame, list[dict[str, str]]]:
    """The clips to plan with their stratum, and those left out for want of a usable recording
    (``who`` draws the clips: the refusal without any names it)."""
    from workbench.agreement.units import load_ratings
    from workbench.media import clip_audio, dataset_roots

    clips = load_ratings(store).clips  # continent and the speech rule, once (workbench.speech)
    if clip_keys is not None:
        unknown = sorted(set(clip_keys) - set(clips["clip_key"]))
        if unknown:
            raise InputError(f"--clips: no clip with key {unknown[0]!r} in this project")
        clips = clips[clips["clip_key"].isin(set(clip_keys))]
    if clips.empty:
        raise InputError("no clips to plan; import a dataset first")
    roots = dataset_roots(store)
    with store.session() as s:
        stored = {int(i): (k, p, d) for i, k, p, d in s.exec(
            select(Clip.id, Clip.key, Clip.audio_path, Clip.dataset_id)
            .where(col(Clip.id).in_([int(c) for c in clips["clip_id"]])))}
    audio = {i: clip_audio(k, p, roots.get(d, [])) for i, (k, p, d) in stored.items()}
    usable = clips["clip_id"].map(lambda i: audio[int(i)].ok).astype(bool)
    excluded = [{"key": str(k), "reason": f"no usable recording ({audio[int(i)].state})"}
                for i, k in clips.loc[~usable, ["clip_id", "clip_key"]].itertuples(index=False)]
    clips = clips[usable]
    if clips.empty:
        raise InputError(f"none of the {len(excluded)} clips has a usable recording; link the audio first "
                         f"(aglw media link) — {who} draws only clips that can be listened to")
    speech = clips["speech"].map({True: "speech", False: "no speech"})
    return clips.assign(stratum=clips["continent"].astype(str) + "/" + speech), excluded


def create_plan(store: Store, name: str, annotators: Sequence[str], *, overlap: int = 2,
                clip_keys: Sequence[str] | None = None, blind: bool = True, seed: int = 0) -> PlanSummary:
    """Create and store a plan (annotators are created if new); one transaction.

    Raises
    ------
    InputError
        The name is taken, too few annotators for the overlap, or unknown clip keys.
    """
    from workbench.labels import LabelService

    name = name.strip()
    if not name:
        raise InputError("--name is empty; name the plan")
    with store.session() as s:
        if s.exec(select(StudyPlan).where(StudyPlan.name == name)).first() is not None:
            raise InputError(f"a plan called {name!r} exists already; choose another --name")
    clips, excluded = clip_strata(store, clip_keys)
    frame = assign(clips[["clip_id", "stratum"]], annotators, overlap, seed)
    labels = LabelService(store)
    ids = {n: labels.ensure_annotator(n).id for n in dict.fromkeys(annotators)}
    with store.write() as s:
        plan = StudyPlan(name=name, overlap=overlap, blind=blind,
                         parameters={"seed": seed, "strata": "continent x speech",
                                     "clips": "all" if clip_keys is None else len(clip_keys),
                                     "excluded": excluded})
        s.add(plan)
        s.flush()
        for row in frame.itertuples(index=False):
            s.add(StudyAssignment(plan_id=plan.id, annotator_id=ids[row.annotator], clip_id=int(row.clip_id),
                                  position=int(row.position)))
    return progress(store, name)


def _plan(s: Any, name: str | None) -> StudyPlan:
    query = select(StudyPlan).order_by(StudyPlan.created_at.desc(), StudyPlan.id.desc())
    if name is not None:
        query = select(StudyPlan).where(StudyPlan.name == name)
    plan = s.exec(query).first()
    if plan is None:
        known = ", ".join(p.name for p in s.exec(select(StudyPlan)).all())
        raise InputError(f"no study plan {name!r}; known: {known or 'none (aglw study plan first)'}"
                         if name else "no study plan yet; create one with `aglw study plan`")
    return plan


def plan_for_annotator(store: Store, annotator_id: int) -> tuple[str, bool] | None:
    """The latest plan that assigns clips to the annotator, as (name, blind); None when none does.

    The review window starts blind for an annotator whose plan says so.
    """
    with store.session() as s:
        plan = s.exec(select(StudyPlan).join(StudyAssignment, StudyAssignment.plan_id == StudyPlan.id)
                      .where(StudyAssignment.annotator_id == annotator_id)
                      .order_by(StudyPlan.created_at.desc(), StudyPlan.id.desc())).first()
        return None if plan is None else (plan.name, bool(plan.blind))


def plan_table(store: Store, name: str | None = None) -> tuple[StudyPlan, pd.DataFrame]:
    """The plan (default: the latest) as a table: annotator, pseudonym, clip_key, continent, speech, position, done."""
    with store.session() as s:
        plan = _plan(s, name)
        rows = s.exec(select(StudyAssignment, Annotator.name, Annotator.pseudonym, Clip.key, Clip.continent).join(
            Annotator, Annotator.id == StudyAssignment.annotator_id).join(Clip, Clip.id == StudyAssignment.clip_id)
            .where(StudyAssignment.plan_id == plan.id)).all()
        done = labelled_pairs(s)
    frame = pd.DataFrame(
        [(a.annotator_id, n, p, k, c or "unknown", a.position, (a.annotator_id, a.clip_id) in done)
         for a, n, p, k, c in rows],
        columns=["annotator_id", "annotator", "pseudonym", "clip_key", "continent", "position", "done"])
    return plan, frame.sort_values(["annotator", "position"]).reset_index(drop=True)


def progress(store: Store, name: str | None = None) -> PlanSummary:
    """Each annotator's assigned and done clips in a plan (default: the latest)."""
    plan, frame = plan_table(store, name)
    annotators = [
        {"annotator": a, "assigned": int(len(g)), "done": int(g["done"].sum()),
         "share_done": float(g["done"].mean()) if len(g) else 0.0,
         "next_clip": None if g["done"].all() else str(g.loc[~g["done"], "clip_key"].iloc[0])}
        for a, g in frame.groupby("annotator", sort=True)
    ]
    return PlanSummary(name=plan.name, overlap=plan.overlap, blind=plan.blind,
                       n_clips=int(frame["clip_key"].nunique()), annotators=annotators,
                       excluded=list((plan.parameters or {}).get("excluded", [])))
