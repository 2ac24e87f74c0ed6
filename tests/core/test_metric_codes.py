"""The two factorizers of the metrics give the same codes (workbench/metrics/aggregate.py).

`aglw metrics` and `aglw leaderboard` factorize text columns without pandas (start-up); where
pandas is loaded already its C factorizer is used. Both must give the same codes and distinct
values on every kind of column the store or a DataFrame can hand in, or the leaderboard would
depend on what else the process had imported.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from workbench.metrics.aggregate import _codes_in_python, _codes_with_pandas

VALUES = ["Paris", "paris", "Oslo", "", " Oslo", "日本", None, math.nan, pd.NA, 1, 1.0, True, "1", "None"]


def _column(rng: random.Random, kinds: list[object], n: int) -> np.ndarray:
    column = np.empty(n, dtype=object)
    column[:] = [rng.choice(kinds) for _ in range(n)]
    return column


@pytest.mark.parametrize("seed", range(300))
def test_both_factorizers_agree(seed: int) -> None:
    rng = random.Random(seed)
    # text-only columns (the common case), text with missing markers, and mixed ones
    kinds = rng.choice([VALUES[:6], VALUES[:9], VALUES])
    column = _column(rng, rng.sample(kinds, rng.randint(1, len(kinds))), rng.randint(0, 40))
    python, with_pandas = _codes_in_python(column), _codes_with_pandas(column, pd)
    if python is None or with_pandas is None:
        assert python is None and with_pandas is None, (column.tolist(), python, with_pandas)
        return
    assert python[1] == with_pandas[1]
    assert python[0].tolist() == with_pandas[0].tolist()
    assert python[0].dtype == with_pandas[0].dtype == np.intp


def test_a_text_column_with_missing_markers_is_coded_minus_one() -> None:
    column = np.array(["b", None, "a", math.nan, "b"], dtype=object)
    for codes, distinct in (_codes_in_python(column), _codes_with_pandas(column, pd)):
        assert distinct == ["b", "a"] and codes.tolist() == [0, -1, 1, -1, 0]


def test_the_one_missing_value_rule_counts_what_pandas_counts() -> None:
    """The pandas-free paths ask `workbench.metrics.distance.is_missing`; where pandas hands in a
    column, `pd.isna` would have decided. Both must say the same of every scalar a column can hold."""
    import datetime
    from decimal import Decimal

    from workbench.metrics.distance import is_missing

    values = [None, math.nan, float("inf"), 0.0, -0.0, 1, True, False, "", "nan", "None", np.nan,
              np.float32("nan"), np.float16(1), np.int64(3), np.bool_(False), np.str_("x"), np.longdouble("nan"),
              np.datetime64("NaT"), np.timedelta64("NaT"), pd.NA, pd.NaT, pd.Timestamp("NaT"), pd.Timedelta("NaT"),
              Decimal("NaN"), Decimal("1.5"), complex("nan"), np.complex64("nan"), (1, 2), b"x",
              datetime.date(2020, 1, 1)]
    assert [is_missing(v) for v in values] == [bool(pd.isna(v)) if pd.api.types.is_scalar(v) else False
                                              for v in values]
