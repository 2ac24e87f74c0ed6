"""A clip's missing country and continent, derived from its coordinates with the offline
gazetteer (the one ``check locations`` uses), and marked as derived (``clip.derived``).

The country is the ISO 3166 short name (pycountry's ``name``, the form AGL1K's ``country``
column uses) of the nearest populated place's country; the continent is that country's, in the
AGL1K continent names (:mod:`workbench.metrics.continents`). A study can tell given from derived
values by ``derived``; nothing given by the source is ever replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.gazetteer import reverse_geocode
from workbench.metrics.continents import continent_of_iso

DERIVABLE = ("country", "continent")


def _country_name(code: str | None) -> str | None:
    if not code:
        return None
    import pycountry

    country = pycountry.countries.get(alpha_2=code.upper())
    return str(country.name) if country is not None else None


def derive_places(
    rows: list[dict[str, Any]],
    *,
    geocode: Callable[[list[tuple[float, float]]], list[dict[str, str]]] = reverse_geocode,
) -> dict[str, int]:
    """Fill each row's missing ``country`` / ``continent`` from its coordinates, in place.

    Each filled field is added to the row's ``derived`` list. Returns how many rows got each
    field (``{"country": n, "continent": m}``); a field the gazetteer cannot name stays missing.
    """
    wanting = [row for row in rows if any(row.get(name) is None for name in DERIVABLE)]
    counts = dict.fromkeys(DERIVABLE, 0)
    if not wanting:
        return counts
    places = geocode([(float(row["latitude"]), float(row["longitude"])) for row in wanting])
    for row, place in zip(wanting, places, strict=True):
        code = place.get("cc") or None
        found = {"country": _country_name(code), "continent": continent_of_iso(code)}
        for name in DERIVABLE:
            if row.get(name) is None and found[name] is not None:
                row[name] = found[name]
                row["derived"] = [*(row.get("derived") or []), name]
                counts[name] += 1
    return counts
