"""The study page's world map: the cockpit's offline coastlines as two compact SVG paths, built once.

Equirectangular, in tenths of a degree (x = 10·lon, y = −10·lat), relative integer moves: the page
draws them inside ``<g transform="scale(0.1)">`` so its user units are degrees. Points closer than a
tenth of a degree are merged and slivers dropped. The land is filled by one path and its coast
stroked by another, which leaves out the edges the data made where it cut a polygon (Antarctica's
halves meet at 0°: one stroked path drew a seam there). Together near 55 kB (the first page load
stays under 400 kB with them; bench W1 measures).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import numpy as np

from workbench.geo_outlines import outline_path

_lock = threading.Lock()
_cache: dict[str, str] = {}


def _polygons(lon: np.ndarray, lat: np.ndarray) -> list[np.ndarray]:
    gaps = np.flatnonzero(np.isnan(lon))
    out, start = [], 0
    for stop in [*gaps.tolist(), len(lon)]:
        if stop - start >= 3:
            out.append(np.column_stack([lon[start:stop], lat[start:stop]]))
        start = stop + 1
    return out


@functools.lru_cache(maxsize=1)
def _rings() -> list[np.ndarray]:
    """The polygons' vertices in tenths of a degree, repeated points merged, slivers dropped (read
    once: the land and the coast are both drawn from them)."""
    lon, lat = outline_path("gshhs", "c")
    rings = []
    for polygon in _polygons(lon, lat):
        points = np.rint(np.column_stack([polygon[:, 0] * 10, -polygon[:, 1] * 10])).astype(np.int64)
        keep = np.ones(len(points), dtype=bool)
        keep[1:] = np.any(points[1:] != points[:-1], axis=1)
        points = points[keep]
        if len(points) >= 4:  # else an islet under a few tenths of a degree: invisible at any zoom we allow
            rings.append(points)
    return rings


def _cut(a: np.ndarray, b: np.ndarray) -> bool:
    """An edge the data made, not the coast: along the antimeridian, down 0° south of 60° S (where
    Antarctica is cut in two) or along the pole."""
    if a[0] == b[0] and (abs(int(a[0])) == 1800 or (a[0] == 0 and min(a[1], b[1]) > 600)):
        return True
    return bool(a[1] >= 899 and b[1] >= 899)


def _moves(points: np.ndarray) -> str:
    return " ".join(f"{dx} {dy}" for dx, dy in np.diff(points, axis=0).tolist())


def _land() -> str:
    return "".join(f"M{r[0, 0]} {r[0, 1]}l{_moves(r)}z" for r in _rings()).replace(" -", "-")


def _coast() -> str:
    parts = []
    for ring in _rings():
        closed = np.vstack([ring, ring[:1]])
        run = [closed[0]]
        for a, b in zip(closed[:-1], closed[1:]):
            if _cut(a, b):
                if len(run) > 1:
                    parts.append(f"M{run[0][0]} {run[0][1]}l{_moves(np.array(run))}")
                run = [b]
            else:
                run.append(b)
        if len(run) > 1:
            parts.append(f"M{run[0][0]} {run[0][1]}l{_moves(np.array(run))}")
    return "".join(parts).replace(" -", "-")


def _cached(name: str, build: Callable[[], str]) -> str:
    with _lock:
        if name not in _cache:
            _cache[name] = build()
        return _cache[name]


def land_path() -> str:
    """The SVG path data of the land, filled (cached for the life of the process)."""
    return _cached("land", _land)


def coast_path() -> str:
    """The SVG path data of the coastlines, stroked: the land's outline without the edges where
    the data cut a polygon (a seam down 0° through Antarctica, the pole, the antimeridian)."""
    return _cached("coast", _coast)
