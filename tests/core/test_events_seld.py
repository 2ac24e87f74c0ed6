"""SELD metrics equal the official DCASE baseline code (fixtures computed once with it), values
derived by hand on small cases, and properties."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.errors import InputError
from workbench.events.seld import evaluate_seld
from workbench.events.starss23 import parse_metadata_text

FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "seld_official.json").read_text())
KEYS = ("error_rate", "f_score", "doa_error_deg", "localization_recall", "seld_score", "relative_distance_error")


def _pairs(files: list[dict[str, str]]):
    return [(parse_metadata_text(f["ref"], f"ref{i}.csv"), parse_metadata_text(f["pred"], f"ref{i}.csv"))
            for i, f in enumerate(files)]


def test_the_fixture_names_the_official_code_it_came_from() -> None:
    assert "seld-dcase2023 @ 24d14c9" in FIXTURES["note"] and "DCASE2024_seld_baseline @ 0b07887" in FIXTURES["note"]


@pytest.mark.parametrize("case", FIXTURES["cases"], ids=[c["name"] for c in FIXTURES["cases"]])
def test_equal_to_the_official_dcase_code(case: dict) -> None:
    result = evaluate_seld(_pairs(case["files"])).as_dict()
    assert result["metric"] == ("dcase2024" if case["distance"] else "dcase2023")
    for key in KEYS:
        if key not in case["expected"]:
            continue
        expected = case["expected"][key]
        if expected is None:
            assert result[key] is None, key
        else:
            assert result[key] == pytest.approx(expected, abs=1e-6), key


def _file(rows: list[str]) -> str:
    return "".join(r + "\n" for r in rows)


def test_2023_by_hand_one_class_one_segment_within_threshold() -> None:
    # One source of class 0 in frames 0-14 (the official length is the last reference frame,
    # 14: two segments); prediction 10° off in frames 0-9 only.
    ref = _file([f"{f},0,0,0,0" for f in range(15)])
    pred = _file([f"{f},0,0,10,0" for f in range(10)])
    r = evaluate_seld([(parse_metadata_text(ref, "r"), parse_metadata_text(pred, "p"))], n_classes=1)
    # Segment 0: matched track, 10° ≤ 20° → TP; segment 1: reference only → FN (a deletion).
    # F = 1 / (1 + 0.5·1) = 2/3; ER = (S + D + I) / Nref = (0 + 1 + 0) / 2; LE = 10; LR = 1/2.
    assert r.f_score == pytest.approx(2 / 3)
    assert r.error_rate == pytest.approx(0.5)
    assert r.doa_error_deg == pytest.approx(10.0)
    assert r.localization_recall == pytest.approx(0.5)
    assert r.seld_score == pytest.approx((0.5 + 1 / 3 + 10 / 180 + 0.5) / 4)


def test_2023_by_hand_a_wrong_class_is_a_miss_and_a_false_alarm() -> None:
    ref = _file([f"{f},0,0,0,0" for f in range(10)])
    pred = _file([f"{f},1,0,0,0" for f in range(10)])
    r = evaluate_seld([(parse_metadata_text(ref, "r"), parse_metadata_text(pred, "p"))], n_classes=2)
    # one segment (last frame 9): class 0 FN, class 1 FP → one substitution: ER = 1/1.
    assert r.error_rate == pytest.approx(1.0)
    assert r.f_score == pytest.approx(0.0)
    assert r.doa_error_deg == pytest.approx(180.0)  # no class has a match
    assert r.localization_recall == pytest.approx(0.0)


def test_2024_by_hand_distance_threshold_makes_a_spatial_false_positive() -> None:
    # Frames 0-4 (the last, 4, is dropped as in the official code): 4 frames, DOA exact,
    # predicted 300 cm against 100 cm → relative error 2 > 1 → not a true positive.
    ref = _file([f"{f},0,0,0,0,100" for f in range(5)])
    pred = _file([f"{f},0,0,0,0,300" for f in range(5)])
    r = evaluate_seld([(parse_metadata_text(ref, "r"), parse_metadata_text(pred, "p"))], n_classes=1)
    assert r.metric == "dcase2024"
    assert r.f_score == pytest.approx(0.0)
    assert r.relative_distance_error == pytest.approx(2.0)
    assert r.localization_recall == pytest.approx(1.0)
    assert r.doa_error_deg == pytest.approx(0.0, abs=1e-2)  # the baseline's 1e-10 normalisation
    assert r.seld_score == pytest.approx((1.0 + r.doa_error_deg / 180 + 2.0) / 3)
    loose = evaluate_seld([(parse_metadata_text(ref, "r"), parse_metadata_text(pred, "p"))], n_classes=1,
                          distance_threshold=3.0)
    assert loose.f_score == pytest.approx(1.0)


def test_properties_perfect_prediction_and_threshold_monotonicity() -> None:
    case = next(c for c in FIXTURES["cases"] if c["name"] == "random_three_files_2023")
    refs = [parse_metadata_text(f["ref"], f"r{i}") for i, f in enumerate(case["files"])]
    perfect = evaluate_seld([(r, r) for r in refs])
    assert perfect.error_rate == pytest.approx(0.0)
    assert perfect.localization_recall == pytest.approx(
        sum(1 for name, v in perfect.classwise.items() if name != "columns" and v[2] > 0) / 13)
    pairs = _pairs(case["files"])
    f_scores = [evaluate_seld(pairs, doa_threshold=t).f_score for t in (5, 20, 60, 180)]
    assert f_scores == sorted(f_scores)  # a looser threshold never lowers F
    errors = [evaluate_seld(pairs, doa_threshold=t).doa_error_deg for t in (5, 180)]
    assert errors[0] == pytest.approx(errors[1])  # the DOA error does not depend on the threshold


def test_bad_folders_are_refused() -> None:
    empty = parse_metadata_text("", "empty.csv")
    with pytest.raises(InputError, match="empty.csv: the reference file has no rows"):
        evaluate_seld([(empty, empty)])
    with_d = parse_metadata_text("0,0,0,0,0,100\n", "a.csv")
    without = parse_metadata_text("0,0,0,0,0\n", "b.csv")
    with pytest.raises(InputError, match="mixes files"):
        evaluate_seld([(with_d, with_d), (without, without)])
    with pytest.raises(InputError, match="b.csv: the prediction has no distance column"):
        evaluate_seld([(with_d, without)])
