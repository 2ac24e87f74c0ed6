"""Leaderboard metrics of the models stored in a project (reads the store, returns plain data)."""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd
from sqlalchemy import select

from storage import Store
from storage.models import AlmRun, Clip, Prediction
from workbench.errors import AglwError
from workbench.metrics.continents import continent_of_iso
from workbench.metrics.core import (
    METRIC_KEYS,
    PROFILES,
    Profile,
    compute_metrics,
    country_iso,
    normalize_continent_agl1k,
)
from workbench.speech import HUMAN_SOUNDS_THRESHOLD

GroupBy = Literal["continent", "speech"]
GROUP_BY_OPTIONS: tuple[str, ...] = ("continent", "speech")
# AGL1K's published speech split: human_sounds alone, at the threshold of the one speech rule.
SPEECH_THRESHOLD = HUMAN_SOUNDS_THRESHOLD
SPEECH = "speech"
NO_SPEECH = "no speech"
NO_CLIP = "(no clip)"
NO_CONTINENT = "(missing)"

_RECORD_COLUMNS = (
    "true_latitude",
    "true_longitude",
    "true_city",
    "true_country",
    "true_continent",
    "predicted_latitude",
    "predicted_longitude",
    "predicted_city",
    "predicted_country",
    "predicted_continent",
)


def model_names(store: Store) -> list[str]:
    """Names of the models with imported predictions, alphabetically."""
    with store.session() as session:
        return list(session.execute(select(AlmRun.model).order_by(AlmRun.model)).scalars())


def prediction_records(store: Store, model: str | None = None) -> pd.DataFrame:
    """Stored result records as a DataFrame (one row per record).

    Columns: ``model``, ``question_id``, the true/predicted fields, and ``human_sounds`` of the
    linked clip (NaN when the record has no clip).
    """
    columns = [getattr(Prediction, name) for name in _RECORD_COLUMNS]
    query = (
        select(AlmRun.model, Prediction.question_id, *columns, Clip.human_sounds)
        .join(AlmRun, AlmRun.id == Prediction.alm_run_id)
        .outerjoin(Clip, Clip.id == Prediction.clip_id)
        .order_by(AlmRun.model, Prediction.id)
    )
    if model is not None:
        query = query.where(AlmRun.model == model)
    with store.session() as session:
        rows = session.execute(query).all()
    names = ["model", "question_id", *_RECORD_COLUMNS, "human_sounds"]
    return pd.DataFrame([tuple(row) for row in rows], columns=names, dtype=object)


def _check_profile(profile: str) -> None:
    if profile not in PROFILES:
        raise AglwError(f"unknown metric profile {profile!r}; use one of {', '.join(PROFILES)}")


def model_metrics(store: Store, model: str, profile: Profile = "agl1k") -> dict[str, Any]:
    """Leaderboard metrics of one stored model.

    Parameters
    ----------
    store : Store
        The project store.
    model : str
        A model name given at ``import predictions``.
    profile : {"agl1k", "iso"}
        Metric profile (see :func:`workbench.metrics.core.compute_metrics`).

    Returns
    -------
    dict
        The :data:`~workbench.metrics.core.METRIC_KEYS`.

    Raises
    ------
    AglwError
        Unknown profile, or no predictions stored for ``model`` (the message lists the models).
    """
    _check_profile(profile)
    records = prediction_records(store, model)
    if records.empty:
        known = ", ".join(model_names(store)) or "none imported yet"
        raise AglwError(f"no predictions for model {model!r} (models: {known})")
    return compute_metrics(records, profile, model=model)


def _group_labels(records: pd.DataFrame, profile: str, by: str) -> pd.Series:
    if by == "speech":
        labels = [
            NO_CLIP if pd.isna(value) else (SPEECH if float(value) >= SPEECH_THRESHOLD else NO_SPEECH)
            for value in records["human_sounds"]
        ]
    elif profile == "iso":
        labels = [
            continent_of_iso(country_iso(country)) or normalize_continent_agl1k(continent) or NO_CONTINENT
            for country, continent in zip(records["true_country"], records["true_continent"], strict=True)
        ]
    else:
        labels = [normalize_continent_agl1k(v) or NO_CONTINENT for v in records["true_continent"]]
    return pd.Series(labels, index=records.index, dtype=object)


def leaderboard(
    store: Store, profile: Profile | Literal["both"] = "agl1k", by: GroupBy | None = None
) -> pd.DataFrame:
    """Metrics of every stored model, optionally per group of clips.

    Parameters
    ----------
    store : Store
        The project store.
    profile : {"agl1k", "iso", "both"}
        Metric profile; ``"both"`` gives one row per profile (compare them side by side).
    by : {None, "continent", "speech"}
        Group rows by the true continent (in the profile's sense: for ``iso`` the continent of
        the true country's ISO code) or by speech (linked clip's AGL1K ``human_sounds`` >= 0.1).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`METRIC_KEYS` plus ``group`` when ``by`` is given; sorted by group and
        ascending mean distance error. Empty when no model is stored.

    Raises
    ------
    AglwError
        Unknown profile or grouping.
    """
    profiles: tuple[str, ...] = PROFILES if profile == "both" else (profile,)
    for name in profiles:
        _check_profile(name)
    if by is not None and by not in GROUP_BY_OPTIONS:
        raise AglwError(f"unknown grouping {by!r}; use one of {', '.join(GROUP_BY_OPTIONS)}")
    records = prediction_records(store)
    columns = list(METRIC_KEYS) if by is None else ["group", *METRIC_KEYS]
    rows: list[dict[str, Any]] = []
    for model, model_records in records.groupby("model", sort=True):
        for name in profiles:
            if by is None:
                rows.append(compute_metrics(model_records, name, model=str(model)))
                continue
            labels = _group_labels(model_records, name, by)
            for group, group_records in model_records.groupby(labels, sort=True):
                rows.append(
                    {"group": group, **compute_metrics(group_records, name, model=str(model))}
                )
    table = pd.DataFrame(rows, columns=columns)
    sort_keys = (["group"] if by is not None else []) + ["profile", "distance_error_km", "model"]
    return table.sort_values(sort_keys, kind="stable", na_position="last").reset_index(drop=True)
