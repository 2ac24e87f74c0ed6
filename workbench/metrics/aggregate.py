"""The leaderboard metrics as column operations: each per-record formula runs once per distinct value.

A leaderboard of 16 models x 1,444 clips used to call the per-record formulas of
:mod:`workbench.metrics.core` 700,000 times in pure Python, per model and per profile. Here the
formulas are applied to each distinct value of a column (countries, continents and refusal
markers repeat a lot), mapped back to the rows with numpy, computed once for every model and
profile, and aggregated per group with array operations. The formulas themselves stay in
:mod:`workbench.metrics.core`; :func:`compute_metrics` is this module's
:func:`metric_inputs` followed by :func:`metrics_of`; ``aglw metrics`` adds :func:`metric_counts`
(how many answers each metric counted, issue 40).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.metrics import core
from workbench.metrics.distance import REFUSAL_STRINGS, is_missing, is_refusal

if TYPE_CHECKING:
    import pandas as pd

# No pandas at import: `aglw metrics` and `aglw leaderboard` compute on object arrays and start
# without it (issue 32, bench P11); a DataFrame handed in (compute_metrics) brings pandas along.

_COORDINATES = ("true_latitude", "true_longitude", "predicted_latitude", "predicted_longitude")


def _objects(values: list[Any]) -> np.ndarray:
    """An object array of exactly these values (np.array would split tuples and cast numbers)."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _missing(values: np.ndarray) -> np.ndarray:
    """Per value: a missing marker (:func:`workbench.metrics.distance.is_missing`, the one rule)."""
    items = values.tolist()
    if set(map(type, items)) <= {type(None), bool, int, str}:  # e.g. the stored flags: None is the one marker
        return np.array([value is None for value in items], dtype=bool)
    return np.array([is_missing(value) for value in items], dtype=bool)


def _codes(series: pd.Series | np.ndarray) -> tuple[np.ndarray, list[Any]] | None:
    """Integer codes and distinct values (in order of first appearance; missing values carry
    code -1) of a text column; None when it holds anything but text and missing values
    (hashing would merge 1, 1.0 and True, whose text differs).

    Where pandas is loaded already (the cockpit, an import, `--by`), its C factorizer gives the
    same codes about 3 x faster (bench P12: 17 ms of a 23,104-row leaderboard); `aglw metrics`
    and `aglw leaderboard` do not load pandas for it (start-up, bench P11)."""
    pandas = sys.modules.get("pandas")
    if pandas is not None:
        return _codes_with_pandas(series, pandas)
    return _codes_in_python(series)


def _codes_with_pandas(series: pd.Series | np.ndarray, pandas: Any) -> tuple[np.ndarray, list[Any]] | None:
    """:func:`_codes` through ``pandas.factorize`` (its missing markers are those of ``pd.isna``)."""
    try:
        codes, uniques = pandas.factorize(series, use_na_sentinel=True)
    except TypeError:  # unhashable values
        return None
    distinct = list(uniques)
    if not all(isinstance(value, str) for value in distinct):
        return None
    return codes.astype(np.intp, copy=False), distinct


def _codes_in_python(series: pd.Series | np.ndarray) -> tuple[np.ndarray, list[Any]] | None:
    """:func:`_codes` without pandas."""
    items = series.tolist()
    try:
        # Checked on the distinct values: cheaper than on every row.
        keys = list(dict.fromkeys(items))
        if set(map(type, keys)) <= {str}:  # text only (the common case, at C speed)
            distinct = keys
            vocabulary = dict(zip(keys, range(len(keys))))
        else:
            vocabulary, distinct = {}, []
            for value in keys:
                if isinstance(value, str):
                    vocabulary[value] = len(distinct)
                    distinct.append(value)
                elif is_missing(value):
                    vocabulary[value] = -1
                else:
                    return None
        codes = np.fromiter(map(vocabulary.__getitem__, items), dtype=np.intp, count=len(items))
    except TypeError:  # unhashable values (or a marker that refuses comparison)
        return None
    return codes, distinct


