"""Judging a small project against the fake Messages/Batches API served on 127.0.0.1."""

from __future__ import annotations

import logging

import pytest
from sqlmodel import select

from storage.models import AlmRun, Clip, Dataset, JudgeCall, JudgeRun, Judgment, Prediction, Tag, TaggerRun
from workbench.attribution.config import load_judges
from tests.support.fake_anthropic import FakeAnthropicAPI
from workbench.attribution.providers import JudgeAuthError
from workbench.attribution.batch import collect_batches
from workbench.attribution.estimate import dry_run
from workbench.attribution.runner import run_judges
from workbench.errors import InputError
from workbench.tagging.ontology import Ontology

KEY = "sk-ant-storage-test-SECRET-9f8e7d6c5b4a"
NAMES = Ontology.from_entries([
    {"id": "/m/root", "name": "Human sounds", "child_ids": ["/m/09x0r"]},
    {"id": "/m/09x0r", "name": "Speech", "child_ids": []},
    {"id": "/m/07jdr", "name": "Train", "child_ids": []},
])
COT = "I hear Swedish speech on a platform and a train horn, so this is Stockholm Central."


@pytest.fixture
def project(store, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with store.write() as s:
        dataset = Dataset(name="tiny")
        s.add(dataset)
        s.flush()
        alm = AlmRun(model="alm-x")
        tagger = TaggerRun(model_name="mn10_as", status="done")
        s.add_all([alm, tagger])
        s.flush()
        for i in range(4):
            clip = Clip(dataset_id=dataset.id, key=f"clip{i}", latitude=59.33, longitude=18.06, city="Stockholm", country="Sweden")
            s.add(clip)
            s.flush()
            s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=clip.key, predicted_city="Oslo",
                             predicted_latitude="59.91", predicted_longitude="10.75", reasoning=COT))
            if i < 3:  # clip3 has no tags and must be skipped with a reason
                s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=0, audioset_id="/m/09x0r", probability=0.8))
                s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=1, audioset_id="/m/07jdr", probability=0.3))
                s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=2, audioset_id="/m/low", probability=0.1))
    with FakeAnthropicAPI(expected_key=KEY) as api:
        yield store, api


def _judgments(store, status=None):
    with store.session() as s:
        query = select(Judgment)
        if status:
            query = query.where(Judgment.status == status)
        return s.exec(query).all()


def test_sync_run_stores_one_judgment_per_judge_clip_category_and_rerun_sends_nothing(project):
    store, api = project
    config = load_judges()
    report = run_judges(store, config, base_url=api.base_url, names=NAMES, concurrency=3)
    assert [j.ok for j in report.judges] == [3, 3, 3]
    assert [(s.key, "no tag" in s.reason) for s in report.skipped] == [("clip3", True)]
    assert len(api.message_requests()) == 9
    judgments = _judgments(store)
    assert len(judgments) == 3 * 3 * 2  # judges × clips × categories ≥ τ
    assert {j.category_id for j in judgments} == {"/m/09x0r", "/m/07jdr"}
    speech = [j for j in judgments if j.category_id == "/m/09x0r"]
    assert all(j.contribution == 2 and j.effect == "helped" and j.evidence_found is True for j in speech)
    assert report.total_tokens["cache_read_input_tokens"] > 0 and report.total_cost_usd > 0
    with store.session() as s:
        calls = s.exec(select(JudgeCall)).all()
    assert all(c.cost_usd and c.cost_usd > 0 and c.usage["input_tokens"] > 0 for c in calls)
    first_prompt = api.message_requests()[0].body["messages"][0]["content"]
    assert "- /m/09x0r | Speech | Human sounds | 0.800" in first_prompt and "/m/low" not in first_prompt

    before = len(api.requests)
    again = run_judges(store, config, base_url=api.base_url, names=NAMES)
    assert len(api.requests) == before  # answered: nothing sent, not even the model check
    assert [j.answered_before for j in again.judges] == [3, 3, 3] and [j.sent for j in again.judges] == [0, 0, 0]
    forced = run_judges(store, config, judge_names=["haiku"], base_url=api.base_url, names=NAMES, force=True)
    assert forced.judges[0].sent == 3 and len(api.message_requests()) == 12


