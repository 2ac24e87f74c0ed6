"""One definition of "the stored fit": every reader takes the curation run stored last
(workbench.project.latest_curation_run_id), whatever the runs' clocks said."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

from storage.models import Clip, CurationClipResult, CurationRun, Dataset


def test_review_agreement_and_curation_read_the_same_latest_fit(store) -> None:  # type: ignore[no-untyped-def]
    from workbench.agreement.units import load_ratings
    from workbench.curation.service import latest_run_id
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
