"""The study page's world map: land filled, coastlines drawn, and no line where the data cut a
polygon (Antarctica is two halves cut at 0° and along the pole: the page drew a seam down 0°)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the study page needs the [web] extra")

from web.map_svg import coast_path, land_path  # noqa: E402


def _segments(path: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Every drawn segment of a path written as M x y l dx dy ... [z] (absolute end points)."""
    out = []
    for part in re.findall(r"M[^M]+", path):
        closed = part.endswith("z")
        numbers = [int(n) for n in re.findall(r"-?\d+", part)]
        x, y = numbers[0], numbers[1]
        start = (x, y)
        for dx, dy in zip(numbers[2::2], numbers[3::2], strict=True):
            out.append(((x, y), (x + dx, y + dy)))
            x, y = x + dx, y + dy
        if closed:
            out.append(((x, y), start))
    return out


def _artificial(a: tuple[int, int], b: tuple[int, int]) -> bool:
    on_seam = a[0] == b[0] and (a[0] in (-1800, 1800) or (a[0] == 0 and min(a[1], b[1]) > 600))
    return on_seam or (a[1] >= 899 and b[1] >= 899)


def test_the_coastline_has_no_seam_and_the_land_is_whole() -> None:
    land, coast = land_path(), coast_path()
    land_segments, coast_segments = _segments(land), _segments(coast)
    # the land's fill still reaches the pole (Antarctica is filled)...
    assert any(_artificial(a, b) for a, b in land_segments)
    # ...and the coastline draws none of the cuts, but every real edge
    assert [s for s in coast_segments if _artificial(*s)] == []
    real = {s for s in land_segments if not _artificial(*s)}
    assert real == set(coast_segments)
    assert 20_000 < len(land) + len(coast) < 150_000  # the first page stays small (bench W1 measures it)
