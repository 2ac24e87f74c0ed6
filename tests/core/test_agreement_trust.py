"""Agreement numbers that can be trusted: leave-one-out expert consensus, n and minimums per coefficient."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.cli_helpers import run_json
from workbench.agreement import minimums
from workbench.agreement.analysis import compute_coefficients
from workbench.agreement.units import RATING_COLUMNS, add_derived_raters


def _ratings(rows: list[tuple[str, int, str, object]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rater, clip index, label, value) → long table (one category per clip) and clip table."""
    kind = {"expert": "expert", "judge": "judge"}
    table = pd.DataFrame(
        [(clip, f"c{clip:02d}", "/m/x", f"c{clip:02d}|/m/x", rater, kind[rater.split(":")[0]], label, value)
         for rater, clip, label, value in rows],
        columns=RATING_COLUMNS,
    )
    clips = pd.DataFrame({"clip_id": sorted(table["clip_id"].unique())})
    clips["clip_key"] = clips["clip_id"].map(lambda c: f"c{c:02d}")
    clips["continent"] = "Europe"
    clips["speech"] = False
    return add_derived_raters(table), clips


def _row(table: pd.DataFrame, label: str, rater_a: str, rater_b: str, coefficient: str) -> pd.Series:
    found = table[(table["label"] == label) & (table["subset_kind"] == "all") & (table["rater_a"] == rater_a)
                  & (table["rater_b"] == rater_b) & (table["coefficient"] == coefficient)]
    assert len(found) == 1, found
    return found.iloc[0]


