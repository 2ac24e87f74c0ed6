"""A clip's id from its dataset key: the one lookup, for the read commands, the labels and the events.

It reads the Core table (:mod:`storage.tables`), so a read command resolves its ``KEY`` argument
without loading the ORM (issue 32); it sits below the labels and the read model, which both ask it.
"""

from __future__ import annotations

from sqlalchemy import select

from storage import Store
from storage import tables as T
from workbench.errors import InputError


def clip_id_for_key(store: Store, key: str) -> int:
    """The id of the clip with dataset key ``key``.

    Raises
    ------
    InputError
        No clip has that key, or clips of several datasets do (the key is ambiguous).
    """
    with store.read() as connection:
        ids = connection.execute(select(T.clip.c.id).where(T.clip.c.key == key)).scalars().all()
    if not ids:
        raise InputError(f"no clip with key {key!r} in this project; check the key (aglw import dataset first)")
    if len(ids) > 1:
        raise InputError(f"clip key {key!r} occurs in {len(ids)} datasets; it is ambiguous")
    return int(ids[0])
