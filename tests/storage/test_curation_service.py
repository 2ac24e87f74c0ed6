"""The curation service on a store populated directly: stored runs, diffs, previews, θ, detection."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, select

from storage.models import CurationCategoryResult, CurationClipResult, CurationRun
from tests.storage.test_curation_fixtures import (
    BIRD,
    SPEECH,
    WORKED_EXAMPLE,
    ClipSpec,
    add_annotator,
    build_project,
    set_category_label,
    set_clip_label,
    set_polarity,
    set_quality,
)
from workbench.curation import runs, service
from workbench.curation.model import FitParameters
from workbench.errors import AglwError

WORKED = FitParameters(n_min=1)


def counts(store) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return tuple(
            int(s.scalar(select(func.count()).select_from(table)))
            for table in (CurationRun, CurationCategoryResult, CurationClipResult)
        )


def test_stored_run_reproduces_the_worked_example(store) -> None:  # type: ignore[no-untyped-def]
    build_project(store, WORKED_EXAMPLE)
    result = service.fit(store, WORKED)
    assert result.run_id is not None and result.diff is None
    categories = {c.id: c for c in result.categories}
    assert categories[SPEECH].a == pytest.approx(0.951691, abs=1e-6)
    assert categories[SPEECH].a_bar == pytest.approx(0.206777, abs=1e-6)
    assert categories[BIRD].a_bar == pytest.approx(0.868462, abs=1e-6)
    assert (categories[SPEECH].polarity, categories[BIRD].polarity) == ("P", "N")
    scores = {c.key: c.localizability for c in result.clips}
    assert scores == pytest.approx({"clip_A": 0.951691, "clip_B": -0.551232, "clip_C": 0.344973}, abs=1e-6)
    assert {c.key for c in result.clips if c.candidate} == {"clip_A", "clip_C"}
    assert counts(store) == (1, 2, 3)
    with store.session() as s:
        run = s.get(CurationRun, result.run_id)
        assert run.parameters["n_min"] == 1 and run.parameters["alm_model"] == "alm-x"
        assert run.input_fingerprint == result.input_fingerprint
        assert run.summary["inputs"]["judge_run_ids"] == [1, 2, 3]
    payload = result.to_json()
    assert set(payload) >= {"run_id", "parameters", "categories", "clips", "diff"}
    assert set(payload["categories"][0]) >= {"id", "name", "a", "a_bar", "support", "polarity", "overridden"}
    assert set(payload["clips"][0]) >= {"key", "localizability", "percentile", "candidate"}


def test_refit_without_new_labels_gives_an_empty_diff(store) -> None:  # type: ignore[no-untyped-def]
    build_project(store, WORKED_EXAMPLE)
    first = service.fit(store, WORKED)
    second = service.fit(store, WORKED)
    assert second.diff is not None and second.diff.empty
    assert second.diff.base_run_id == first.run_id
    assert second.input_fingerprint == first.input_fingerprint
    assert runs.run_diff(store, first.run_id, second.run_id).empty
    assert [r.id for r in runs.list_runs(store)] == [first.run_id, second.run_id]


def test_diff_after_expert_label_changes(store) -> None:  # type: ignore[no-untyped-def]
    ids = build_project(store, WORKED_EXAMPLE)
    first = service.fit(store, WORKED)
    expert = add_annotator(store, "erin")
    set_polarity(store, expert, BIRD, "neutral")
    second = service.fit(store, WORKED)
    assert second.input_fingerprint != first.input_fingerprint
    bird = next(c for c in second.categories if c.id == BIRD)
    assert (bird.fitted_polarity, bird.polarity, bird.overridden) == ("N", "neutral", True)
    diff = second.diff
    assert [(c.category, c.old, c.new) for c in diff.polarity_changes] == [(BIRD, "N", "neutral")]
    assert diff.entered == ["clip_B"] and diff.left == []
    assert diff.largest_moves[0].clip == "clip_B"
    assert diff.largest_moves[0].delta == pytest.approx(0.868462, abs=1e-6)

    # an expert contribution replaces the judges' consensus for that clip and category
    set_category_label(store, expert, ids["clip_A"], SPEECH, contribution=0)
    third = service.fit(store, WORKED)
    scores = {c.key: c.localizability for c in third.clips}
    assert scores["clip_A"] == pytest.approx(0.0)
    assert "clip_A" in third.diff.left
    # a per-clip polarity flips only that clip
    set_category_label(store, expert, ids["clip_C"], SPEECH, polarity="N")
    fourth = service.fit(store, WORKED)
    speech = next(c for c in fourth.categories if c.id == SPEECH)
    score_c = next(c.localizability for c in fourth.clips if c.key == "clip_C")
    assert score_c == pytest.approx(-speech.a_bar * 2 / 3)


def test_adjudicator_contribution_wins_over_experts(store) -> None:  # type: ignore[no-untyped-def]
    ids = build_project(store, WORKED_EXAMPLE)
    one, two = add_annotator(store, "e1"), add_annotator(store, "e2")
    boss = add_annotator(store, "boss", role="adjudicator")
    set_category_label(store, one, ids["clip_A"], SPEECH, contribution=0)
    set_category_label(store, two, ids["clip_A"], SPEECH, contribution=2)
    mean_fit = service.fit(store, WORKED, preview=True)
    set_category_label(store, boss, ids["clip_A"], SPEECH, contribution=3)
    boss_fit = service.fit(store, WORKED, preview=True)
    speech_mean = next(c for c in mean_fit.categories if c.id == SPEECH)
    speech_boss = next(c for c in boss_fit.categories if c.id == SPEECH)
    assert speech_boss.a == pytest.approx(0.951691, abs=1e-6)  # as if the judges' 3 stood
    assert speech_mean.a != pytest.approx(speech_boss.a)


def test_preview_stores_nothing_and_applies_what_if(store) -> None:  # type: ignore[no-untyped-def]
    build_project(store, WORKED_EXAMPLE)
    stored = service.fit(store, WORKED)
    before = counts(store)
    what_if = service.WhatIf(category_polarity={SPEECH: "N"})
    preview = service.fit(store, WORKED, preview=True, what_if=what_if)
    assert preview.run_id is None
    assert counts(store) == before
    assert all(not c.candidate for c in preview.clips)
    assert sorted(preview.diff.left) == ["clip_A", "clip_C"]
    assert preview.diff.base_run_id == stored.run_id
    assert preview.summary["what_if"]["category_polarity"] == {SPEECH: "N"}
    contribution = service.WhatIf(contributions={("clip_B", BIRD): 0})
    changed = service.fit(store, WORKED, preview=True, what_if=contribution)
    assert {c.key: c.candidate for c in changed.clips}["clip_B"] is True
    assert counts(store) == before
    with pytest.raises(AglwError, match="previews only"):
        service.fit(store, WORKED, what_if=what_if)
    with pytest.raises(AglwError, match="not in the fit's pool"):
        service.fit(store, WORKED, preview=True, what_if=service.WhatIf(clip_polarity={("nope", SPEECH): "P"}))


def test_theta_recalibration_from_twenty_decisions(store) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    specs = [
        ClipSpec(f"k{i:02d}", float(rng.choice([50.0, 400.0, 3000.0, 8000.0])), {SPEECH: int(rng.integers(0, 4)),
                 BIRD: int(rng.integers(0, 4))})
        for i in range(30)
    ]
    ids = build_project(store, specs)
    params = FitParameters(n_min=1)
    scores = {c.key: c.localizability for c in service.fit(store, params, preview=True).clips}
    expert = add_annotator(store, "erin")
    cut = float(np.quantile(list(scores.values()), 0.6))
    for key, score in list(scores.items())[:24]:
        set_clip_label(store, expert, ids[key], decision="accept" if score > cut else "reject",
                       rating=5 if score > cut else 2)
    plain = service.fit(store, params)
    calibration = plain.summary["theta_calibration"]
    assert calibration["n_decisions"] == 24
    assert calibration["balanced_accuracy"] == pytest.approx(1.0)
    assert calibration["spearman"] > 0.5
    assert plain.parameters["theta"] == 0.0
    recalibrated = service.fit(store, params, recalibrate_theta=True)
    theta = calibration["theta"]
    assert recalibrated.parameters["theta"] == pytest.approx(theta)
    assert recalibrated.summary["theta_requested"] == 0.0
    assert all(c.candidate == (c.localizability > theta) for c in recalibrated.clips)


def test_theta_is_not_recalibrated_below_twenty_decisions(store) -> None:  # type: ignore[no-untyped-def]
    ids = build_project(store, WORKED_EXAMPLE)
    expert = add_annotator(store, "erin")
    set_clip_label(store, expert, ids["clip_A"], decision="accept")
    result = service.fit(store, WORKED, recalibrate_theta=True, preview=True)
    assert result.parameters["theta"] == 0.0
    assert result.summary["theta_calibration"]["theta"] is None


def test_detection_restricts_judged_categories_to_tags(store) -> None:  # type: ignore[no-untyped-def]
    specs = [
        ClipSpec(s.key, s.error_km, s.scores, tags={SPEECH: 0.9, BIRD: 0.9 if s.key != "clip_C" else 0.05})
        for s in WORKED_EXAMPLE
    ]
    build_project(store, specs, with_tags=True)
    result = service.fit(store, WORKED, preview=True)
    bird = next(c for c in result.categories if c.id == BIRD)
    assert bird.support == 1  # clip_C's bird is below tau; clip_A's bird scored 0
    loose = service.fit(store, FitParameters(n_min=1, tau=0.01), preview=True)
    assert next(c for c in loose.categories if c.id == BIRD).support == 2


def test_refusal_and_quality_flags(store) -> None:  # type: ignore[no-untyped-def]
    specs = [*WORKED_EXAMPLE, ClipSpec("clip_R", 10_000.0, {SPEECH: 3})]
    ids = build_project(store, specs)
    set_quality(store, ids["clip_A"], rms_dbfs=-70.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=100.0)
    result = service.fit(store, WORKED, preview=True)
    assert result.summary["n_refusals"] == 1
    speech = next(c for c in result.categories if c.id == SPEECH)
    assert speech.support == 4 and speech.a_bar > 0.206777
    flags = {c.key: c.quality_flags for c in result.clips}
    assert [f["flag"] for f in flags["clip_A"]] == ["low_level"] and flags["clip_A"][0]["overruled"] is False
    set_clip_label(store, add_annotator(store, "erin"), ids["clip_A"], quality_overruled=True)
    result = service.fit(store, WORKED, preview=True)
    assert next(c for c in result.clips if c.key == "clip_A").quality_flags[0]["overruled"] is True


def test_ambiguous_alm_run_is_a_handled_error(store) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AglwError, match="no ALM predictions"):
        service.fit(store)
