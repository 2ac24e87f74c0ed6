"""The cockpit map's outlines: the pure loader lives in :mod:`workbench.geo_outlines` (the study page draws
the same coastlines and may not import ``ui``); these names stay for the cockpit and its tests."""

from __future__ import annotations

from workbench.geo_outlines import COASTLINE_LEVELS, DATA_PACKAGE, great_circle, outline_path

__all__ = ["COASTLINE_LEVELS", "DATA_PACKAGE", "great_circle", "outline_path"]
