"""Numbers as a reader sees them: one place for the significant digits of each kind of number.

Every view and the CLI's text output format what they show through these functions, so a
distance, an accuracy, a probability or a level reads the same everywhere (``10,771 km``,
``75.0 %``, ``0.88``, ``-19.2 dBFS``; a difference of two rates in percentage points, ``+15.1 pp``).
``--json`` output never goes through here: it keeps full precision. Missing values (None, NaN)
read as an empty string or ``—`` (``missing``).

The leaderboard's column names (the JSON keys of ``aglw metrics``) have readable titles in
:data:`METRIC_TITLES`, with the kind of number each column holds in :data:`METRIC_KINDS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from workbench.metrics.keys import COVERAGE_HEADER, DISTANCE_HEADER, PROFILES

MISSING = "—"


def _number(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def km(value: object, missing: str = MISSING) -> str:
    """A distance: ``0.35 km``, ``3.2 km``, ``412 km``, ``10,771 km`` (metres matter only below 10 km)."""
    number = _number(value)
    if number is None:
        return missing
    if abs(number) < 1:
        return f"{number:.2f} km"
    if abs(number) < 10:
        return f"{number:.1f} km"
    return f"{number:,.0f} km"


def accuracy(value: object, missing: str = MISSING) -> str:
    """A rate in [0, 1] as a percentage with one decimal: ``0.25`` → ``25.0 %``."""
    number = _number(value)
    return missing if number is None else f"{100.0 * number:.1f} %"


def probability(value: object, missing: str = MISSING) -> str:
    """A probability with two decimals; a small non-zero one reads ``<0.01``, never ``0.00``."""
    number = _number(value)
    if number is None:
        return missing
    if 0 < number < 0.005:
        return "<0.01"
    return f"{number:.2f}"


def db(value: object, unit: str = "dBFS", missing: str = MISSING) -> str:
    """A level in decibels with one decimal: ``-19.219301711`` → ``-19.2 dBFS``."""
    number = _number(value)
    if number is None:
        return missing
    return f"{number:.1f} {unit}".rstrip()


def score(value: object, missing: str = MISSING) -> str:
    """A score or any other quantity: three significant digits, thousands grouped (``2,540``)."""
    number = _number(value)
    if number is None:
        return missing
    if number == 0:
        return "0"
    if abs(number) >= 1000:
        return f"{number:,.0f}"
    digits = max(0, 2 - int(math.floor(math.log10(abs(number)))))
    return f"{number:.{digits}f}"


def count(value: object, missing: str = MISSING) -> str:
    """A whole number with thousands grouped (``1,440``)."""
    number = _number(value)
    return missing if number is None else f"{int(round(number)):,}"


def usd(value: object, missing: str = MISSING) -> str:
    """A sum of US dollars with four decimals (``$0.0040``, ``$1,234.5000``): a request costs
    fractions of a cent, and two decimals wrote an estimate and its limit both as ``$0.00``."""
    number = _number(value)
    return missing if number is None else f"${number:,.4f}"


def p_value(value: object, missing: str = MISSING) -> str:
    """A test's p-value with three significant digits (``0.0312``, ``1.2e-05``): a small one keeps
    its magnitude, which :func:`probability`'s two decimals would round to ``<0.01``."""
    number = _number(value)
    return missing if number is None else f"{number:.3g}"


def ratio(value: object, missing: str = MISSING) -> str:
    """A ratio of two quantities (spectral flatness, clipping share): three significant digits."""
    number = _number(value)
    if number is None:
        return missing
    if number == 0:
        return "0"
    if abs(number) < 0.001:
        return f"{number:.1e}"
    return score(number)


def coordinate(value: object, missing: str = MISSING) -> str:
    """A latitude or longitude in degrees with four decimals (about 11 m): ``41.40338888888889`` →
    ``41.4034``."""
    number = _number(value)
    return missing if number is None else f"{number:.4f}"


