"""The offline gazetteer: the nearest populated place of a coordinate (the ``reverse_geocoder``
package and its bundled GeoNames table of places with ≥ 1,000 inhabitants, single process).

One module for every reader: the location check of the curation, the places an imported dataset
lacks, and the country of a human localizer's guess.
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from typing import Any


def is_position(latitude: Any, longitude: Any) -> bool:
    """Whether (latitude, longitude) in degrees is a place on the globe the gazetteer can look up:
    finite numbers, |latitude| <= 90 and |longitude| <= 180. The one rule for every lookup (the
    location check of the curation, the country alias of the metrics)."""
    try:
        lat, lon = float(latitude), float(longitude)
    except (TypeError, ValueError):
        return False
    return math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180


def reverse_geocode(coordinates: list[tuple[float, float]]) -> list[dict[str, str]]:
    """Nearest GeoNames place of each (lat, lon): keys ``name``, ``admin1``, ``cc``, ``lat``, ``lon``."""
    if not coordinates:
        return []
    import reverse_geocoder

    # verbose=False: no "Loading formatted geocoded file..." on loading its table (stderr is quiet
    # on success; a failure still raises). Anything else it prints goes to stderr, never to stdout,
    # which carries --json output; it leaves its data file to the garbage collector.
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore", ResourceWarning)
        return list(reverse_geocoder.search(coordinates, mode=1, verbose=False))