def test_an_expert_is_never_compared_with_a_consensus_that_contains_her() -> None:
    # two experts: the consensus of the *others* is one expert, so the comparison is not available
    a = [0, 1, 2, 3, 0, 1, 2, 3]
    b = [0, 1, 2, 2, 1, 1, 3, 3]
    ratings, clips = _ratings([("expert:A", i, "contribution", v) for i, v in enumerate(a)]
                              + [("expert:B", i, "contribution", v) for i, v in enumerate(b)])
    table = compute_coefficients(ratings, clips, bootstrap=0)
    pairs = table[["rater_a", "rater_b"]].apply(set, axis=1)
    assert not pairs.isin([{"expert:A", "expert_consensus"}, {"expert:B", "expert_consensus"}]).any()
    row = _row(table, "contribution", "expert:A", "expert_consensus_others", "weighted_kappa_quadratic")
    assert pd.isna(row["value"]) and pd.isna(row["ci_low"])
    assert row["reason"] == "needs at least 2 other experts on a unit; 1 available"
    # the expert–expert pair itself is still there, with its n
    pair = _row(table, "contribution", "expert:A", "expert:B", "percent_agreement")
    assert pair["value"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
    assert pair["n_units"] == 8 and pair["n_raters"] == 2 and pd.isna(pair["reason"])


def test_leave_one_out_consensus_uses_the_other_experts_on_units_with_two_of_them() -> None:
    a = [0, 1, 2, 3, 0, 1, 2, 3, 1]
    b = [0, 1, 2, 2, 1, 1, 3, 3, 2]
    c = [1, 1, 2, 3, 0, 2, 3, 2]  # C skips the last clip: there A has one other expert only
    rows = [("expert:A", i, "contribution", v) for i, v in enumerate(a)]
    rows += [("expert:B", i, "contribution", v) for i, v in enumerate(b)]
    rows += [("expert:C", i, "contribution", v) for i, v in enumerate(c)]
    ratings, clips = _ratings(rows)
    table = compute_coefficients(ratings, clips, bootstrap=0)
    row = _row(table, "contribution", "expert:A", "expert_consensus_others", "mae")
    others = (np.array(b[:8]) + np.array(c)) / 2
    assert row["value"] == pytest.approx(np.mean(np.abs(others - np.array(a[:8]))))
    assert row["n_units"] == 8 and row["n_raters"] == 2 and pd.isna(row["reason"])
    assert row["section"] == "expert-expert"
    # with the expert herself in the consensus the error would be smaller: the old, flattering number
    with_self = (np.array(a[:8]) + np.array(b[:8]) + np.array(c)) / 3
    assert row["value"] > np.mean(np.abs(with_self - np.array(a[:8])))


def test_every_coefficient_carries_n_and_is_null_below_its_minimum() -> None:
    rng = np.random.default_rng(4)
    few = 3
    many = 12
    rows = []
    for judge in ("judge:x", "judge:y"):
        rows += [(judge, i, "effect", ["helped", "misled", "neutral"][int(rng.integers(0, 3))]) for i in range(few)]
        rows += [(judge, i, "contribution", int(rng.integers(0, 4))) for i in range(many)]
    # a third judge rates 8 contributions: 8 complete units for ICC over the pair (x, z)
    rows += [("judge:z", i, "contribution", int(rng.integers(0, 4))) for i in range(8)]
    ratings, clips = _ratings(rows)
    table = compute_coefficients(ratings, clips, bootstrap=30, seed=1)
    assert {"n_units", "n_raters", "reason"} <= set(table.columns)
    assert table["n_raters"].notna().all() and (table["n_raters"] >= 2).all()

    kappa = _row(table, "effect", "judge:x", "judge:y", "cohen_kappa")
    assert kappa["n_units"] == few and kappa["n_raters"] == 2
    assert pd.isna(kappa["value"]) and pd.isna(kappa["ci_low"]) and pd.isna(kappa["ci_high"])
    assert kappa["reason"] == f"needs at least {minimums.MIN_UNITS} units; {few} available"
    percent = _row(table, "effect", "judge:x", "judge:y", "percent_agreement")
    assert pd.isna(percent["value"]) and "needs at least" in percent["reason"]

    icc_short = _row(table, "contribution", "judge:x", "judge:z", "icc2_1")
    assert icc_short["n_units"] == 8 and pd.isna(icc_short["value"])
    assert icc_short["reason"] == f"needs at least {minimums.MIN_UNITS_ICC} complete units (rated by every rater); 8 available"
    icc_long = _row(table, "contribution", "judge:x", "judge:y", "icc2_1")
    assert icc_long["n_units"] == many and np.isfinite(icc_long["value"]) and pd.isna(icc_long["reason"])
    kappa_long = _row(table, "contribution", "judge:x", "judge:z", "weighted_kappa_quadratic")
    assert kappa_long["n_units"] == 8 and np.isfinite(kappa_long["value"])

    alpha = table[(table["label"] == "effect") & (table["subset_kind"] == "all")
                  & (table["coefficient"] == "krippendorff_alpha_nominal")].iloc[0]
    assert alpha["n_units"] == few and alpha["n_raters"] == 2 and pd.isna(alpha["value"])
    # no number anywhere below its floor
    floors = table["coefficient"].map(minimums.min_units)
    assert table.loc[table["n_units"] < floors, "value"].isna().all()


def test_minimums_are_documented_constants() -> None:
    assert minimums.MIN_UNITS >= 5 and minimums.MIN_UNITS_ICC >= minimums.MIN_UNITS and minimums.MIN_RATERS == 2
    text = minimums.describe_text()
    assert str(minimums.MIN_UNITS) in text and str(minimums.MIN_UNITS_ICC) in text


def _write(path: Path, rows: list[tuple]) -> Path:
    path.write_text("unit,rater,value\n" + "".join(",".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ratings_json_gives_n_and_reasons_and_nulls_below_minimum(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    three = [(f"u{i}", r, v) for i, v in enumerate(["x", "y", "x"]) for r in ("A", "B")]
    result = run_json(capsys, "--json", "agreement", "--ratings", str(_write(tmp_path / "s.csv", three)))
    # the contract keys are kept; the values are null below the minimum
    assert {"n_units", "raters", "percent_agreement", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha",
            "gwet_ac1"} <= set(result)
    assert result["cohen_kappa"]["A|B"] is None
    assert result["percent_agreement"] is None and result["krippendorff_alpha"] is None
    details = result["details"]
    assert details["cohen_kappa"]["A|B"] == {"value": None, "n_units": 3, "n_raters": 2,
                                             "reason": "needs at least 5 units; 3 available"}
    assert details["krippendorff_alpha"]["n_units"] == 3 and details["krippendorff_alpha"]["n_raters"] == 2
    assert result["minimums"]["min_units"] == minimums.MIN_UNITS

    rng = np.random.default_rng(2)
    truth = rng.integers(1, 6, 8)
    rows = [(f"u{i}", r, int(np.clip(truth[i] + rng.integers(-1, 2), 1, 5))) for r in ("A", "B", "C") for i in range(8)]
    ordinal = run_json(capsys, "--json", "agreement", "--ratings", str(_write(tmp_path / "o.csv", rows)),
                       "--level", "ordinal")
    assert ordinal["krippendorff_alpha"] is not None
    assert ordinal["details"]["krippendorff_alpha"] == {
        "value": ordinal["krippendorff_alpha"], "n_units": 8, "n_raters": 3, "reason": None}
    assert ordinal["icc2_1"] is None and ordinal["icc3_1"] is None
    assert ordinal["details"]["icc2_1"]["reason"] == "needs at least 10 complete units (rated by every rater); 8 available"
    assert ordinal["details"]["weighted_kappa_linear"]["A|B"]["n_units"] == 8
    assert ordinal["details"]["fleiss_kappa"]["n_raters"] == 3