class RecordColumns:
    """Raw columns of result records as object arrays, each converted once on first use.

    The source is a DataFrame (:func:`compute_metrics`) or a mapping of
    column name -> array: the leaderboard hands over the rows it read from the store column by
    column, as building a DataFrame of tens of thousands of rows cost it as much as the metrics.
    """

    def __init__(self, source: pd.DataFrame | Mapping[str, np.ndarray]) -> None:
        self._source = source
        self._arrays: dict[str, np.ndarray] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._source

    def __len__(self) -> int:
        if not isinstance(self._source, Mapping):  # a DataFrame: its rows
            return len(self._source)
        return len(next(iter(self._source.values()))) if self._source else 0

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            column = self._source[name]
            # A DataFrame's column (a Series) as an object array; the mapping's arrays as they are.
            self._arrays[name] = column.to_numpy(dtype=object) if hasattr(column, "to_numpy") else column
        return self._arrays[name]

    def subset(self, mask: np.ndarray, names: Sequence[str]) -> RecordColumns:
        """The rows where ``mask`` holds, of the named columns."""
        return RecordColumns({name: self[name][mask] for name in names if name in self})


def map_values(series: pd.Series | np.ndarray, fn: Callable[[Any], Any]) -> np.ndarray:
    """``fn`` of every value of a column, calling ``fn`` once per distinct value.

    Parameters
    ----------
    series : pandas.Series or numpy.ndarray
        Raw values; text columns (with missing values) are factorized, others mapped row by row.
    fn : callable
        A per-value formula that treats every missing marker alike (None, NaN, ``pd.NA``).

    Returns
    -------
    numpy.ndarray
        Object array, one result per row.
    """
    coded = _codes(series)
    if coded is None:
        return _objects([fn(value) for value in series.tolist()])
    codes, uniques = coded
    # Code -1 marks a missing value: the last slot holds fn(None).
    table = _objects([*(fn(value) for value in uniques), fn(None)])
    return table[codes]


