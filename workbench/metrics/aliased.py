"""Answers a country alias table accepts: the country metrics' side of issue 30.

A dataset may file a place under another country than the one its coordinates fall in (AGL1K
files recordings made in Taiwan under China); a curator accepts such a convention once in the
alias table (:mod:`workbench.country_aliases`, which ``aglw check locations`` reads too). An
answer naming the country the clip's true position lies in is then as good as one naming the
stated country, when the table says the stated country covers it: exactly the case
``check locations`` reports as a "match under an alias", asked through the table's own lookup
(``table.alias_for(stated ISO, ISO of the position)``), never a second rule here.

Cost: only answers whose (stated, predicted) countries are a pair some alias names can be
accepted, so only their positions are read and reverse-geocoded (:mod:`workbench.gazetteer`),
once per distinct position; without such answers nothing is read or geocoded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench import gazetteer
from workbench.metrics.aggregate import map_pairs
from workbench.metrics.core import country_iso
from workbench.metrics.distance import parse_coordinate

if TYPE_CHECKING:
    from workbench.country_aliases import AliasTable

# Position -> ISO code of the country it lies in, kept for the process: the cockpit and repeated
# leaderboards ask again for the same clips (the gazetteer's own tree is loaded once too).
_COUNTRY_AT: dict[tuple[float, float], str | None] = {}
_CACHE_LIMIT = 200_000


def _countries_at(points: list[tuple[float, float]]) -> dict[tuple[float, float], str | None]:
    """ISO code of each distinct position, asking the gazetteer once for those not yet known."""
    todo = sorted({p for p in points if p not in _COUNTRY_AT})
    if len(_COUNTRY_AT) + len(todo) > _CACHE_LIMIT:
        _COUNTRY_AT.clear()
    for point, place in zip(todo, gazetteer.reverse_geocode(todo)):
        _COUNTRY_AT[point] = place.get("cc") or None
    return {p: _COUNTRY_AT[p] for p in points}


def applies(table: AliasTable | None) -> bool:
    """Whether ``table`` can change a number: a table with at least one alias."""
    return table is not None and bool(table.aliases)


def table_summary(table: AliasTable) -> dict[str, Any]:
    """What the outputs name: the table's file and its aliases (as ``check locations`` words them)."""
    return {"file": None if table.source is None else str(table.source),
            "aliases": [alias.describe() for alias in table.aliases]}


def accepted_answers(
    true_country: np.ndarray,
    predicted_country: np.ndarray,
    table: AliasTable,
    positions: Callable[[np.ndarray], list[tuple[Any, Any]]],
) -> np.ndarray:
    """Per answer: its predicted country is accepted under an alias of ``table``.

    Parameters
    ----------
    true_country, predicted_country : numpy.ndarray
        Raw values per answer (object arrays): the dataset's stated country and the answer's.
    table : AliasTable
        The loaded alias table (:func:`workbench.country_aliases.alias_table`).
    positions : callable
        Answer indices -> the true position (lat, lon) of each, raw values: the position the
        answer is measured from (:func:`workbench.metrics.distance.truth_position`). Called once,
        with the candidate answers only.

    Returns
    -------
    numpy.ndarray
        Bool per answer: the clip's position lies in the predicted country (ISO code), and the
        table accepts the stated country covering it.
    """
    accepted = np.zeros(len(true_country), dtype=bool)
    if not table.aliases or not len(true_country):
        return accepted
    # A pair no alias names cannot be accepted, whatever the position: decided once per
    # distinct (stated, predicted) pair, before anything is read.
    candidate = map_pairs(true_country, predicted_country,
                          lambda stated, predicted: table.alias_for(country_iso(stated), country_iso(predicted))
                          is not None).astype(bool)
    rows = np.flatnonzero(candidate)
    if not rows.size:
        return accepted
    points = [(parse_coordinate(lat), parse_coordinate(lon)) for lat, lon in positions(rows)]
    country_at = _countries_at([p for p in points if gazetteer.is_position(*p)])  # type: ignore[misc]
    for row, point in zip(rows.tolist(), points):
        covered = country_at.get(point)
        accepted[row] = (covered is not None and covered == country_iso(predicted_country[row])
                         and table.alias_for(country_iso(true_country[row]), covered) is not None)
    return accepted
