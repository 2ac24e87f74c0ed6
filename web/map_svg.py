"""The study page's world map: the cockpit's offline coastlines as one compact SVG path, built once.

Equirectangular, in tenths of a degree (x = 10·lon, y = −10·lat), relative integer moves: the page
draws it inside ``<g transform="scale(0.1)">`` so its user units are degrees. Points closer than a
tenth of a degree are merged and slivers dropped, which keeps the path near 40 kB (the first page
load stays under 400 kB with it; bench/ measures).
"""

from __future__ import annotations

import threading

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


def land_path(resolution: str = "c") -> str:
    """The SVG path data of the coastlines (cached for the life of the process)."""
    with _lock:
        if resolution not in _cache:
            lon, lat = outline_path("gshhs", resolution)
            parts = []
            for polygon in _polygons(lon, lat):
                points = np.rint(np.column_stack([polygon[:, 0] * 10, -polygon[:, 1] * 10])).astype(np.int64)
                keep = np.ones(len(points), dtype=bool)
                keep[1:] = np.any(points[1:] != points[:-1], axis=1)
                points = points[keep]
                if len(points) < 4:
                    continue  # an islet under a few tenths of a degree: invisible at any zoom we allow
                steps = np.diff(points, axis=0)
                moves = " ".join(f"{dx} {dy}" for dx, dy in steps.tolist())
                parts.append(f"M{points[0, 0]} {points[0, 1]}l{moves}z")
            _cache[resolution] = "".join(parts).replace(" -", "-")
        return _cache[resolution]
