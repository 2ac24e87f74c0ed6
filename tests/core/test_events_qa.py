"""Spatial QA: generation on a synthetic scene with known answers, and scoring (front/back
confusions, ±1 hour, degrees, unparsable and missing answers)."""

from __future__ import annotations

import pytest

from workbench.events.model import SpatialEventData
from workbench.events.qa import ClipEvents, parse_hour, questions_for_clip, score_answers
from workbench.events.scene import SceneSource, render_scene


def _scene_clip() -> ClipEvents:
    # Speech front-left (+60°, 2 m), a door behind on the right (−150°, 4 m), a bell above (+40° el)
    # and footsteps moving a full half turn (a moving source: no direction question).
    scene = render_scene(
        [
            SceneSource(1, 0.0, 1.0, 60.0, 0.0, distance_cm=200.0),
            SceneSource(7, 1.0, 2.0, -150.0, 0.0, distance_cm=400.0),
            SceneSource(11, 2.0, 3.0, 0.0, 40.0, distance_cm=300.0),
            SceneSource(6, 3.0, 4.0, -90.0, 0.0, degrees_per_second=180.0, distance_cm=300.0),
        ],
        4.0, sample_rate=8000, snr_db=None,
    )
    events = [e.with_changes(uid=f"e{i}") for i, e in enumerate(scene.events)]
    return ClipEvents("scene", "scene_foa.wav", 4.0, events)


def _by(questions, qtype, *uids):
    return next(q for q in questions if q["question_type"] == qtype and q["event_ids"] == list(uids))


def test_questions_on_a_synthetic_scene_have_the_known_answers() -> None:
    qs = questions_for_clip(_scene_clip())
    assert {q["question_type"] for q in qs} == {"oclock", "left_right", "front_back", "above_below", "nearer",
                                                "more_left", "count"}
    assert _by(qs, "oclock", "e0")["answer_value"] == 10  # +60° (left of front) = 10 o'clock
    assert _by(qs, "oclock", "e1")["answer_value"] == 5  # −150°: behind on the right
    assert _by(qs, "left_right", "e0")["answer"] == "left"
    assert _by(qs, "left_right", "e1")["answer"] == "right"
    assert _by(qs, "front_back", "e1")["answer"] == "back"
    assert _by(qs, "above_below", "e2")["answer"] == "above"
    assert _by(qs, "nearer", "e0", "e1")["answer"] == "male speech"
    assert _by(qs, "more_left", "e0", "e1")["answer"] == "male speech"
    assert _by(qs, "count")["answer_value"] == 4
    assert not any(q["event_ids"] == ["e3"] for q in qs)  # the moving footsteps
    q = qs[0]
    assert set(q) >= {"id", "clip_key", "audio", "start_s", "end_s", "question_type", "question", "answer",
                      "answer_value", "event_ids"}
    assert len({q["id"] for q in qs}) == len(qs)
    assert questions_for_clip(_scene_clip()) == qs  # deterministic ids and order


def test_front_back_is_asked_only_where_known() -> None:
    undecided = SpatialEventData(0.0, 1.0, "door", ((40.0, 0.0),), direction_kind="lateral", front_back="undecided",
                                 uid="u")
    qs = questions_for_clip(ClipEvents("bin", None, 1.0, [undecided]))
    assert {q["question_type"] for q in qs} == {"left_right", "count"}
    decided = undecided.with_changes(front_back="back")
    qs = questions_for_clip(ClipEvents("bin", None, 1.0, [decided]))
    assert _by(qs, "front_back", "u")["answer"] == "back"
    assert _by(qs, "oclock", "u")["answer_value"] == 7  # lateral +40° behind: 140° → 7 o'clock (mirror of 11)


def test_scoring_counts_exact_near_mirror_unparsable_and_missing() -> None:
    qs = questions_for_clip(_scene_clip())
    o0, o1 = _by(qs, "oclock", "e0"), _by(qs, "oclock", "e1")  # truths 10 and 5
    lr, fb, ab = _by(qs, "left_right", "e0"), _by(qs, "front_back", "e1"), _by(qs, "above_below", "e2")
    near, count = _by(qs, "nearer", "e0", "e1"), _by(qs, "count")
    answers = {
        o0["id"]: "It comes from about 8 o'clock.",  # mirror of 10: a front/back confusion
        o1["id"]: "azimuth -120°",  # 4 o'clock: within one hour of 5; 30° off
        lr["id"]: "On the left.",
        fb["id"]: "in front",  # wrong
        ab["id"]: "I cannot tell",  # unparsable
        near["id"]: "The male speech is nearer.",
        count["id"]: "four",
    }
    result = score_answers(qs, answers)
    o = result["oclock"]
    assert (o["exact"], o["within_one_hour"], o["front_back_confusions"]) == (0, 1, 1)
    assert o["n_degrees"] == 1 and o["mean_angular_error_deg"] == pytest.approx(30.0)
    per = result["per_type"]
    assert per["left_right"]["correct"] == 1
    assert per["front_back"]["correct"] == 0 and per["front_back"]["accuracy"] == 0.0
    assert per["above_below"]["unparsable"] == 1
    assert per["nearer"]["correct"] == 1 and per["count"]["correct"] == 1
    assert result["n_unparsable"] == 1
    assert result["n_missing"] == len(qs) - len(answers)
    assert result["accuracy"] == pytest.approx(3 / len(qs))  # left/right, nearer, count


def test_perfect_answers_score_one() -> None:
    qs = questions_for_clip(_scene_clip())
    result = score_answers(qs, {q["id"]: q["answer"] for q in qs})
    assert result["accuracy"] == 1.0 and result["n_unparsable"] == 0
    assert result["oclock"]["exact"] == result["oclock"]["n"] > 0


@pytest.mark.parametrize(
    ("text", "hour"),
    [("12 o'clock", 12), ("at 3 o’clock", 3), ("nine o'clock", 9), ("7:00", 7), ("90 degrees", 9), ("-30°", 1),
     ("5", 5), ("somewhere", None)],
)
def test_parse_hour(text: str, hour: int | None) -> None:
    assert parse_hour(text)[0] == hour
