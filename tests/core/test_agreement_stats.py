"""Agreement coefficients against the reference values of agreement.md and the libraries."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score

from tests.support.pooling import pair_table
from workbench.agreement import stats

NAN = np.nan
KRIPP = np.array(
    [
        [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
        [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
        [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
    ]
)
FLEISS = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)
COHEN_BINARY = ([0] * 40 + [1] * 60, [0] * 20 + [1] * 20 + [0] * 10 + [1] * 50)
COHEN_THREE = ([0] * 46 + [1] * 44 + [2] * 10, [0] * 52 + [1] * 32 + [2] * 16)


def test_cohen_kappa_reference_values() -> None:
    assert stats.cohen_kappa(*COHEN_BINARY) == pytest.approx(0.3478, abs=5e-5)
    assert stats.cohen_kappa(*COHEN_THREE) == pytest.approx(0.8013, abs=5e-5)


def test_cohen_kappa_analytic_interval_reference() -> None:
    result = stats.cohen_kappa_analytic(np.array([[0, 4, 1], [0, 8, 0], [0, 1, 5]]))
    assert result.kappa == pytest.approx(0.4842, abs=5e-5)
    assert result.std_error == pytest.approx(0.1380, abs=5e-5)
    assert result.ci_low == pytest.approx(0.2137, abs=5e-5)
    assert result.ci_high == pytest.approx(0.7547, abs=5e-5)


def test_fleiss_kappa_reference() -> None:
    assert stats.fleiss_kappa(FLEISS) == pytest.approx(0.2099, abs=5e-5)
    agreement, units, totals = stats.fleiss_sums(FLEISS.astype(float))
    fast = stats.fleiss_from_sums(agreement.sum(), units.sum(), totals.sum(0), 14)
    assert float(fast) == pytest.approx(0.2099, abs=5e-5)


def test_krippendorff_reference() -> None:
    assert stats.krippendorff_alpha(KRIPP, "nominal") == pytest.approx(0.691358, abs=5e-7)
    assert stats.krippendorff_alpha(KRIPP, "interval") == pytest.approx(0.810845, abs=5e-7)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_table_path_matches_package(level: str) -> None:
    values = np.array([1.0, 2.0, 3.0, 4.0])
    codes = np.where(np.isnan(KRIPP), -1, np.searchsorted(values, np.nan_to_num(KRIPP))).astype(int)
    counts = stats.unit_counts(codes.T, 4)
    fast = stats.alpha_from_coincidence(stats.coincidence_matrices(counts).sum(0), values, level)
    assert float(fast) == pytest.approx(stats.krippendorff_alpha(KRIPP, level), abs=1e-9)


def test_identical_labels_give_kappa_one() -> None:
    labels = ["helped", "misled", "neutral", "helped", "neutral"]
    assert stats.cohen_kappa(labels, labels) == 1.0
    table = pair_table(np.array([0, 1, 2, 0, 2]), np.array([0, 1, 2, 0, 2]), 3)
    assert float(stats.pair_table_stats(table, None)["cohen_kappa"]) == 1.0


@pytest.mark.parametrize("b_label", ["helped", "misled"])
def test_constant_raters_give_undefined_kappa(b_label: str) -> None:
    a = ["helped"] * 8
    b = [b_label] * 8
    assert stats.cohen_kappa(a, b) is None
    assert stats.cohen_kappa(a, b, labels=["helped", "misled", "neutral"], weights="linear") is None
    assert stats.cohen_kappa_analytic(np.array([[8, 0], [0, 0]])).kappa is None
    table = pair_table(np.zeros(8, int), np.full(8, 0 if b_label == "helped" else 1), 3)
    assert np.isnan(stats.pair_table_stats(table, None)["cohen_kappa"])


def test_undefined_multi_rater_coefficients_are_none() -> None:
    same = np.ones((3, 6))
    assert stats.krippendorff_alpha(same, "nominal") is None
    assert stats.fleiss_kappa(np.array([[3, 0], [3, 0]])) is None
    assert stats.icc(np.ones((5, 2))).icc2_1 is None
    assert stats.spearman([1, 1, 1], [1, 2, 3]) is None
    assert stats.percent_agreement([None, 1], [2, None]) is None


def test_gwet_ac1_by_hand() -> None:
    # Two raters, 10 units, table [[5, 1], [2, 2]]: p_o = 0.7, margins (6, 4) and (7, 3),
    # pi = (13/20, 7/20), p_e = 2 * 0.65 * 0.35 = 0.455, AC1 = (0.7 - 0.455) / 0.545.
    a = [0] * 6 + [1] * 4
    b = [0] * 5 + [1] + [0] * 2 + [1] * 2
    expected = (0.7 - 0.455) / 0.545
    assert stats.gwet_ac1(np.array([a, b], float)) == pytest.approx(expected, abs=1e-12)
    fast = stats.pair_table_stats(pair_table(np.array(a), np.array(b), 2), None)
    assert float(fast["gwet_ac1"]) == pytest.approx(expected, abs=1e-12)
    assert float(fast["pabak"]) == pytest.approx(2 * 0.7 - 1)
    assert stats.pabak(0.7) == pytest.approx(0.4)


def test_gwet_ac1_three_raters_by_hand() -> None:
    # Units: (0,0,0), (0,0,1), (1,1,-), (0,-,-).  Agreement terms 1, 1/3, 1 over 3 pairable
    # units; shares of category 0: 1, 2/3, 0, 1 over the 4 rated units.
    data = np.array([[0, 0, 1, 0], [0, 0, 1, NAN], [0, 1, NAN, NAN]], float)
    p_a = (1 + 1 / 3 + 1) / 3
    pi0 = (1 + 2 / 3 + 0 + 1) / 4
    p_e = 2 * pi0 * (1 - pi0)
    assert stats.gwet_ac1(data) == pytest.approx((p_a - p_e) / (1 - p_e), abs=1e-12)


def test_pair_table_path_matches_libraries() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, 300)
    b = np.clip(a + rng.integers(-1, 2, 300), 0, 3)
    values = np.arange(4.0)
    fast = stats.pair_table_stats(pair_table(a, b, 4), values)
    labels = [0, 1, 2, 3]
    assert fast["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=labels))
    assert fast["weighted_kappa_linear"] == pytest.approx(cohen_kappa_score(a, b, labels=labels, weights="linear"))
    assert fast["weighted_kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(a, b, labels=labels, weights="quadratic")
    )
    assert fast["spearman"] == pytest.approx(spearmanr(a, b).statistic)
    assert fast["kendall_tau_b"] == pytest.approx(kendalltau(a, b, variant="b").statistic)
    assert fast["mean_bias"] == pytest.approx(np.mean(b - a))
    assert fast["mae"] == pytest.approx(np.mean(np.abs(b - a)))
    assert fast["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(a, b))
    iccs = stats.icc(np.column_stack([a, b]))
    assert fast["icc2_1"] == pytest.approx(iccs.icc2_1)
    assert fast["icc3_1"] == pytest.approx(iccs.icc3_1)
    for level in ("nominal", "ordinal", "interval"):
        assert fast[f"alpha_{level}"] == pytest.approx(stats.krippendorff_alpha(np.vstack([a, b]), level))


def test_table_stats_are_batched() -> None:
    tables = np.stack([pair_table(np.array(COHEN_BINARY[0]), np.array(COHEN_BINARY[1]), 2)] * 3)
    kappas = stats.pair_table_stats(tables, None)["cohen_kappa"]
    assert kappas.shape == (3,)
    assert kappas == pytest.approx([0.347826] * 3, abs=1e-6)


def test_fleiss_from_codes_and_mismatched_lengths() -> None:
    codes = np.array([[0, 0, 1], [1, 1, 1], [0, 1, NAN]])
    expected = stats.fleiss_kappa(np.array([[2, 1], [0, 3]]))
    assert stats.fleiss_kappa_from_ratings(codes) == pytest.approx(expected)
    with pytest.raises(ValueError, match="one rating per unit"):
        stats.cohen_kappa([1, 2], [1])