def test_faults_are_retried_or_stored_as_failed_with_reasons(project):
    store, api = project
    config = load_judges()
    # clips are sent in key order with concurrency 1: clip0 429→ok, clip1 unknown id→ok (attempt 2),
    # clip2 missing id twice → failed
    api.script.extend(["429", "ok", "unknown_id", "ok", "missing_id", "missing_id"])
    report = run_judges(store, config, judge_names=["sonnet"], base_url=api.base_url, names=NAMES, concurrency=1)
    summary = report.judges[0]
    assert (summary.ok, summary.failed, summary.retries) == (2, 1, 2)
    with store.session() as s:
        calls = s.exec(select(JudgeCall).order_by(JudgeCall.id)).all()
        clip_keys = {c.id: c.key for c in s.exec(select(Clip))}
    by_clip = {}
    for call in calls:
        by_clip.setdefault(clip_keys[call.clip_id], []).append((call.attempt, call.status))
    assert by_clip == {"clip0": [(1, "ok")], "clip1": [(1, "failed"), (2, "ok")], "clip2": [(1, "failed"), (2, "failed")]}
    failed = _judgments(store, "failed")
    assert len(failed) == 2 and all("missing category ids" in j.failure_reason for j in failed)
    assert len(_judgments(store, "ok")) == 4
    # the failed clip is not answered, so a rerun sends exactly that one
    rerun = run_judges(store, config, judge_names=["sonnet"], base_url=api.base_url, names=NAMES)
    assert rerun.judges[0].sent == 1 and rerun.judges[0].answered_before == 2


@pytest.mark.parametrize(("behaviour", "reason"), [("refusal", "refusal"), ("max_tokens", "truncated"), ("bad_json", "not valid JSON")])
def test_refusal_truncation_and_malformed_reply_are_failed_judgments(project, behaviour, reason):
    store, api = project
    api.script.extend([behaviour, behaviour])
    report = run_judges(store, load_judges(), judge_names=["haiku"], clip_keys=["clip0"], base_url=api.base_url, names=NAMES)
    assert report.judges[0].failed == 1
    failed = _judgments(store, "failed")
    assert len(failed) == 2 and all(reason in j.failure_reason for j in failed)


def test_server_errors_and_timeouts_after_sdk_retries_are_stored(project, tmp_path):
    store, api = project
    (tmp_path / "judges.toml").write_text(
        'trio = ["fast"]\n[judges.fast]\nprovider = "anthropic"\nmodel = "claude-haiku-5-5"\n'
        'prompt_version = "attribution-v1"\nmax_retries = 1\ntimeout_s = 0.3\n', encoding="utf-8")
    config = load_judges(tmp_path / "judges.toml")
    api.slow_s = 1.0
    api.script.extend(["529", "529", "500", "500", "slow", "slow"])
    report = run_judges(store, config, base_url=api.base_url, names=NAMES, concurrency=1)
    reasons = [f["reason"] for f in report.judges[0].failures]
    assert len(reasons) == 3
    assert "HTTP 529" in reasons[0] and "HTTP 500" in reasons[1] and "timeout" in reasons[2]
    assert report.judges[0].cost_usd == 0.0


def test_unknown_model_id_stops_before_anything_is_sent(project):
    store, api = project
    api.models = ["claude-opus-5-5", "claude-haiku-5-5"]
    with pytest.raises(InputError, match="'sonnet'.*'claude-sonnet-5-5'.*judges.toml"):
        run_judges(store, load_judges(), base_url=api.base_url, names=NAMES)
    assert api.message_requests() == []


def test_authentication_error_stops_the_run_without_leaking_the_key(project, monkeypatch):
    store, api = project
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong-key-000000")
    with pytest.raises(JudgeAuthError) as info:
        run_judges(store, load_judges(), base_url=api.base_url, names=NAMES)
    assert "sk-ant-wrong" not in str(info.value)
    assert _judgments(store) == []


def test_batch_submit_and_collect_match_custom_ids(project):
    store, api = project
    config = load_judges()
    api.batches_end_after = 1  # the first retrieve says in_progress
    api.batch_script.extend(["succeeded", "errored", "expired"])
    submitted = run_judges(store, config, judge_names=["opus"], mode="batch", base_url=api.base_url, names=NAMES)
    assert submitted.judges[0].status == "submitted" and api.message_requests() == []
    with store.session() as s:
        run = s.exec(select(JudgeRun)).one()
    assert run.batch_id == submitted.judges[0].batch_id and len(run.request_map) == 3
    # a second submission does not resend what is pending in the batch
    again = run_judges(store, config, judge_names=["opus"], mode="batch", base_url=api.base_url, names=NAMES)
    assert again.judges[0].pending_in_batch == 3 and api.count("POST", "/v1/messages/batches") == 1

    waiting = collect_batches(store, config, base_url=api.base_url, names=NAMES)
    assert waiting.judges[0].status.startswith("in progress") and _judgments(store) == []
    done = collect_batches(store, config, base_url=api.base_url, names=NAMES)
    summary = done.judges[0]
    assert (summary.ok, summary.failed) == (1, 2)
    assert sorted(f["reason"].split(" (")[0] for f in summary.failures) == [
        "batch request errored", "batch request expired before it was processed"]
    with store.session() as s:
        calls = s.exec(select(JudgeCall)).all()
        assert s.get(JudgeRun, run.id).status == "done"
    assert sorted(c.custom_id for c in calls) == sorted(run.request_map)
    ok_call = next(c for c in calls if c.status == "ok")
    assert ok_call.cost_usd == pytest.approx(
        (ok_call.usage["input_tokens"] * 5 + ok_call.usage["output_tokens"] * 25
         + ok_call.usage["cache_creation_input_tokens"] * 6.25 + ok_call.usage["cache_read_input_tokens"] * 0.5) / 1e6 * 0.5)
    assert collect_batches(store, config, base_url=api.base_url, names=NAMES).judges == []
    # errored and expired requests are sent again by the next run; the answered one is not
    rerun = run_judges(store, config, judge_names=["opus"], base_url=api.base_url, names=NAMES)
    assert rerun.judges[0].sent == 2 and rerun.judges[0].answered_before == 1


