"""Cluster-bootstrap helpers: resample weights and vectorised percentile intervals."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.agreement.bootstrap import per_clip_sum, percentile_intervals, resample_weights, resampled


def test_resample_weights_are_reproducible_multiplicities() -> None:
    weights = resample_weights(50, 300, seed=4, stream="effect/all/all")
    assert weights.shape == (300, 50)
    assert (weights.sum(axis=1) == 50).all()
    np.testing.assert_array_equal(weights, resample_weights(50, 300, seed=4, stream="effect/all/all"))
    assert not np.array_equal(weights, resample_weights(50, 300, seed=5, stream="effect/all/all"))
    assert not np.array_equal(weights, resample_weights(50, 300, seed=4, stream="effect/category/x"))
    # every clip is drawn with probability 1/n: about one copy each on average
    assert abs(weights.mean() - 1.0) < 0.05


def test_resampled_tables_equal_explicit_resampling() -> None:
    rng = np.random.default_rng(0)
    per_unit = rng.integers(0, 3, size=(40, 2, 2)).astype(float)
    clip_of_unit = rng.integers(0, 10, 40)
    per_clip = per_clip_sum(clip_of_unit, per_unit, 10)
    weights = resample_weights(10, 5, seed=1, stream="s")
    fast = resampled(weights, per_clip)
    for b in range(5):
        explicit = sum(weights[b, c] * per_unit[clip_of_unit == c].sum(axis=0) for c in range(10))
        np.testing.assert_allclose(fast[b], explicit)


def test_percentile_intervals_skip_undefined_resamples() -> None:
    rng = np.random.default_rng(2)
    samples = rng.normal(size=(3, 401))
    samples[1, :37] = np.nan
    samples[2, :] = np.nan
    low, high, undefined, total = percentile_intervals(samples)
    assert low[0] == pytest.approx(np.percentile(samples[0], 2.5), abs=1e-12)
    assert high[0] == pytest.approx(np.percentile(samples[0], 97.5), abs=1e-12)
    finite = samples[1][np.isfinite(samples[1])]
    assert low[1] == pytest.approx(np.percentile(finite, 2.5), abs=1e-12)
    assert high[1] == pytest.approx(np.percentile(finite, 97.5), abs=1e-12)
    assert np.isnan(low[2]) and np.isnan(high[2])
    assert list(undefined) == [0, 37, 401] and list(total) == [401] * 3
