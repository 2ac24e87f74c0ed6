"""The read side of a project: what the store holds, named the way a person reads it.

Read commands (``label history``, ``judgments show``, ``clips show``, ``fit``) and views ask here
instead of each resolving names on their own, so a category is called the same everywhere.
"""

from __future__ import annotations

import logging

from sqlmodel import col, select

from storage import Store
from storage.models import Clip, CurationCategoryResult

log = logging.getLogger(__name__)


def category_names(store: Store) -> dict[str, str]:
    """AudioSet id → display name, from the local ontology (never downloaded here) and the stored fits.

    Ids the project uses that neither source names are simply absent: callers show the id.
    """
    from workbench.errors import InputError
    from workbench.tagging.ontology import load_local_ontology

    names: dict[str, str] = {}
    with store.session() as s:
        for category_id, name in s.exec(
            select(CurationCategoryResult.category_id, CurationCategoryResult.name).order_by(
                col(CurationCategoryResult.run_id)
            )
        ):
            if name:
                names[category_id] = name
    try:
        ontology = load_local_ontology()
    except InputError as exc:  # a damaged configured file: names from the store still serve
        log.warning("category names without the ontology: %s", exc)
        ontology = None
    if ontology is not None:
        names.update(ontology.names)
    return names


def clip_keys(store: Store, clip_ids: set[int]) -> dict[int, str]:
    """Clip id → dataset key for the given ids (one query)."""
    if not clip_ids:
        return {}
    with store.session() as s:
        rows = s.exec(select(Clip.id, Clip.key).where(col(Clip.id).in_(sorted(clip_ids))))
        return {int(clip_id): key for clip_id, key in rows}
