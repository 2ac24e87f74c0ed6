"""What the selection steps start from, read light: the run a selection is made from and the
selection an export writes (issue 40).

Read from the Core tables (``storage/tables.py``) with neither pandas, numpy nor scipy, so that
`aglw select` and `aglw export selection` give their refusals before the curation model loads
(scipy.stats alone costs seconds). :func:`workbench.curation.selection.make_selection` and
:func:`~workbench.curation.selection.stored_selection` ask the same functions, so each refusal has
one wording. Works on a Store, a Session or a Connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import func, select

from storage import tables as T
from workbench.errors import AglwError
from workbench.project import latest_curation_run_id


@contextmanager
def _connection(source: Any) -> Iterator[Any]:
    if hasattr(source, "read"):  # a Store
        with source.read() as connection:
            yield connection
    else:
        yield source


def run_to_select_from(source: Any, run_id: int | None = None) -> int:
    """The stored curation run a selection is drawn from (default: the latest).

    Raises
    ------
    AglwError
        No run is stored, run ``run_id`` does not exist, or the run fitted no category (every
        clip's localizability is 0: nothing to choose by), naming what to run first.
    """
    with _connection(source) as connection:
        if run_id is None:
            run_id = latest_curation_run_id(connection)
            if run_id is None:
                raise AglwError("no curation run is stored; run `aglw fit` first")
        run = T.curation_run.c
        row = connection.execute(select(run.summary).where(run.id == run_id)).first()
    if row is None:
        raise AglwError(f"no curation run {run_id}; run `aglw fit` first")
    summary = row.summary or {}
    if summary.get("n_categories") == 0:
        missing = "; ".join(summary.get("missing") or []) or "no category could be fitted"
        raise AglwError(
            f"curation run {run_id} fitted no category, so every clip's localizability is 0 and there is nothing "
            f"to select by (missing {missing}); run what is missing, then `aglw fit`, then select again"
        )
    return int(run_id)


def selection_to_export(source: Any, selection_id: int | None = None) -> int:
    """The id of the stored selection ``selection_id`` (default: the latest), or an AglwError
    saying what to run first."""
    with _connection(source) as connection:
        selection = T.selection.c
        query = select(func.max(selection.id)) if selection_id is None else (
            select(selection.id).where(selection.id == selection_id))
        found = connection.execute(query).scalar()
    if found is None:
        raise AglwError("no selection is stored; run `aglw select --size M` first" if selection_id is None
                        else f"no selection {selection_id}")
    return int(found)


__all__ = ["run_to_select_from", "selection_to_export"]


def latest_parameters(source: Any) -> tuple[int, dict[str, Any]] | None:
    """The latest stored curation run and the parameters it was fitted with (None: no run yet).

    `aglw fit` refits with these where no option says otherwise: a project carries its settings
    (the demo's run used n_min 1; the command's bare defaults would turn every one of its few
    categories "insufficient").
    """
    with _connection(source) as connection:
        run_id = latest_curation_run_id(connection)
        if run_id is None:
            return None
        run = T.curation_run.c
        row = connection.execute(select(run.parameters).where(run.id == run_id)).first()
    return (int(run_id), dict(row.parameters or {})) if row is not None else None
