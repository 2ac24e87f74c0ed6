"""`aglw judge` against a fake Anthropic API that misbehaves the way real APIs do.

Nothing is paid twice, every answer received is stored, every failure is a stored failed judgment
with its reason or one line on stderr with exit 1 — never a traceback.
"""

from __future__ import annotations

import json
from collections import deque

import pytest
from sqlmodel import select

from storage.models import AlmRun, Clip, Dataset, JudgeCall, JudgeRun, Judgment, Prediction, Tag, TaggerRun
from tests.support.fake_anthropic import FakeAnthropicAPI
from cli.main import main

KEY = "sk-ant-faults-SECRET-0a1b2c3d4e5f"
COT = "I hear Swedish speech on a platform and a train horn, so this is Stockholm Central."


@pytest.fixture
def project(store, sqlite_path, monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    onto = tmp_path / "ontology.json"
    onto.write_text(json.dumps([
        {"id": "/m/root", "name": "Human sounds", "child_ids": ["/m/09x0r"]},
        {"id": "/m/09x0r", "name": "Speech", "child_ids": []},
        {"id": "/m/07jdr", "name": "Train", "child_ids": []},
    ]), encoding="utf-8")
    monkeypatch.setenv("AGLW_ONTOLOGY", str(onto))
    with store.write() as s:
        dataset = Dataset(name="tiny")
        s.add(dataset)
        s.flush()
        alm = AlmRun(model="alm-x")
        tagger = TaggerRun(model_name="mn10_as", status="done")
        s.add_all([alm, tagger])
        s.flush()
        for i in range(3):
            clip = Clip(dataset_id=dataset.id, key=f"clip{i}", latitude=59.33, longitude=18.06, city="Stockholm",
                        country="Sweden")
            s.add(clip)
            s.flush()
            s.add(Prediction(alm_run_id=alm.id, clip_id=clip.id, question_id=clip.key, predicted_city="Oslo",
                             predicted_latitude="59.91", predicted_longitude="10.75", reasoning=COT))
            s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=0, audioset_id="/m/09x0r", probability=0.8))
            s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=1, audioset_id="/m/07jdr", probability=0.3))
    with FakeAnthropicAPI(expected_key=KEY) as api:
        yield store, api, str(sqlite_path)


def _run(capsys, *argv: str) -> tuple[int, object, str]:
    capsys.readouterr()
    rc = main(list(argv))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    payload = json.loads(captured.out) if "--json" in argv else None
    return rc, payload, captured.err


def _judgments(store) -> list[Judgment]:
    with store.session() as s:
        return list(s.exec(select(Judgment)))


def _keys(store, judgments) -> dict[int, str]:
    with store.session() as s:
        return {c.id: c.key for c in s.exec(select(Clip))}


def _bodies(api: FakeAnthropicAPI) -> list[str]:
    return [json.dumps(r.body, sort_keys=True) for r in api.message_requests()]


