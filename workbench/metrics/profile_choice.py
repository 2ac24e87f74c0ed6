"""Which metric profile fits a model's dataset when the user names none (``datasets.md``).

The ``agl1k`` profile compares continents as AGL1K's labels write them; a dataset without such
labels (a pool whose continents the importer derived from the coordinates, or has none) is
scored with the ``iso`` profile, which compares ISO country codes and the continents they imply.
"""

from __future__ import annotations

from sqlalchemy import select

from storage import Store
from storage import tables as T
from workbench.metrics.core import Profile


def has_continent_labels(store: Store, model: str) -> bool:
    """Whether the model's answers are scored against given (not derived) continent labels: those
    of its linked clips, or, for records linked to no clip, the records' own true continents."""
    with store.read() as connection:
        clips = connection.execute(
            select(T.clip.c.continent, T.clip.c.derived)
            .join(T.prediction, T.prediction.c.clip_id == T.clip.c.id)
            .join(T.alm_run, T.alm_run.c.id == T.prediction.c.alm_run_id)
            .where(T.alm_run.c.model == model, T.clip.c.continent.is_not(None))
        ).all()
        if any("continent" not in (derived or []) for _, derived in clips):
            return True
        unlinked = connection.execute(
            select(T.prediction.c.true_continent)
            .join(T.alm_run, T.alm_run.c.id == T.prediction.c.alm_run_id)
            .where(T.alm_run.c.model == model, T.prediction.c.clip_id.is_(None), T.prediction.c.true_continent.is_not(None))
        ).scalars()
        return any(str(value).strip() for value in unlinked)


def default_profile(store: Store, model: str) -> Profile:
    """``agl1k`` when the model's dataset has AGL1K-style continent labels, else ``iso``."""
    return "agl1k" if has_continent_labels(store, model) else "iso"