def difference(value: object, kind: str, missing: str = MISSING) -> str:
    """A difference of two numbers of ``kind``, signed: a difference of two rates in percentage
    points (``0.151`` → ``+15.1 pp``, never ``15.1 %``), any other in its kind's format (``-2,733 km``,
    ``+1,245``); one that rounds to zero has no sign (``0.0 pp``)."""
    number = _number(value)
    if number is None:
        return missing
    text = f"{100.0 * abs(number):.1f} pp" if kind == "accuracy" else formatted(abs(number), kind, missing=missing)
    if number == 0 or not any(c in "123456789" for c in text.split(" ")[0]):
        return text
    return ("+" if number > 0 else "-") + text


FORMATTERS: dict[str, Callable[..., str]] = {
    "km": km, "accuracy": accuracy, "probability": probability, "db": db, "score": score, "count": count,
    "ratio": ratio, "p_value": p_value, "coordinate": coordinate, "usd": usd,
}


def formatted(value: object, kind: str, missing: str = MISSING) -> str:
    """``value`` formatted as ``kind`` (a key of :data:`FORMATTERS`)."""
    return FORMATTERS[kind](value, missing=missing)


# The leaderboard's columns: the reader's title and the kind of number (JSON keys stay as they are).
METRIC_TITLES = {
    "group": "group",
    "model": "model",
    "profile": "profile",
    "n": "n",
    "n_dataset": "n in dataset",
    "n_clips": "clips",  # a crowd's row: n counts its guesses, these the clips and the people
    "n_participants": "people",
    "n_answers": "answers",
    "distance_error_km": DISTANCE_HEADER,  # says it is a mean and how a refusal counts (issue [N])
    "coverage": COVERAGE_HEADER,
    "continent_acc": "continent acc.",
    "country_acc": "country acc.",
    "city_acc": "city acc.",
    "reject_rate": "rejected",
    "within_1km": "≤ 1 km",
    "within_10km": "≤ 10 km",
    "within_100km": "≤ 100 km",
    "within_1000km": "≤ 1000 km",
    "geoscore_mean": "GeoScore",
    "country_alias_n": "country correct under the alias table",
    "continent_alias_n": "continent correct under the alias table",
}
METRIC_KINDS = {
    "n": "count",
    "n_dataset": "count",
    "n_clips": "count",
    "n_participants": "count",
    "n_answers": "count",
    "distance_error_km": "km",
    "continent_acc": "accuracy",
    "country_acc": "accuracy",
    "city_acc": "accuracy",
    "reject_rate": "accuracy",
    "within_1km": "accuracy",
    "within_10km": "accuracy",
    "within_100km": "accuracy",
    "within_1000km": "accuracy",
    "geoscore_mean": "score",
    "country_alias_n": "count",
    "continent_alias_n": "count",
}


def metric_title(key: str) -> str:
    """The readable title of a leaderboard column (``within_1km`` → ``≤ 1 km``); unknown keys
    read with spaces for underscores, a ``_ci`` column as its metric's title with ``95 % CI``."""
    if key.endswith("_ci") and key[:-3] in METRIC_TITLES:
        return f"{METRIC_TITLES[key[:-3]]} 95 % CI"
    for profile in PROFILES:  # a profile's own column side by side: ``country_acc_iso``
        if key.endswith(f"_{profile}") and key[: -len(profile) - 1] in METRIC_TITLES:
            return f"{METRIC_TITLES[key[: -len(profile) - 1]]} ({profile})"
    return METRIC_TITLES.get(key, key.replace("_", " "))