def test_batch_reply_with_unknown_id_gets_an_interactive_retry(project):
    store, api = project
    api.batch_script.extend(["unknown_id", "succeeded", "succeeded"])
    run_judges(store, load_judges(), judge_names=["haiku"], mode="batch", base_url=api.base_url, names=NAMES)
    report = collect_batches(store, load_judges(), base_url=api.base_url, names=NAMES)
    assert (report.judges[0].ok, report.judges[0].retries) == (3, 1) and len(api.message_requests()) == 1
    with store.session() as s:
        attempts = sorted((c.attempt, c.status, c.custom_id is not None) for c in s.exec(select(JudgeCall)))
    assert attempts == [(1, "failed", True), (1, "ok", True), (1, "ok", True), (2, "ok", False)]


def test_dry_run_counts_tokens_with_the_endpoint_and_sends_no_message(project, monkeypatch):
    store, api = project
    offline = dry_run(store, load_judges(), base_url=api.base_url, names=NAMES)
    assert offline.method.startswith("estimate") and api.requests == []  # a key is set; still offline
    report = dry_run(store, load_judges(), base_url=api.base_url, names=NAMES, count_tokens=True)
    assert report.method == "token counting endpoint"
    assert api.count("POST", "/v1/messages/count_tokens") == 9 and api.message_requests() == []
    totals = report.totals()["total"]
    assert totals["requests"] == 9 and totals["cost_batch_usd"] == pytest.approx(totals["cost_sync_usd"] / 2)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    estimate = dry_run(store, load_judges(), names=NAMES, assume_categories=10)
    assert estimate.method.startswith("estimate")
    assumed = [c for c in estimate.clips if c.assumed]
    assert [c.clip for c in assumed] == ["clip3"] * 3 and all(c.output_tokens == 640 for c in assumed)


def test_api_key_never_reaches_database_logs_or_output(project, caplog, capsys, sqlite_path):
    store, api = project
    caplog.set_level(logging.DEBUG)
    api.script.extend(["429", "500", "unknown_id"])
    run_judges(store, load_judges(), base_url=api.base_url, names=NAMES, concurrency=2)
    api.batch_script.extend(["errored"])
    run_judges(store, load_judges(), judge_names=["haiku"], mode="batch", force=True, base_url=api.base_url, names=NAMES)
    collect_batches(store, load_judges(), base_url=api.base_url, names=NAMES)
    store.dispose()
    captured = capsys.readouterr()
    haystacks = {"logs": caplog.text, "stdout": captured.out, "stderr": captured.err}
    for path in sqlite_path.parent.glob(sqlite_path.name + "*"):
        haystacks[path.name] = path.read_bytes().decode("latin-1")
    assert any(KEY in (r.headers.get("Authorization", "") + r.headers.get("x-api-key", "")) for r in api.requests)
    for name, text in haystacks.items():
        assert KEY not in text, name
        assert KEY[8:24] not in text, name


def test_runs_and_collection_close_their_http_clients(project):
    """Each provider's connection pool is closed after a run, a collection and a dry run."""
    from workbench.attribution.providers import make_provider

    store, api = project
    config = load_judges()
    made = []

    def factory(judge):
        provider = make_provider(judge, base_url=api.base_url)
        made.append(provider)
        return provider

    run_judges(store, config, judge_names=["opus"], mode="batch", provider_factory=factory, names=NAMES)
    collect_batches(store, config, provider_factory=factory, names=NAMES)
    run_judges(store, config, judge_names=["haiku"], mode="sync", provider_factory=factory, names=NAMES)
    dry_run(store, config, judge_names=["sonnet"], count_tokens=True, provider_factory=factory, names=NAMES)
    assert len(made) == 4
    assert all(provider.client.is_closed() for provider in made)  # the SDK client: a method
