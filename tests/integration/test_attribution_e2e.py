"""End to end: the real AGL1K CSV and Gemini results, stored tags, `aglw judge` against the fake API."""

from __future__ import annotations

import json
import logging

import pytest
from sqlmodel import select

from storage import open_store
from storage.models import Clip, JudgeCall, JudgeRun, Judgment, Prediction, Tag, TaggerRun
from tests.support.fake_anthropic import FakeAnthropicAPI
from cli.main import main
from workbench.importing import import_dataset, import_predictions

KEY = "sk-ant-e2e-SECRET-a1b2c3d4e5f6a7b8"
TAGS = [("/m/09x0r", 0, 0.92), ("/m/07yv9", 300, 0.41), ("/m/0838f", 288, 0.2), ("/m/04rlf", 137, 0.05)]


@pytest.fixture
def agl1k_project(shared_dir, sqlite_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("AGLW_ONTOLOGY", str(shared_dir / "audioset" / "ontology.json"))
    data = shared_dir / "data" / "agl1k"
    store = open_store(sqlite_path)
    import_dataset(store, data / "geoLocalization_schema.csv", format="agl1k")
    import_predictions(store, "gemini-3-pro-preview", data / "gemini-3-pro-preview_seed_42_ABCD.partial.jsonl")
    with store.write() as s:
        clips = s.exec(
            select(Clip).join(Prediction, Prediction.clip_id == Clip.id).order_by(Clip.key).limit(3)
        ).all()
        tagger = TaggerRun(model_name="mn10_as", status="done")
        s.add(tagger)
        s.flush()
        for clip in clips:
            for audioset_id, index, probability in TAGS:
                s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=index, audioset_id=audioset_id, probability=probability))
        keys = [c.key for c in clips]
    yield store, keys
    store.dispose()


@pytest.mark.integration
def test_aglw_judge_sync_and_batch_on_real_agl1k_records(agl1k_project, sqlite_path, capsys, caplog, tmp_path):
    store, keys = agl1k_project
    caplog.set_level(logging.DEBUG)
    outputs = []
    with FakeAnthropicAPI(expected_key=KEY) as api:
        base = ["--db", str(sqlite_path), "--json", "judge", "--clips", ",".join(keys), "--base-url", api.base_url]
        assert main(base + ["--judges", "opus,sonnet", "--concurrency", "2"]) == 0
        sync = json.loads(capsys.readouterr().out)
        outputs.append(json.dumps(sync))
        assert [(j["judge"], j["ok"], j["failed"]) for j in sync["judges"]] == [("opus", 3, 0), ("sonnet", 3, 0)]
        assert sync["cost_usd"] > 0 and sync["tokens"]["input_tokens"] > 0
        prompt = api.message_requests()[0].body["messages"][0]["content"]
        assert "/m/09x0r | Speech | Human sounds | 0.920" in prompt and "/m/04rlf" not in prompt
        assert "Error of the prediction:" in prompt and " km" in prompt

        assert main(base + ["--judges", "haiku", "--mode", "batch"]) == 0
        submitted = json.loads(capsys.readouterr().out)
        assert submitted["judges"][0]["status"] == "submitted"
        assert main(["--db", str(sqlite_path), "--json", "judge", "--collect", "--base-url", api.base_url]) == 0
        collected = json.loads(capsys.readouterr().out)
        outputs.append(json.dumps(collected))
        assert collected["judges"][0]["ok"] == 3 and collected["judges"][0]["status"] == "collected"

        sent = len(api.message_requests())
        assert main(base) == 0  # the full trio again: everything answered
        rerun = json.loads(capsys.readouterr().out)
        assert [j["answered_before"] for j in rerun["judges"]] == [3, 3, 3] and len(api.message_requests()) == sent

        assert main(["--db", str(sqlite_path), "judge", "--dry-run", "--count-tokens", "--force", "--clips", keys[0], "--base-url", api.base_url]) == 0
        dry = capsys.readouterr()
        assert "token counting endpoint" in dry.out and "total: 3 requests" in dry.out
        outputs.append(dry.out + dry.err)

    with store.session() as s:
        judgments = s.exec(select(Judgment)).all()
        runs = {r.id: r for r in s.exec(select(JudgeRun))}
        calls = s.exec(select(JudgeCall)).all()
    per_key = {}
    for j in judgments:
        per_key.setdefault((runs[j.judge_run_id].judge_name, j.clip_id, j.category_id), []).append(j.status)
    assert len(per_key) == 3 * 3 * 3 and all(v == ["ok"] for v in per_key.values())
    assert all(c.raw_reply and c.fingerprint for c in calls)
    assert runs[max(runs)].batch_id is None or all(r.status == "done" for r in runs.values())

    store.dispose()
    texts = outputs + [caplog.text, capsys.readouterr().err]
    texts += [p.read_bytes().decode("latin-1") for p in sqlite_path.parent.glob(sqlite_path.name + "*")]
    assert all(KEY not in t for t in texts)