# The other columns of the reports' and bundles' tables, as a reader names them (their CSVs keep
# the keys). ``crowd_`` / ``model_`` columns and ``share:<group>`` are read by :func:`column_title`.
COLUMN_TITLES = {
    # agreement
    "rater_a": "rater A", "rater_b": "rater B", "n_units": "units", "n_raters": "raters",
    "ci_low": "95 % CI low", "ci_high": "95 % CI high", "ci_95": "95 % CI", "subset_kind": "subset kind",
    "n_boot": "bootstrap resamples", "n_boot_undefined": "resamples undefined",
    # alt-test (Calderon et al. 2025)
    "n_tested": "experts tested", "winning_rate": "winning rate ω", "advantage_probability": "advantage probability ρ",
    "p_value": "p", "llm_advantage": "LLM advantage", "human_advantage": "human advantage",
    # per-item difficulty
    "n_experts": "experts", "expert_majority": "expert majority", "expert_agreement": "expert agreement",
    "llm_value": "LLM value",
    # error modes, crowds
    "alm": "ALM", "n_guesses": "guesses", "participants": "people", "mean_confidence": "mean confidence",
    # the selection's sensitivity sweep over the curation model's settings
    "gamma_km": "γ (km)", "alpha": "α", "theta": "θ", "n_selected": "clips selected",
    "jaccard": "Jaccard with the stored selection", "jaccard_min": "Jaccard min", "jaccard_median": "Jaccard median",
    "jaccard_max": "Jaccard max", "n_added": "clips added", "n_removed": "clips removed", "n_flipped": "categories flipped",
    "flipped": "categories flipped (P ↔ N)", "max_flipped": "most categories flipped", "n_settings": "settings",
    "n_gamma": "γ values", "n_alpha": "α values", "n_theta": "θ values",
    "speech_share": "speech share",
}


def column_title(key: object) -> str:
    """The readable title of any table column the product writes for a reader (a report's HTML
    and LaTeX tables, the agreement bundle's, the leaderboard): :func:`metric_title` for the
    leaderboard's, :data:`COLUMN_TITLES` for the others, ``crowd_<column>`` as ``crowd: <title>``,
    ``share:<group>`` as ``share <group>``, else the key with spaces for underscores."""
    key = str(key)
    if key in COLUMN_TITLES:
        return COLUMN_TITLES[key]
    for side in ("crowd", "model"):
        if key.startswith(f"{side}_") and key != f"{side}_":
            return f"{side}: {column_title(key[len(side) + 1:])}"
    if key.startswith("share:"):
        return f"share {key[len('share:'):]}"
    return metric_title(key)


def _metric_of(key: str) -> str:
    """The leaderboard metric a report column holds (``crowd_country_acc`` → ``country_acc``)."""
    for side in ("crowd", "model"):
        if key.startswith(f"{side}_") and metric_kind(key[len(side) + 1:]) is not None:
            return key[len(side) + 1:]
    return key


def column_cell(key: object, value: object, missing: str = MISSING) -> str | None:
    """A report table's cell of a leaderboard metric (``distance_error_km``, ``crowd_country_acc``)
    in the house's format of its kind (km, %, counts); None for any other column, whose writer
    formats it (coefficients with 3 decimals)."""
    metric = _metric_of(str(key))
    return metric_cell(metric, value, missing=missing) if metric_kind(metric) is not None else None


def titled(frame: Any) -> Any:
    """A copy of a DataFrame with :func:`column_title` headers (what a reader sees; the CSV keeps the keys)."""
    return frame.rename(columns=column_title)


def metric_kind(key: str) -> str | None:
    """The kind of number a leaderboard column holds (:data:`METRIC_KINDS`), a profile's own
    column side by side (``country_acc_iso``) and an interval (``country_acc_ci``) included."""
    base = key[:-3] if key.endswith("_ci") else key
    for profile in PROFILES:
        if base.endswith(f"_{profile}") and base[: -len(profile) - 1] in METRIC_KINDS:
            base = base[: -len(profile) - 1]
    return METRIC_KINDS.get(base)


def metric_difference(key: str, value: object, missing: str = MISSING) -> str:
    """The difference of two rows' values of a leaderboard column, signed and in its kind
    (:func:`difference`: a rate's in percentage points)."""
    return difference(value, metric_kind(key) or "score", missing=missing)


def metric_cell(key: str, value: object, missing: str = "") -> str:
    """One leaderboard cell as a reader sees it (see :data:`METRIC_KINDS`)."""
    if key.endswith("_ci") and metric_kind(key) is not None and isinstance(value, (list, tuple)) and len(value) == 2:
        kind = metric_kind(key)
        low, high = (formatted(v, kind, missing=MISSING) for v in value)  # type: ignore[arg-type]
        return f"{low} – {high}"
    kind = metric_kind(key)
    if kind is not None:
        return formatted(value, kind, missing=missing)
    number = _number(value) if isinstance(value, float) else None
    if isinstance(value, float):
        return missing if number is None else score(number)
    if value is None:
        return missing
    return str(value)
