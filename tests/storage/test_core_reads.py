"""The reads that select from the Core read model give the same answers on SQLite and PostgreSQL.

`clips show`, `clips list`, `judgments show`, `metrics` and `leaderboard` read through
`Store.read()` (a Core connection; the metrics through the DB-API cursor); the GUI asks the same
functions on an ORM Session. Both backends and both kinds of read are checked here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.storage.test_import_predictions import HAND_RECORDS, hand_dataset, write_jsonl
from workbench.errors import InputError
from workbench.importing import import_predictions


def _judge(store, clip_key: str) -> None:  # type: ignore[no-untyped-def]
    """Two runs of one judge on a clip: the second run's last attempt per category stands."""
    from storage.models import JudgeRun, Judgment
    from workbench.clip_ids import clip_id_for_key

    clip_id = clip_id_for_key(store, clip_key)
    with store.write() as s:
        runs = []
        for _ in range(2):
            run = JudgeRun(judge_name="haiku", provider="anthropic", model_id="m", prompt_version="v", alm_run_id=1)
            s.add(run)
            s.flush()
            runs.append(run.id)
        s.add(Judgment(judge_run_id=runs[0], clip_id=clip_id, category_id="/m/015p6", contribution=1, effect="helped"))
        s.add(Judgment(judge_run_id=runs[1], clip_id=clip_id, category_id="/m/015p6", status="failed",
                       failure_reason="timeout"))
        s.add(Judgment(judge_run_id=runs[1], clip_id=clip_id, category_id="/m/015p6", contribution=3, effect="helped",
                       evidence="Birds at 0:12."))


def test_the_read_commands_answer_alike_on_both_backends(any_store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from workbench.metrics.service import leaderboard_rows, model_metrics
    from workbench.project import clip_record, judgment_records, latest_judgments, list_clips

    hand_dataset(any_store, tmp_path)
    import_predictions(any_store, "toy", write_jsonl(tmp_path / "r.jsonl", HAND_RECORDS))
    _judge(any_store, "k1")

    metrics = model_metrics(any_store, "toy", "agl1k")
    assert metrics["n"] == 5 and metrics["reject_rate"] == pytest.approx(0.4)
    board = leaderboard_rows(any_store, "agl1k", "speech")
    assert {(row["group"], row["n"]) for row in board.rows} == {("speech", 3), ("no speech", 2)}

    assert [c["key"] for c in list_clips(any_store)] == ["k1", "k2", "k3", "k4", "k5"]
    assert len(list_clips(any_store, has_prediction="toy", search="K")) == 5
    with pytest.raises(InputError, match="no ALM named 'gpt'"):
        list_clips(any_store, has_prediction="gpt")

    record = clip_record(any_store, "k1")
    assert record["dataset"] == "hand" and record["tagger"] is None
    (prediction,) = record["predictions"]
    assert prediction["model"] == "toy" and prediction["error_km"] == pytest.approx(110.57, abs=0.01)
    (standing,) = record["judgments"]
    assert (standing["judge"], standing["alm"], standing["contribution"], standing["status"]) == ("haiku", "toy", 3, "ok")
    assert judgment_records(any_store, judge="haiku", alm="toy") == record["judgments"]
    with pytest.raises(InputError, match="no judge named 'opus'"):
        judgment_records(any_store, judge="opus")

    # The GUI asks the same rule on an ORM Session: the same standing judgment.
    with any_store.session() as session:
        (row, name, alm_run_id), = latest_judgments(session, None, per_alm=True)
    with any_store.read() as connection:
        assert latest_judgments(connection, None, per_alm=True) == [(row, name, alm_run_id)]
    assert (row.contribution, row.evidence, name, alm_run_id) == (3, "Birds at 0:12.", "haiku", 1)