def test_a_key_given_twice_is_sent_once_and_an_html_reply_is_a_stored_failure(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, api, db = project
    api.script = deque(["ok", "html_body", "ok"])
    rc, payload, err = _run(capsys, "--db", db, "--json", "judge", "--judges", "opus", "--concurrency", "1",
                            "--clips", "clip0,clip0", "--clips", "clip1,clip2", "--base-url", api.base_url)
    assert rc == 1  # a requested clip failed
    assert len(api.message_requests()) == 3 and len(set(_bodies(api))) == 3  # nothing sent twice
    summary = payload["judges"][0]
    assert (summary["ok"], summary["failed"]) == (2, 1)
    keys = _keys(store, None)
    by_status: dict[str, set[str]] = {}
    for j in _judgments(store):
        by_status.setdefault(j.status, set()).add(keys[j.clip_id])
    assert by_status["ok"] == {"clip0", "clip2"} and by_status["failed"] == {"clip1"}
    with store.session() as s:
        failed = s.exec(select(JudgeCall).where(JudgeCall.status != "ok")).all()
    assert failed and all("html" in (c.failure_reason or "").lower() for c in failed)


@pytest.mark.parametrize(
    ("setup", "expect"),
    [
        (lambda api: None, "connection"),  # a wrong base URL: nothing listens there
        (lambda api: setattr(api, "expected_key", "another-key"), "refused the API key"),
        (lambda api: api.route_faults.update({"GET /v1/models": deque(["529"] * 10)}), "529"),
        (lambda api: api.route_faults.update({"GET /v1/models": deque(["html"] * 10)}), "models"),
    ],
    ids=["wrong-base-url", "401", "529-on-model-list", "html-on-model-list"],
)
def test_run_level_provider_errors_end_in_one_line(project, capsys, setup, expect) -> None:  # type: ignore[no-untyped-def]
    store, api, db = project
    setup(api)
    base = "http://127.0.0.1:9" if expect == "connection" else api.base_url
    rc, _, err = _run(capsys, "--db", db, "judge", "--judges", "opus", "--base-url", base)
    assert rc == 1
    line = err.strip().splitlines()[-1]
    assert line.startswith("aglw: error: ") and expect in line, err
    assert KEY not in err
    assert not [j for j in _judgments(store) if j.status == "ok"]


def test_dry_run_sends_nothing_and_token_counting_is_explicit(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, api, db = project
    rc, payload, err = _run(capsys, "--db", db, "--json", "judge", "--dry-run", "--base-url", api.base_url)
    assert rc == 0 and api.requests == []  # a key is set, and still nothing went anywhere
    assert payload["method"].startswith("estimate") and payload["total"]["requests"] == 9
    rc, payload, err = _run(capsys, "--db", db, "--json", "judge", "--dry-run", "--count-tokens",
                            "--base-url", api.base_url)
    assert rc == 0 and "contacts the provider" in err
    assert api.count("POST", "/v1/messages/count_tokens") == 9 and not api.message_requests()
    assert _judgments(store) == []


def test_batch_cost_is_the_batch_price_of_the_usage(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, api, db = project
    rc, submitted, _ = _run(capsys, "--db", db, "--json", "judge", "--judges", "haiku", "--mode", "batch",
                            "--base-url", api.base_url)
    assert rc == 0 and submitted["judges"][0]["status"] == "submitted"
    assert submitted["judges"][0]["cost_usd"] is None  # nothing is billed before the results exist
    rc, collected, _ = _run(capsys, "--db", db, "--json", "judge", "--collect", "--base-url", api.base_url)
    assert rc == 0
    with store.session() as s:
        calls = s.exec(select(JudgeCall)).all()
    from workbench.attribution.config import load_judges
    from workbench.attribution.cost import call_cost
    from workbench.attribution.providers import TokenUsage

    config = load_judges()
    price = config.prices[config.judges["haiku"].model]
    expected = sum(call_cost(TokenUsage(**{k: c.usage.get(k, 0) for k in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}), price,
        batch=True, discount=config.batch_discount) for c in calls)
    assert len(calls) == 3 and expected > 0
    assert collected["judges"][0]["cost_usd"] == pytest.approx(expected)
    assert collected["cost_usd"] == pytest.approx(expected)


def test_529_on_collect_is_one_line_and_a_later_collect_stores_everything(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, api, db = project
    assert _run(capsys, "--db", db, "judge", "--judges", "haiku", "--mode", "batch", "--base-url", api.base_url)[0] == 0
    api.route_faults["GET /v1/messages/batches"] = deque(["529"] * 10)
    rc, _, err = _run(capsys, "--db", db, "judge", "--collect", "--base-url", api.base_url)
    assert rc == 1 and err.strip().splitlines()[-1].startswith("aglw: error: judging stopped") and "529" in err
    api.route_faults.clear()
    rc, collected, _ = _run(capsys, "--db", db, "--json", "judge", "--collect", "--base-url", api.base_url)
    assert rc == 0 and collected["judges"][0]["ok"] == 3
    assert len([j for j in _judgments(store) if j.status == "ok"]) == 6
    assert api.count("POST", "/v1/messages/batches") == 1  # the batch was not submitted again


def test_truncation_is_retried_once_with_a_larger_budget_and_a_refusal_is_not_resent(project, capsys) -> None:  # type: ignore[no-untyped-def]
    store, api, db = project
    api.script = deque(["max_tokens", "ok", "refusal"])
    rc, payload, _ = _run(capsys, "--db", db, "--json", "judge", "--judges", "opus", "--concurrency", "1",
                          "--clips", "clip0,clip1", "--base-url", api.base_url)
    assert rc == 1
    budgets = [r.body["max_tokens"] for r in api.message_requests()]
    assert len(budgets) == 3 and budgets[1] > budgets[0] and budgets[2] == budgets[0]
    with store.session() as s:
        refused = s.exec(select(JudgeCall).where(JudgeCall.stop_reason == "refusal")).all()
    assert len(refused) == 1 and "refusal" in (refused[0].failure_reason or "")
    sent = len(api.message_requests())
    rc, payload, err = _run(capsys, "--db", db, "--json", "judge", "--judges", "opus", "--clips", "clip0,clip1",
                            "--base-url", api.base_url)
    assert len(api.message_requests()) == sent  # the refused prompt is not paid for again
    assert rc == 0 and payload["judges"][0]["refused_before"] == 1
