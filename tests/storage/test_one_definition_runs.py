"""One definition of "the stored fit": every reader takes the curation run stored last
(workbench.project.latest_curation_run_id), whatever the runs' clocks said."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from storage.models import Clip, CurationClipResult, CurationRun, Dataset


def test_review_agreement_and_curation_read_the_same_latest_fit(store) -> None:  # type: ignore[no-untyped-def]
    from workbench.agreement.units import load_ratings
    from workbench.curation.runs import latest_run_id
    from workbench.review.service import ReviewService

    with store.write() as s:
        dataset = Dataset(name="d")
        s.add(dataset)
        s.flush()
        clip = Clip(dataset_id=dataset.id, key="k1", latitude=1.0, longitude=1.0)
        s.add(clip)
        s.flush()
        # The run stored last carries an older clock (a team member's machine runs behind).
        first = CurationRun(input_fingerprint="a", created_at=datetime(2030, 1, 1, tzinfo=timezone.utc))
        second = CurationRun(input_fingerprint="b", created_at=datetime(2020, 1, 1, tzinfo=timezone.utc))
        s.add(first)
        s.flush()
        s.add(second)
        s.flush()
        for run, value in ((first, 1.0), (second, 2.0)):
            s.add(CurationClipResult(run_id=run.id, clip_id=clip.id, localizability=value, percentile=0.5,
                                     candidate=True))
        second_id = int(second.id)
    assert latest_run_id(store) == second_id
    assert load_ratings(store).curation_run_id == second_id
    assert {row.localizability for row in ReviewService(store, {}, {}).clip_rows()} == {2.0}


def test_no_second_latest_curation_run_rule() -> None:
    """Only workbench/project.py orders the curation runs to find the latest one."""
    root = Path(__file__).resolve().parents[2]
    rule = re.compile(r"order_by\(\s*(col\()?CurationRun\.(id|created_at)\)?\.desc|max\(\s*(col\()?CurationRun\.id")
    offenders = []
    for folder in ("workbench", "ui", "cli"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative != "workbench/project.py" and rule.search(path.read_text(encoding="utf-8")):
                offenders.append(relative)
    assert not offenders, offenders


def test_no_second_speech_tag_query() -> None:
    """The Speech tag is read by workbench.project.speech_probabilities alone; the rule over it is
    workbench.speech.is_speech_clip (the selection's inline copy of the rule is gone)."""
    root = Path(__file__).resolve().parents[2]
    query = re.compile(r"Tag\.audioset_id\s*==\s*(SPEECH|\"/m/09x0r\")")
    inline_rule = re.compile(r">=\s*HUMAN_SOUNDS")
    offenders = []
    for folder in ("workbench", "ui", "cli"):
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            if relative != "workbench/project.py" and query.search(text):
                offenders.append(f"{relative}: queries the Speech tag")
            if relative != "workbench/speech.py" and inline_rule.search(text):
                offenders.append(f"{relative}: compares with the human_sounds threshold itself")
    assert not offenders, offenders


def test_no_second_layout_rule() -> None:
    """Channel layouts come from workbench.audio.layout.detect_layout (or a stored / overridden
    layout); nothing else decides that a 2-channel file is binaural."""
    root = Path(__file__).resolve().parents[2]
    guess = re.compile(r"\"binaural\"\s+if\s+\w+\s*==\s*2|==\s*2\s+and\s+.*\"binaural\"")
    offenders = [path.relative_to(root).as_posix()
                 for folder in ("workbench", "ui", "cli") for path in sorted((root / folder).rglob("*.py"))
                 if guess.search(path.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_one_rule_for_the_latest_judgment(store) -> None:  # type: ignore[no-untyped-def]
    """Review, agreement and curation agree on what a judge says now: its latest run (by the store's
    order, not its clock) on the clip; there the last attempt per category stands, and a failed one
    is no rating (an earlier run's answer is a re-test, not a stand-in)."""
    from storage.models import AlmRun, JudgeRun, Judgment, Prediction
    from workbench.agreement.units import load_ratings
    from workbench.curation.inputs import gather_inputs
    from workbench.project import latest_judgments

    with store.write() as s:
        dataset, alm = Dataset(name="d"), AlmRun(model="alm")
        s.add_all([dataset, alm])
        s.flush()
        clip = Clip(dataset_id=dataset.id, key="k1", latitude=1.0, longitude=1.0)
        s.add(clip)
        s.flush()
        s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id="k1", predicted_latitude="1",
                         predicted_longitude="1"))
        old = JudgeRun(judge_name="opus", provider="t", model_id="m", prompt_version="v", alm_run_id=alm.id,
                       created_at=datetime(2030, 1, 1, tzinfo=timezone.utc))
        new = JudgeRun(judge_name="opus", provider="t", model_id="m", prompt_version="v", alm_run_id=alm.id,
                       created_at=datetime(2020, 1, 1, tzinfo=timezone.utc))  # stored later, clock behind
        s.add(old)
        s.flush()
        s.add(new)
        s.flush()
        for run, category, contribution, status in (
            (old, "/m/a", 3, "ok"), (old, "/m/b", 3, "ok"),
            (new, "/m/a", None, "failed"),  # the re-run failed on /m/a: opus has no rating there now
            (new, "/m/b", None, "failed"), (new, "/m/b", 1, "ok"),  # a retry inside the run: it stands
        ):
            s.add(Judgment(judge_run_id=run.id, clip_id=clip.id, category_id=category, contribution=contribution,
                           effect="helped" if contribution else None, status=status))
        clip_id = int(clip.id)

    with store.session() as s:
        review = {(j.category_id, j.status, j.contribution) for j, _name, _alm in latest_judgments(s, [clip_id], per_alm=True)}
    assert review == {("/m/a", "failed", None), ("/m/b", "ok", 1)}
    data = load_ratings(store)
    judged = data.ratings[(data.ratings["rater"] == "judge:opus") & (data.ratings["label"] == "contribution")]
    assert dict(zip(judged["category_id"], judged["value"])) == {"/m/b": 1}
    retest = data.retest[data.retest["label"] == "contribution"]
    assert sorted(zip(retest["category_id"], retest["value"])) == [("/m/a", 3), ("/m/b", 3)]
    scores = gather_inputs(store, "alm").judge_scores
    assert dict(zip(scores["category"], scores["score"])) == {"/m/b": 1}
