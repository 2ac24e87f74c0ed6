"""How stable is the selection?  Sweep θ, α and γ and compare each setting's candidate set with the stored run.

AGL1K never ablated its thresholds.  For every (γ, α) the curation model is refitted (category
a/ā and polarity, then each clip's localizability l_k) and, for every θ, the candidate set
{k : l_k > θ} is compared with the stored run's candidates: Jaccard overlap, size, continent
and speech balance, and which categories flip between P and N.

Only γ and α change the fit; θ only moves the threshold, so a sweep costs one fit per (γ, α)
and the θ axis is a vectorised comparison.  The detected categories, consensus contributions,
ALM errors and expert overrides are read once and held fixed (those of the stored run's ALM
and parameters), which is what makes 10 × 10 × 10 settings on 1,444 clips take seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.curation import model
from workbench.curation.model import FitParameters
from workbench.errors import InputError

if TYPE_CHECKING:
    from storage import Store
    from workbench.tasks import TaskContext

SWEEP_COLUMNS = [
    "gamma_km", "alpha", "theta", "n_selected", "jaccard", "n_added", "n_removed", "speech_share",
    "n_flipped", "flipped",
]


@dataclass
class SweepInputs:
    """What a sweep holds fixed (plain data: usable without a store)."""

    frame: pd.DataFrame  # clip, category, x, error_km (the fit frame)
    clips: pd.Index  # every clip of the pool
    continent: pd.Series  # clip → continent
    speech: pd.Series  # clip → bool
    base: FitParameters
    reference_candidates: set  # the stored run's candidate clips
    reference_polarity: pd.Series  # category → P/N/neutral/insufficient of the stored run
    category_overrides: dict[str, str] = field(default_factory=dict)
    clip_overrides: pd.DataFrame | None = None
    # The latest selection stored from the run (`aglw select`): its size and id; None without one.
    selection_size: int | None = None
    selection_id: int | None = None


@dataclass
class SweepResult:
    """The sweep's table (one row per setting, ``SWEEP_COLUMNS`` + ``share:<continent>``) and its axes."""

    table: pd.DataFrame
    gammas: list[float]
    alphas: list[float]
    thetas: list[float]
    reference: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"gammas": self.gammas, "alphas": self.alphas, "thetas": self.thetas, "reference": self.reference,
                "settings": self.table.to_dict(orient="records")}


def parse_grid(text: str, name: str) -> list[float]:
    """A grid from ``start:stop:count`` (evenly spaced, ``log`` suffix for geometric) or ``a,b,c``.

    Raises
    ------
    InputError
        The text is neither form, or the count is below 1.
    """
    text = text.strip()
    try:
        if ":" in text:
            parts = text.split(":")
            geometric = len(parts) == 4 and parts[3] == "log"
            if len(parts) not in (3, 4) or (len(parts) == 4 and not geometric):
                raise ValueError
            start, stop, count = float(parts[0]), float(parts[1]), int(parts[2])
            if count < 1:
                raise ValueError
            values = np.geomspace(start, stop, count) if geometric else np.linspace(start, stop, count)
            return [float(v) for v in values]
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(
            f"--{name} {text!r}: give start:stop:count (e.g. 0:0.2:10, or 250:4000:10:log) or a comma list") from None


