"""The pure curation model: the design doc's worked example, properties, θ, detection, diff."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.curation.model import (
    FitParameters,
    consensus_contributions,
    detected_categories,
    diff_runs,
    fit_categories,
    localizability,
    percentiles,
    quality_flags,
    recalibrate_theta,
    roll_up,
)

SPEECH, BIRD = "/m/09x0r", "/m/015p6"


def worked_example() -> tuple[pd.DataFrame, FitParameters]:
    scores = {"A": (100.0, 3, 0), "B": (5000.0, 1, 3), "C": (300.0, 2, 1)}
    rows = []
    for clip, (error, speech, bird) in scores.items():
        rows.append((clip, SPEECH, speech / 3, error))
        rows.append((clip, BIRD, bird / 3, error))
    frame = pd.DataFrame(rows, columns=["clip", "category", "x", "error_km"])
    return frame, FitParameters(gamma_km=1000, alpha=0.05, n_min=1)


def test_worked_example_matches_the_design_doc() -> None:
    frame, params = worked_example()
    categories = fit_categories(frame, params)
    assert categories.loc[SPEECH, "a"] == pytest.approx(0.951691, abs=1e-6)
    assert categories.loc[SPEECH, "a_bar"] == pytest.approx(0.206777, abs=1e-6)
    assert categories.loc[SPEECH, "polarity"] == "P"
    assert categories.loc[BIRD, "a"] == pytest.approx(0.245356, abs=1e-6)
    assert categories.loc[BIRD, "a_bar"] == pytest.approx(0.868462, abs=1e-6)
    assert categories.loc[BIRD, "polarity"] == "N"
    assert categories.loc[SPEECH, "support"] == 3 and categories.loc[BIRD, "support"] == 2
    scores = localizability(frame, categories, clips=["A", "B", "C"])
    assert scores["A"] == pytest.approx(0.951691, abs=1e-6)
    assert scores["B"] == pytest.approx(-0.551232, abs=1e-6)
    assert scores["C"] == pytest.approx(0.344973, abs=1e-6)


def test_worked_example_from_judge_scores_via_consensus() -> None:
    judge_rows = [
        (clip, category, judge, score)
        for clip, speech, bird in (("A", 3, 0), ("B", 1, 3), ("C", 2, 1))
        for judge in ("j1", "j2", "j3")
        for category, score in ((SPEECH, speech), (BIRD, bird))
    ]
    judges = pd.DataFrame(judge_rows, columns=["clip", "category", "judge", "score"])
    x = consensus_contributions(judges)
    errors = pd.Series({"A": 100.0, "B": 5000.0, "C": 300.0})
    frame = x.assign(error_km=x["clip"].map(errors))
    categories = fit_categories(frame, FitParameters(n_min=1))
    assert categories.loc[BIRD, "a_bar"] == pytest.approx(0.868462, abs=1e-6)


def test_n_min_makes_a_category_insufficient_and_neutral() -> None:
    frame, _ = worked_example()
    categories = fit_categories(frame, FitParameters(n_min=3))
    assert categories.loc[BIRD, "fitted_polarity"] == "insufficient"
    assert categories.loc[SPEECH, "fitted_polarity"] == "P"
    scores = localizability(frame, categories, clips=["A", "B", "C"])
    assert scores["B"] == pytest.approx(0.951691 / 3, abs=1e-6)


def test_undefined_error_is_left_out_of_the_fit_but_scored() -> None:
    frame, params = worked_example()
    extra = pd.DataFrame([("D", SPEECH, 1.0, np.nan)], columns=frame.columns)
    categories = fit_categories(pd.concat([frame, extra]), params)
    assert categories.loc[SPEECH, "a"] == pytest.approx(0.951691, abs=1e-6)
    assert categories.loc[SPEECH, "support"] == 3
    scores = localizability(pd.concat([frame, extra]), categories, clips=["A", "B", "C", "D"])
    assert scores["D"] == pytest.approx(0.951691, abs=1e-6)


def test_expert_overrides_polarity_and_per_clip_sign() -> None:
    frame, params = worked_example()
    categories = fit_categories(frame, params, polarity_overrides={BIRD: "neutral"})
    assert categories.loc[BIRD, "fitted_polarity"] == "N"
    assert categories.loc[BIRD, "polarity"] == "neutral"
    assert bool(categories.loc[BIRD, "overridden"]) and not bool(categories.loc[SPEECH, "overridden"])
    scores = localizability(frame, categories, clips=["A", "B", "C"])
    assert scores["B"] == pytest.approx(0.951691 / 3, abs=1e-6)
    per_clip = pd.DataFrame([("C", SPEECH, "N")], columns=["clip", "category", "polarity"])
    scores = localizability(frame, categories, clips=["A", "B", "C"], clip_polarity_overrides=per_clip)
    assert scores["C"] == pytest.approx(-0.206777 * 2 / 3, abs=1e-6)
    assert scores["A"] == pytest.approx(0.951691, abs=1e-6)


def test_consensus_expert_replaces_judges_and_adjudicator_wins() -> None:
    judges = pd.DataFrame(
        [("A", SPEECH, "j1", 3), ("A", SPEECH, "j2", None), ("A", BIRD, "j1", 1), ("A", BIRD, "j2", 2)],
        columns=["clip", "category", "judge", "score"],
    )
    experts = pd.DataFrame(
        [
            ("A", BIRD, "e1", 0, False),
            ("A", BIRD, "e2", 3, False),
            ("B", SPEECH, "e1", 1, False),
            ("B", SPEECH, "e2", 3, False),
            ("B", SPEECH, "boss", 2, True),
        ],
        columns=["clip", "category", "annotator", "score", "adjudicator"],
    )
    x = consensus_contributions(judges, experts).set_index(["clip", "category"])
    assert x.loc[("A", SPEECH), "x"] == pytest.approx(1.0)  # the failed judge is not counted
    assert x.loc[("A", SPEECH), "source"] == "judges"
    assert x.loc[("A", BIRD), "x"] == pytest.approx(0.5)  # mean of the two experts, not the judges
    assert x.loc[("B", SPEECH), "x"] == pytest.approx(2 / 3)  # the adjudicator's value
    assert len(x) == 3


def test_detection_threshold_and_top_n() -> None:
    tags = pd.DataFrame(
        [("A", "a", 0.9), ("A", "b", 0.5), ("A", "c", 0.2), ("A", "d", 0.1), ("B", "a", 0.14)],
        columns=["clip", "category", "probability"],
    )
    detected = detected_categories(tags, tau=0.15, top_n=2)
    assert list(zip(detected["clip"], detected["category"])) == [("A", "a"), ("A", "b")]


def test_roll_up_takes_the_max_and_counts_multi_root_classes_under_each() -> None:
    contributions = pd.DataFrame(
        [("A", "speech", 1 / 3), ("A", "laugh", 1.0), ("A", "bird", 2 / 3)], columns=["clip", "category", "x"]
    )
    roots = {"speech": ["human"], "laugh": ["human"], "bird": ["animal", "natural"]}
    rolled = roll_up(contributions, roots).set_index("category")["x"]
    assert rolled.to_dict() == pytest.approx({"animal": 2 / 3, "human": 1.0, "natural": 2 / 3})
    with pytest.raises(ValueError, match="not in the ontology"):
        roll_up(contributions, {"speech": ["human"]})


def test_percentiles_rank_the_pool() -> None:
    values = percentiles(pd.Series({"A": 0.5, "B": -1.0, "C": 0.5, "D": 2.0}))
    assert values.to_dict() == pytest.approx({"A": 62.5, "B": 25.0, "C": 62.5, "D": 100.0})


def test_theta_recalibration_needs_20_decisions_and_finds_the_separating_threshold() -> None:
    rng = np.random.default_rng(0)
    scores = pd.Series(rng.normal(size=40), index=[f"c{i}" for i in range(40)])
    decisions = pd.Series(np.where(scores > 0.3, "accept", "reject"), index=scores.index)
    few = recalibrate_theta(scores, decisions.iloc[:19])
    assert few.theta is None and few.n_decisions == 19 and "20" in few.reason
    ratings = pd.Series(np.clip(np.round(scores * 2 + 3), 1, 5), index=scores.index)
    calibration = recalibrate_theta(scores, decisions, ratings)
    assert calibration.balanced_accuracy == pytest.approx(1.0)
    below = scores[scores <= 0.3].max()
    above = scores[scores > 0.3].min()
    assert calibration.theta == pytest.approx((below + above) / 2)
    assert calibration.spearman > 0.9 and calibration.n_ratings == 40


def test_theta_recalibration_with_one_noisy_decision() -> None:
    scores = pd.Series(np.arange(20, dtype=float), index=[f"c{i}" for i in range(20)])
    decisions = pd.Series(["reject"] * 10 + ["accept"] * 10, index=scores.index)
    decisions["c2"] = "accept"
    calibration = recalibrate_theta(scores, decisions)
    assert calibration.theta == pytest.approx(9.5)
    assert calibration.balanced_accuracy == pytest.approx((10 / 11 + 1.0) / 2)


def test_quality_flags_apply_thresholds_and_the_aci_percentile() -> None:
    quality = pd.DataFrame(
        {
            "clip": ["A", "B", "C", "D"],
            "rms_dbfs": [-20.0, -60.0, -20.0, np.nan],
            "spectral_flatness": [0.1, 0.1, 0.7, 0.1],
            "clipping_ratio": [0.0, 0.0, 0.01, 0.0],
            "aci": [10.0, 20.0, 30.0, 40.0],
        }
    )
    flags = quality_flags(quality, FitParameters(aci_min_percentile=20.0))
    # a pool of 4 is too small for the ACI percentile (MIN_RELATIVE_POOL): A's low ACI raises nothing
    assert sorted(flags) == ["B", "C"]
    assert [f["flag"] for f in flags["B"]] == ["low_level"]
    assert [f["flag"] for f in flags["C"]] == ["flat_spectrum", "clipping"]
    assert flags["B"][0]["value"] == -60.0
    many = pd.DataFrame({"clip": [f"X{i}" for i in range(46)], "rms_dbfs": -20.0, "spectral_flatness": 0.1,
                         "clipping_ratio": 0.0, "aci": 50.0 + np.arange(46)})
    flags = quality_flags(pd.concat([quality, many], ignore_index=True), FitParameters(aci_min_percentile=20.0))
    assert [f["flag"] for f in flags["A"]] == ["low_complexity"] and flags["A"][0]["pool"]["clips"] == 50


def test_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="rollup"):
        FitParameters(rollup="genus")
    with pytest.raises(ValueError, match="tau"):
        FitParameters(tau=1.5)
    assert FitParameters.from_dict(FitParameters(alpha=0.1).to_dict()).alpha == 0.1


# --------------------------------------------------------------------------- properties

clip_ids = [f"k{i}" for i in range(6)]
category_ids = ["p_cat", "n_cat", "other"]


@st.composite
def random_frames(draw: st.DrawFn) -> pd.DataFrame:
    rows = []
    for clip in clip_ids:
        error = draw(st.sampled_from([5.0, 200.0, 900.0, 2000.0, 10_000.0]))
        for category in category_ids:
            score = draw(st.integers(0, 3))
            rows.append((clip, category, score / 3, error))
    return pd.DataFrame(rows, columns=["clip", "category", "x", "error_km"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=random_frames(), clip=st.sampled_from(clip_ids), bump=st.floats(0.01, 1.0))
def test_raising_a_contribution_moves_the_score_with_the_polarity(frame: pd.DataFrame, clip: str, bump: float) -> None:
    params = FitParameters(n_min=1)
    categories = fit_categories(frame, params, polarity_overrides={"p_cat": "P", "n_cat": "N"})
    before = localizability(frame, categories, clips=clip_ids)
    for category, direction in (("p_cat", 1), ("n_cat", -1)):
        raised = frame.copy()
        row = (raised["clip"] == clip) & (raised["category"] == category)
        raised.loc[row, "x"] = np.minimum(raised.loc[row, "x"] + bump, 1.0)
        after = localizability(raised, categories, clips=clip_ids)  # the fit stays fixed
        assert direction * (after[clip] - before[clip]) >= -1e-12


@settings(max_examples=60, deadline=None)
@given(frame=random_frames(), category=st.sampled_from(category_ids))
def test_forcing_a_category_to_n_never_raises_a_score(frame: pd.DataFrame, category: str) -> None:
    params = FitParameters(n_min=1)
    fitted = fit_categories(frame, params)
    forced = fit_categories(frame, params, polarity_overrides={category: "N"})
    before = localizability(frame, fitted, clips=clip_ids)
    after = localizability(frame, forced, clips=clip_ids)
    assert (after <= before + 1e-12).all()


@settings(max_examples=40, deadline=None)
@given(frame=random_frames())
def test_refitting_the_same_inputs_gives_an_empty_diff(frame: pd.DataFrame) -> None:
    params = FitParameters(n_min=2)

    def run() -> tuple[pd.Series, pd.DataFrame]:
        categories = fit_categories(frame, params)
        scores = localizability(frame, categories, clips=clip_ids)
        return categories["polarity"], pd.DataFrame({"localizability": scores, "candidate": scores > params.theta})

    diff = diff_runs(*run(), *run())
    assert diff.empty


def test_diff_reports_polarity_changes_entries_exits_and_moves() -> None:
    frame, params = worked_example()
    base = fit_categories(frame, params)
    forced = fit_categories(frame, params, polarity_overrides={BIRD: "neutral"})

    def clips(categories: pd.DataFrame) -> pd.DataFrame:
        scores = localizability(frame, categories, clips=["A", "B", "C"])
        return pd.DataFrame({"localizability": scores, "candidate": scores > 0})

    diff = diff_runs(base["polarity"], clips(base), forced["polarity"], clips(forced))
    assert [(c.category, c.old, c.new) for c in diff.polarity_changes] == [(BIRD, "N", "neutral")]
    assert diff.entered == ["B"] and diff.left == []
    assert [m.clip for m in diff.largest_moves] == ["B", "C"]
    assert diff.largest_moves[0].delta == pytest.approx(0.868462, abs=1e-6)
    assert not diff.empty