def map_pairs(
    first: pd.Series | np.ndarray, second: pd.Series | np.ndarray, fn: Callable[[Any, Any], Any]
) -> np.ndarray:
    """``fn`` of every row's pair of values, once per distinct pair."""
    a, b = _codes(first), _codes(second)
    if a is None or b is None:
        return _objects([fn(x, y) for x, y in zip(first.tolist(), second.tolist(), strict=True)])
    (codes_a, uniques_a), (codes_b, uniques_b) = a, b
    values_a, values_b = [*uniques_a, None], [*uniques_b, None]
    width = len(values_b)
    combined = codes_a.astype(np.int64) % len(values_a) * width + codes_b % width  # -1 -> last slot
    pairs, inverse = np.unique(combined, return_inverse=True)
    table = _objects([fn(values_a[code // width], values_b[code % width]) for code in pairs.tolist()])
    return table[inverse.reshape(-1)]


def _rejections(records: RecordColumns, keys: _Keys) -> np.ndarray:
    """Per row: any predicted field is a refusal value. The flag stored at import (column
    ``refused``) where there is one, else computed from the row's predicted fields."""
    if "refused" not in records:
        return np.logical_or.reduce([keys.refused(name) for name in core.PREDICTED_FIELDS])
    result = np.zeros(len(records), dtype=bool)
    stored = records["refused"]
    todo = _missing(stored)
    result[~todo] = stored[~todo].astype(bool)
    if todo.any():
        rows = _Keys(records.subset(todo, core.PREDICTED_FIELDS))
        result[todo] = np.logical_or.reduce([rows.refused(name) for name in core.PREDICTED_FIELDS])
    return result


def _floats(values: np.ndarray) -> np.ndarray:
    """A numeric column as floats, NaN where missing or not a number (a copy)."""
    # Numbers and missing values (all the store holds) convert directly; anything else, e.g.
    # text in a hand-made row, goes through pandas' coercion (pandas loaded only then).
    kinds = set(map(type, values.tolist()))
    if all(kind is type(None) or (issubclass(kind, (int, float, np.integer, np.floating))
                                  and not issubclass(kind, (bool, np.bool_))) for kind in kinds):
        return np.array(values, dtype=float)
    import pandas as pd

    if pd.api.types.infer_dtype(values, skipna=True) in ("floating", "integer", "mixed-integer-float", "empty"):
        return np.array(values, dtype=float)
    return pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float, na_value=np.nan, copy=True)


def _distances(records: RecordColumns) -> np.ndarray:
    """Distance error per row (NaN when undefined): the value stored at import where there is
    one, else computed from the row's coordinates.

    A missing stored value means "undefined" for rows the importers wrote and "never computed"
    for rows written otherwise (projects before migration 0003 are backfilled by it; hand-made
    rows are not); computing it again gives the right answer in both cases and costs little, as
    undefined rows are rare.
    """
    n = len(records)
    if "distance_error_km" in records:
        distances = _floats(records["distance_error_km"])
    else:
        distances = np.full(n, np.nan)
    todo = np.flatnonzero(np.isnan(distances))
    if todo.size:
        columns = [records[name].tolist() for name in _COORDINATES]
        for index in todo.tolist():
            # Looked up on core at call time: the formula has one home, which tests may replace.
            value = core.prediction_error_km(*(column[index] for column in columns))
            distances[index] = np.nan if value is None else value
    return distances


def _unreadable(records: RecordColumns, distances: np.ndarray) -> np.ndarray:
    """Per row: the answer's position cannot be read (a coordinate that is no number, such as
    "٣٫٥", or a latitude beyond ±90), so it has no distance; a refusal has one (10,000 km), and a
    row whose clip has no position is not the answer's fault. Only rows without a distance are
    looked at (a stored distance was measured from a readable answer)."""
    out = np.zeros(len(distances), dtype=bool)
    todo = np.flatnonzero(np.isnan(distances))
    if not todo.size or "predicted_latitude" not in records:
        return out
    from workbench.metrics.distance import parse_coordinate

    lats, lons = records["predicted_latitude"].tolist(), records["predicted_longitude"].tolist()
    for index in todo.tolist():
        lat, lon = parse_coordinate(lats[index]), parse_coordinate(lons[index])
        out[index] = lat is None or lon is None or abs(lat) > 90
    return out


@dataclass(frozen=True)
class MetricInputs:
    """Per-row quantities the metrics aggregate: named numpy arrays of equal length."""

    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.columns["distance"])

    def take(self, index: np.ndarray | slice) -> MetricInputs:
        """The rows at these positions (a slice gives views, not copies)."""
        return MetricInputs({name: values[index] for name, values in self.columns.items()})


class _Keys:
    """Comparison keys of the rows as integer ids (-1: missing), one vocabulary per kind of key,
    so that accuracy is an integer comparison. Each column is factorized once, whatever the
    number of profiles reading it."""

    def __init__(self, records: RecordColumns) -> None:
        self.records = records
        self._coded: dict[str, tuple[np.ndarray, list[Any]] | None] = {}

    def _codes(self, name: str) -> tuple[np.ndarray, list[Any]] | None:
        if name not in self._coded:
            self._coded[name] = _codes(self.records[name])
        return self._coded[name]

    @staticmethod
    def _id(vocabulary: dict[str, int], key: str | None) -> int:
        # Accuracy compares keys case-folded.
        return -1 if key is None else vocabulary.setdefault(key.casefold(), len(vocabulary))

    def ids(self, name: str, fn: Callable[[Any], str | None], vocabulary: dict[str, int]) -> np.ndarray:
        """Per row: the id of ``fn(value)``, computed once per distinct value."""
        coded = self._codes(name)
        if coded is None:
            return np.array([self._id(vocabulary, fn(v)) for v in self.records[name].tolist()], dtype=np.int64)
        codes, uniques = coded
        table = np.array([*(self._id(vocabulary, fn(v)) for v in uniques), self._id(vocabulary, fn(None))], dtype=np.int64)
        return table[codes]

    def pair_ids(
        self, first: str, second: str, fn: Callable[[Any, Any], str | None], vocabulary: dict[str, int]
    ) -> np.ndarray:
        """Per row: the id of ``fn(first, second)``, computed once per distinct pair."""
        a, b = self._codes(first), self._codes(second)
        if a is None or b is None:
            pairs = zip(self.records[first].tolist(), self.records[second].tolist(), strict=True)
            return np.array([self._id(vocabulary, fn(x, y)) for x, y in pairs], dtype=np.int64)
        (codes_a, uniques_a), (codes_b, uniques_b) = a, b
        values_a, values_b = [*uniques_a, None], [*uniques_b, None]
        width = len(values_b)
        combined = codes_a.astype(np.int64) % len(values_a) * width + codes_b % width  # -1 -> last slot
        distinct, inverse = np.unique(combined, return_inverse=True)
        table = np.array(
            [self._id(vocabulary, fn(values_a[c // width], values_b[c % width])) for c in distinct.tolist()],
            dtype=np.int64,
        )
        return table[inverse.reshape(-1)]

    def refused(self, name: str) -> np.ndarray:
        """Per row: the field is a refusal value (see :func:`is_refusal`)."""
        coded = self._codes(name)
        if coded is None:
            return np.array([is_refusal(value) for value in self.records[name].tolist()], dtype=bool)
        codes, uniques = coded
        # Text values inline (a predicted coordinate is nearly unique per row), missing through the rule.
        table = np.array([*(v.strip().lower() in REFUSAL_STRINGS for v in uniques), is_refusal(None)], dtype=bool)
        return table[codes]


def metric_inputs(
    records: pd.DataFrame | Mapping[str, np.ndarray],
    profiles: Sequence[str] = core.PROFILES,
    *,
    alias_accepted: np.ndarray | None = None,
) -> MetricInputs:
    """Per-row quantities the metrics aggregate, for the given profiles.

    Parameters
    ----------
    records : pandas.DataFrame or mapping of str to numpy.ndarray
        Result records with :data:`workbench.metrics.core.REQUIRED_COLUMNS` and optionally
        ``distance_error_km`` and ``refused`` (stored at import; missing values are computed
        from the record's fields); a mapping holds one object array per column.
    profiles : sequence of str
        Profiles whose country and continent keys are wanted.
    alias_accepted : numpy.ndarray, optional
        Bool per record: its predicted country is accepted under the country alias table
        (:func:`workbench.metrics.aliased.accepted_answers`). Such a record's country counts as
        correct, and so does its continent in the ``iso`` profile (derived from the country
        there); None: no alias table applies.

    Returns
    -------
    MetricInputs
        In the order of ``records``: ``distance`` (km, NaN when undefined), ``refused`` (bool),
        ``city_true``/``city_pred`` and ``{profile}_country_true``, ... (ids of the case-folded
        comparison keys, equal ids for equal keys; -1 when missing after normalisation). With
        ``alias_accepted``: ``{profile}_country_alias`` and ``{profile}_continent_alias``, bool
        per record, whether the table turned a wrong answer into a correct one.
    """
    table = RecordColumns(records)
    keys = _Keys(table)
    cities: dict[str, int] = {}
    distances = _distances(table)
    columns: dict[str, np.ndarray] = {
        "distance": distances,
        "unreadable": _unreadable(table, distances),
        "refused": _rejections(table, keys),
        "city_true": keys.ids("true_city", core._city_key, cities),
        "city_pred": keys.ids("predicted_city", core._city_key, cities),
    }
    for profile in profiles:
        countries: dict[str, int] = {}
        continents: dict[str, int] = {}
        for side, prefix in (("true", "true"), ("pred", "predicted")):
            country, continent = f"{prefix}_country", f"{prefix}_continent"
            if profile == "agl1k":
                columns[f"agl1k_country_{side}"] = keys.ids(country, core.normalize_country_agl1k, countries)
                columns[f"agl1k_continent_{side}"] = keys.ids(continent, core.normalize_continent_agl1k, continents)
            else:
                columns[f"iso_country_{side}"] = keys.ids(country, core._iso_country_key, countries)
                columns[f"iso_continent_{side}"] = keys.pair_ids(country, continent, core._iso_continent_key, continents)
        if alias_accepted is not None:
            # The agl1k continent is the answer's own continent field, not derived from its country.
            for kind in ("country", "continent") if profile == "iso" else ("country",):
                true, pred = columns[f"{profile}_{kind}_true"], columns[f"{profile}_{kind}_pred"].copy()
                changed = alias_accepted & (true >= 0) & (pred >= 0) & (true != pred)
                pred[changed] = true[changed]
                columns[f"{profile}_{kind}_pred"] = pred
                columns[f"{profile}_{kind}_alias"] = changed
            if profile != "iso":
                columns[f"{profile}_continent_alias"] = np.zeros(len(table), dtype=bool)
    return MetricInputs(columns)


def _accuracy(true_ids: np.ndarray, predicted_ids: np.ndarray) -> float:
    both = (true_ids >= 0) & (predicted_ids >= 0)
    n = int(np.count_nonzero(both))
    if not n:
        return math.nan
    return float(np.count_nonzero(true_ids[both] == predicted_ids[both])) / n


def metrics_of(inputs: MetricInputs, profile: str, model: str | None) -> dict[str, Any]:
    """The :data:`~workbench.metrics.keys.METRIC_KEYS` of the rows in ``inputs`` (see
    :func:`compute_metrics` for their definitions)."""
    n = len(inputs)
    column = inputs.columns
    distances = column["distance"]
    defined = distances[~np.isnan(distances)]
    result: dict[str, Any] = {
        "model": model,
        "profile": profile,
        "n": n,
        "distance_error_km": float(defined.mean()) if defined.size else math.nan,
        "continent_acc": _accuracy(column[f"{profile}_continent_true"], column[f"{profile}_continent_pred"]),
        "country_acc": _accuracy(column[f"{profile}_country_true"], column[f"{profile}_country_pred"]),
        "city_acc": _accuracy(column["city_true"], column["city_pred"]),
        "reject_rate": float(np.count_nonzero(column["refused"])) / n if n else math.nan,
    }
    for threshold in core.WITHIN_THRESHOLDS_KM:
        result[f"within_{threshold}km"] = float(np.count_nonzero(defined < threshold)) / n if n else math.nan
    result["geoscore_mean"] = float(core.geoscore(defined).mean()) if defined.size else math.nan
    if f"{profile}_country_alias" in column:
        # How many of the n answers the alias table turned correct (only where a table applies).
        for kind in ("country", "continent"):
            result[f"{kind}_alias_n"] = int(np.count_nonzero(column[f"{profile}_{kind}_alias"]))
    return result


# The metrics whose count can be smaller than n (the others count every answer: the reject rate
# and the within-k-km rates, where an answer without a distance is a miss).
_COUNTED_APART = ("distance_error_km", "geoscore_mean", "continent_acc", "country_acc", "city_acc")


def metric_counts(inputs: MetricInputs, profile: str) -> dict[str, int]:
    """How many answers each metric of :func:`metrics_of` was computed on, where fewer than ``n``:
    ``n_<metric>`` (the mean distance and GeoScore count the answers with a distance; an accuracy
    those where neither side is missing), and ``n_unreadable``, the answers whose position cannot
    be read (left out of the mean distance and GeoScore, a miss within every k km)."""
    n = len(inputs)
    column = inputs.columns
    defined = int(np.count_nonzero(~np.isnan(column["distance"])))

    def both(kind: str) -> int:
        return int(np.count_nonzero((column[f"{kind}_true"] >= 0) & (column[f"{kind}_pred"] >= 0)))

    counted = {"distance_error_km": defined, "geoscore_mean": defined,
               "continent_acc": both(f"{profile}_continent"), "country_acc": both(f"{profile}_country"),
               "city_acc": both("city")}
    counts = {f"n_{key}": counted[key] for key in _COUNTED_APART if counted[key] != n}
    counts["n_unreadable"] = int(np.count_nonzero(column["unreadable"])) if "unreadable" in column else 0
    return counts


def compute_metrics(
    records: pd.DataFrame,
    profile: core.Profile = "agl1k",
    *,
    model: str | None = None,
    alias_accepted: np.ndarray | None = None,
) -> dict[str, Any]:
    """Leaderboard metrics of one model's result records.

    Parameters
    ----------
    records : pandas.DataFrame
        One row per clip with the columns ``true_latitude, true_longitude, true_city,
        true_country, true_continent, predicted_latitude, predicted_longitude, predicted_city,
        predicted_country, predicted_continent`` (raw values) and optionally ``model`` and
        ``distance_error_km`` (the distance stored at import; missing values are computed).
    profile : {"agl1k", "iso"}
        ``agl1k``: AGL1K's published normalisation; ``iso``: countries compared as ISO 3166-1
        codes and continents derived from the country code (falling back to the normalised
        continent field when the country is not resolvable).
    model : str, optional
        Model name to report; defaults to the single value of a ``model`` column, if any.
    alias_accepted : numpy.ndarray, optional
        Bool per row: accepted under the country alias table (see :func:`metric_inputs`).

    Returns
    -------
    dict
        The keys of :data:`~workbench.metrics.keys.METRIC_KEYS`; with ``alias_accepted`` also
        ``country_alias_n`` and ``continent_alias_n``, the answers the table turned correct. ``distance_error_km`` and ``geoscore_mean`` are means over
        rows with a defined distance; ``within_*km`` are fractions of all ``n`` rows whose distance
        is defined and strictly below the threshold; ``reject_rate`` is the fraction of rows in
        which any predicted field is a refusal; accuracies leave out rows where either side is
        missing after normalisation. Undefined values (no usable rows) are NaN.

    Raises
    ------
    ValueError
        If ``profile`` is unknown or a required column is absent.
    """
    if profile not in core.PROFILES:
        raise ValueError(f"unknown metric profile {profile!r}; use one of {', '.join(core.PROFILES)}")
    missing = [c for c in core.REQUIRED_COLUMNS if c not in records.columns]
    if missing:
        raise ValueError(f"records lack the column(s) {', '.join(missing)}")
    if model is None and "model" in records.columns:
        names = records["model"].dropna().unique().tolist()
        model = str(names[0]) if len(names) == 1 else None

    return metrics_of(metric_inputs(records, (profile,), alias_accepted=alias_accepted), profile, model)