def sweep(
    inputs: SweepInputs,
    gammas: Sequence[float],
    alphas: Sequence[float],
    thetas: Sequence[float],
    task: TaskContext | None = None,
) -> SweepResult:
    """Refit for every (γ, α), threshold at every θ, and compare with the stored run.

    Returns
    -------
    SweepResult
        ``len(gammas) × len(alphas) × len(thetas)`` rows.
    """
    if not (len(gammas) and len(alphas) and len(thetas)):
        raise InputError("every sweep axis needs at least one value")
    clips = inputs.clips
    n = len(clips)
    reference = np.isin(clips.to_numpy(), list(inputs.reference_candidates))
    continents = inputs.continent.reindex(clips).fillna("unknown").astype(str)
    continent_names = sorted(continents.unique())
    continent_masks = {c: (continents == c).to_numpy() for c in continent_names}
    speech = inputs.speech.reindex(clips).fillna(False).astype(bool).to_numpy()
    ref_polarity = inputs.reference_polarity
    theta_array = np.asarray(thetas, dtype=float)
    rows: list[dict[str, Any]] = []
    if task is not None:
        task.set_total(len(gammas) * len(alphas))
    for gamma in gammas:
        for alpha in alphas:
            if task is not None:
                task.check_cancel()
            try:
                params = replace(inputs.base, gamma_km=float(gamma), alpha=float(alpha))
            except ValueError as exc:
                raise InputError(f"sweep setting γ = {gamma}, α = {alpha}: {exc}") from None
            categories = model.fit_categories(inputs.frame, params, inputs.category_overrides)
            scores = model.localizability(inputs.frame, categories, clips, inputs.clip_overrides).to_numpy()
            polarity = categories["polarity"]
            both = polarity.index.intersection(ref_polarity.index)
            old, new = ref_polarity[both], polarity[both]
            flipped = sorted(str(c) for c in both[((old == "P") & (new == "N")) | ((old == "N") & (new == "P"))])
            selected = scores[None, :] > theta_array[:, None]  # θ × clips
            sizes = selected.sum(axis=1)
            inter = (selected & reference).sum(axis=1)
            union = (selected | reference).sum(axis=1)
            speech_count = (selected & speech).sum(axis=1)
            shares = {c: (selected & m).sum(axis=1) for c, m in continent_masks.items()}
            for t, theta in enumerate(theta_array):
                size = int(sizes[t])
                row = {
                    "gamma_km": float(gamma), "alpha": float(alpha), "theta": float(theta), "n_selected": size,
                    "jaccard": float(inter[t] / union[t]) if union[t] else 1.0,
                    "n_added": int(size - inter[t]), "n_removed": int(reference.sum() - inter[t]),
                    "speech_share": float(speech_count[t] / size) if size else float("nan"),
                    "n_flipped": len(flipped), "flipped": " ".join(flipped),
                }
                for c in continent_names:
                    row[f"share:{c}"] = float(shares[c][t] / size) if size else float("nan")
                rows.append(row)
            if task is not None:
                task.advance()
    table = pd.DataFrame(rows)
    ref_size = int(reference.sum())
    return SweepResult(
        table=table, gammas=[float(g) for g in gammas], alphas=[float(a) for a in alphas],
        thetas=[float(t) for t in thetas],
        reference={
            "gamma_km": inputs.base.gamma_km, "alpha": inputs.base.alpha, "theta": inputs.base.theta,
            # n_selected counts the stored run's candidates (l > θ), which every setting is compared
            # with; the stored selection (`aglw select`) is a sample of them, counted apart.
            "n_selected": ref_size, "n_candidates": ref_size, "n_clips": n,
            "n_stored_selection": inputs.selection_size, "selection_id": inputs.selection_id,
            "speech_share": float(speech[reference].mean()) if ref_size else None,
            **{f"share:{c}": float(m[reference].mean()) if ref_size else None for c, m in continent_masks.items()},
        },
    )


def default_thetas(scores: pd.Series, stored_theta: float, count: int = 10) -> list[float]:
    """θ values: the stored θ plus evenly spaced quantiles (5 %–95 %) of the stored run's l_k."""
    quantiles = np.quantile(scores.to_numpy(dtype=float), np.linspace(0.05, 0.95, max(count - 1, 1))) if len(
        scores) else np.zeros(0)
    values = sorted({round(float(v), 6) for v in quantiles} | {float(stored_theta)})
    return values[:count] if len(values) > count else values


def load_sweep_inputs(store: Store, run_id: int | None = None,
                      roots_of: Mapping[str, list[str]] | None = None) -> tuple[SweepInputs, pd.Series]:
    """The fixed part of a sweep from the project: the stored run (default the latest) and its inputs.

    Returns the inputs and the stored run's l_k (for the default θ grid).
    """
    from workbench.curation import runs, service
    from workbench.curation.inputs import gather_inputs
    from workbench.speech import SPEECH_CLASS_ID, is_speech_clip

    run_id = run_id if run_id is not None else runs.latest_run_id(store)
    if run_id is None:
        raise InputError("no stored curation run to compare with; run `aglw fit` first")
    info = runs.run_info(store, run_id)
    base = FitParameters.from_dict(info.parameters)
    inputs = gather_inputs(store, info.parameters.get("alm_model") or None)
    frame = service.build_fit_frame(inputs, base, roots_of)
    stored = runs.load_run_clips(store, run_id)
    result = runs.stored_fit(store, run_id)
    assert result is not None
    polarity = pd.Series({c.id: c.polarity for c in result.categories}, dtype=object)
    speech_tag = inputs.tags[inputs.tags["category"] == SPEECH_CLASS_ID].set_index("clip")["probability"] if len(
        inputs.tags) else pd.Series(dtype=float)
    speech = pd.Series(
        {clip: bool(is_speech_clip(None if pd.isna(h) else float(h),
                                   None if clip not in speech_tag.index else float(speech_tag[clip]),
                                   tag_threshold=base.tau))
         for clip, h in inputs.clips["human_sounds"].items()}, dtype=bool)
    selection = _stored_selection(store, run_id)
    return SweepInputs(
        frame=frame, clips=inputs.clips.index, continent=inputs.clips["continent"], speech=speech, base=base,
        reference_candidates=set(stored.index[stored["candidate"]]), reference_polarity=polarity,
        category_overrides=dict(inputs.category_polarity), clip_overrides=inputs.clip_polarity,
        selection_size=None if selection is None else selection[1],
        selection_id=None if selection is None else selection[0],
    ), stored["localizability"]


def _stored_selection(store: Store, run_id: int) -> tuple[int, int] | None:
    """(id, number of clips) of the latest selection stored from the run, or None."""
    from sqlmodel import select

    from storage.models import Selection

    with store.session() as s:
        row = s.exec(select(Selection).where(Selection.run_id == run_id).order_by(Selection.id.desc())).first()  # type: ignore[union-attr]
        if row is None:
            return None
        return int(row.id), len(row.clip_ids or [])
