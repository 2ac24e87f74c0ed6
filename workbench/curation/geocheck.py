"""Location consistency: do a clip's coordinates fall in its stated country?

Each clip's coordinates are reverse-geocoded offline (the ``reverse_geocoder``
package and its bundled GeoNames table of places with ≥ 1,000 inhabitants,
single process) to the nearest populated place; that place's ISO country code
is compared with the ISO code of the stated country
(:func:`workbench.metrics.core.country_iso`). The nearest place is a proxy
for the containing country: near a border (or Rome next to the Vatican) the
curator judges, helped by the distance to that place and the stated city.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from geographiclib.geodesic import Geodesic
from sqlalchemy import select

from storage import Store
from storage.models import Clip, Dataset
from workbench.country_aliases import CountryAlias, alias_for, load_country_aliases
from workbench.gazetteer import is_position, reverse_geocode
from workbench.metrics.core import country_iso

STATUSES = ("match", "alias", "mismatch", "unknown_country", "no_coordinates")


@dataclass(frozen=True)
class LocationCheck:
    key: str
    latitude: float | None
    longitude: float | None
    country: str | None
    city: str | None
    stated_iso: str | None
    geocoded_iso: str | None
    nearest_place: str | None
    nearest_admin1: str | None
    nearest_place_km: float | None
    city_matches_nearest: bool | None
    status: str
    alias: str | None = None  # the accepted convention (e.g. "CN covers TW") a status "alias" follows

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_locations(
    clips: pd.DataFrame,
    *,
    to_iso: Callable[[Any], str | None] = country_iso,
    geocode: Callable[[list[tuple[float, float]]], list[dict[str, str]]] = reverse_geocode,
    aliases: tuple[CountryAlias, ...] = (),
) -> list[LocationCheck]:
    """Check every clip's coordinates against its stated country.

    Parameters
    ----------
    clips
        Columns ``key``, ``latitude``, ``longitude``, ``country``, ``city``.
    to_iso
        Country name → ISO 3166-1 alpha-2 code (None when unknown).
    geocode
        Reverse geocoder (see :func:`reverse_geocode`).
    aliases
        Accepted labelling conventions (:mod:`workbench.country_aliases`): a clip whose
        coordinates fall in a country its stated country covers gets status ``alias``.

    Returns
    -------
    list of LocationCheck
        One per clip, in input order; ``status`` is one of ``match``,
        ``alias`` (a mismatch under an accepted alias), ``mismatch``, ``unknown_country`` (the stated country has no ISO
        code) or ``no_coordinates``.
    """
    latitude = pd.to_numeric(clips["latitude"], errors="coerce").to_numpy(dtype=float)
    longitude = pd.to_numeric(clips["longitude"], errors="coerce").to_numpy(dtype=float)
    valid = np.array([is_position(a, o) for a, o in zip(latitude.tolist(), longitude.tolist())], dtype=bool)
    places = geocode([(float(a), float(o)) for a, o in zip(latitude[valid], longitude[valid])])
    place_of = dict(zip(np.flatnonzero(valid), places))
    results = []
    for index, row in enumerate(clips[["key", "country", "city"]].itertuples(index=False)):
        stated = to_iso(row.country)
        place = place_of.get(index)
        if place is None:
            results.append(
                LocationCheck(str(row.key), None, None, row.country, row.city, stated, None, None, None, None,
                              None, "no_coordinates")
            )
            continue
        lat, lon = float(latitude[index]), float(longitude[index])
        distance = Geodesic.WGS84.Inverse(lat, lon, float(place["lat"]), float(place["lon"]), Geodesic.DISTANCE)
        geocoded = place.get("cc") or None
        alias = alias_for(stated, geocoded, aliases)
        if stated is None:
            status = "unknown_country"
        elif geocoded == stated:
            status = "match"
        else:
            status = "alias" if alias is not None else "mismatch"
        city_match = None
        if isinstance(row.city, str) and row.city.strip():
            city_match = row.city.strip().casefold() == str(place.get("name", "")).casefold()
        results.append(
            LocationCheck(
                key=str(row.key), latitude=lat, longitude=lon, country=row.country, city=row.city,
                stated_iso=stated, geocoded_iso=geocoded, nearest_place=place.get("name"),
                nearest_admin1=place.get("admin1") or None, nearest_place_km=distance["s12"] / 1000.0,
                city_matches_nearest=city_match, status=status,
                alias=alias.describe() if alias is not None and status == "alias" else None,
            )
        )
    return results


@dataclass(frozen=True)
class LocationReport:
    n_checked: int
    counts: dict[str, int]
    mismatches: list[LocationCheck]
    unknown_country: list[LocationCheck]
    no_coordinates: list[LocationCheck]
    aliased: list[LocationCheck] = field(default_factory=list)
    aliases_file: str | None = None
    alias_counts: dict[str, int] = field(default_factory=dict)  # alias → clips it affects

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_checked": self.n_checked,
            "counts": self.counts,
            "aliases_file": self.aliases_file,
            "alias_counts": self.alias_counts,
            "aliased": [c.to_dict() for c in self.aliased],
            "mismatches": [c.to_dict() for c in self.mismatches],
            "unknown_country": [c.to_dict() for c in self.unknown_country],
            "no_coordinates": [c.to_dict() for c in self.no_coordinates],
        }


def location_report(store: Store, *, dataset: str | None = None,
                    aliases_path: str | Path | None = None) -> LocationReport:
    """Check every clip of the project (or of one dataset, by name) and list the problems.

    The alias table is ``aliases_path`` or the configuration folder's (see
    :func:`workbench.country_aliases.load_country_aliases`); each alias's count of clips is reported."""
    aliases, source = load_country_aliases(aliases_path)
    query = select(Clip.key, Clip.latitude, Clip.longitude, Clip.country, Clip.city).order_by(Clip.id)
    if dataset is not None:
        query = query.join(Dataset, Dataset.id == Clip.dataset_id).where(Dataset.name == dataset)
    with store.session() as s:
        rows = s.execute(query).all()
    frame = pd.DataFrame(rows, columns=["key", "latitude", "longitude", "country", "city"])
    checks = check_locations(frame, aliases=aliases) if len(frame) else []
    counts = {status: sum(c.status == status for c in checks) for status in STATUSES}
    alias_counts = {a.describe(): sum(c.alias == a.describe() for c in checks) for a in aliases}
    return LocationReport(
        aliased=[c for c in checks if c.status == "alias"],
        aliases_file=None if source is None else str(source),
        alias_counts=alias_counts,
        n_checked=len(checks),
        counts=counts,
        mismatches=[c for c in checks if c.status == "mismatch"],
        unknown_country=[c for c in checks if c.status == "unknown_country"],
        no_coordinates=[c for c in checks if c.status == "no_coordinates"],
    )
