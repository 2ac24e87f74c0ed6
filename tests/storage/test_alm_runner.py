"""`aglw alm run` against fake OpenAI-compatible and Gemini servers: every fault, never paying twice,
resuming, limits, keys, and the AGL1K export round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from storage.models import AlmAnswer, AlmJob, AlmRun, Prediction
from tests.storage.alm_project import make_project, write_alm_config, write_tone
from tests.support.fake_alm import FakeGeminiServer, FakeOpenAIServer, generated_answer
from workbench.alm.providers import RunStopped
from workbench.alm.runner import AlmRunOptions, dry_run, run_alm
from workbench.errors import InputError
from workbench.tasks import TaskCancelled, TaskContext

MODEL = "fake-audio-model"


def _options(project, server, **kw) -> AlmRunOptions:  # type: ignore[no-untyped-def]
    base = dict(model="vllm-omni", provider="openai-compatible", api_model=MODEL, base_url=server.base_url,
                concurrency=4)
    base.update(kw)
    return AlmRunOptions(**base)


def _answers(store) -> list[AlmAnswer]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return list(s.execute(select(AlmAnswer).order_by(AlmAnswer.id)).scalars())


def _predictions(store, model: str) -> dict[str, Prediction]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        rows = s.execute(select(Prediction).join(AlmRun, AlmRun.id == Prediction.alm_run_id)
                         .where(AlmRun.model == model)).scalars()
        return {p.question_id: p for p in rows}


@pytest.fixture
def project(tmp_path: Path):  # type: ignore[no-untyped-def]
    write_alm_config(timeout=2.0)
    p = make_project(tmp_path, n=11)
    yield p
    p.store.dispose()


@pytest.fixture
def server(project):  # type: ignore[no-untyped-def]
    with FakeOpenAIServer(models=[MODEL], slow_s=3.5, retry_after_s=7) as s:
        for key in project.keys:
            s.register_audio(project.audio(key), key)
        yield s


FAULTS = ["ok", "fenced", "nested", "refusal", "zero", "429", "500", "503", "slow", "html", "always_fail"]


def test_every_fault_ends_as_a_stored_answer_or_a_stored_failure(project, server) -> None:  # type: ignore[no-untyped-def]
    keys = dict(zip(FAULTS, project.keys))
    for fault, key in keys.items():
        if fault != "ok":
            server.behave(key, fault)
    waits: list[float] = []
    report = run_alm(project.store, _options(project, server), sleep=waits.append)

    assert report.requested == 11 and report.answered == 9
    assert {f["key"] for f in report.failed} == {keys["html"], keys["always_fail"]}
    reasons = {f["key"]: f["reason"] for f in report.failed}
    assert "HTML page" in reasons[keys["html"]]
    assert "HTTP 500" in reasons[keys["always_fail"]] and "4 attempt(s)" in reasons[keys["always_fail"]]
    assert server.requests_for(keys["always_fail"]) == 4  # 1 + max_retries 3
    for transient in ("429", "500", "503", "slow"):
        assert server.requests_for(keys[transient]) == 2, transient
    assert 7.0 in waits  # the server's retry-after was honoured
    assert {r["key"] for r in report.rejected} == {keys["refusal"], keys["zero"]}

    predictions = _predictions(project.store, "vllm-omni")
    assert set(predictions) == set(project.keys) - {keys["html"], keys["always_fail"]}
    for fault in ("ok", "fenced", "nested", "429", "slow"):
        expected = generated_answer(keys[fault])
        p = predictions[keys[fault]]
        assert (p.predicted_city, p.predicted_latitude) == (expected["city"], str(expected["latitude"])), fault
        assert p.question.startswith("You are an expert audio analyst") and p.seed == 42
        assert p.model_output and p.true_city == "Preston"
    refusal = predictions[keys["refusal"]]
    assert refusal.predicted_latitude is None and refusal.reasoning is None and "sorry" in refusal.model_output
    assert predictions[keys["zero"]].predicted_latitude == "0.0"  # kept as written; a reject, not a guess
    assert predictions[keys["nested"]].reasoning.startswith("I heard {bells}")

    answers = _answers(project.store)
    by_status = {}
    for answer in answers:
        by_status.setdefault(answer.status, []).append(answer)
    assert len(by_status["ok"]) == 7 and len(by_status["rejected"]) == 2 and len(by_status["failed"]) == 2
    for answer in by_status["ok"]:
        assert answer.raw_output and answer.input_tokens == 900 and answer.output_tokens == 350
        assert answer.cost_usd == pytest.approx((300 * 2.0 + 600 * 40.0 + 350 * 10.0) / 1e6)
        assert answer.audio["transport"] == "inline" and answer.audio["format"] == "wav"
        assert answer.latency_s is not None and answer.prediction_id is not None
    assert report.cost_usd == pytest.approx(sum(a.cost_usd for a in by_status["ok"] + by_status["rejected"]))
    with project.store.session() as s:
        job = s.execute(select(AlmJob)).scalars().one()
    assert (job.status, job.answered, job.failed) == ("done", 9, 2)


def test_a_second_run_sends_nothing_answered_and_force_asks_again(project, server) -> None:  # type: ignore[no-untyped-def]
    options = _options(project, server, clip_keys=project.keys[:4])
    first = run_alm(project.store, options)
    assert first.answered == 4 and len(server.requests) == 4
    again = run_alm(project.store, options)
    assert again.skipped_cached == 4 and again.answered == 0 and len(server.requests) == 4
    assert again.cost_usd == 0.0 and not again.failed
    forced = run_alm(project.store, _options(project, server, clip_keys=project.keys[:4], force=True))
    assert forced.answered == 4 and len(server.requests) == 8
    assert len(_predictions(project.store, "vllm-omni")) == 4  # replaced, not duplicated
    with project.store.session() as s:
        live = s.execute(select(func.count()).select_from(AlmAnswer).where(AlmAnswer.cache_key.is_not(None))).scalar()
    assert live == 4
    # a changed recording is a different question: asked again
    write_tone(project.audio(project.keys[0]), 99)
    server.register_audio(project.audio(project.keys[0]), project.keys[0])
    changed = run_alm(project.store, options)
    assert changed.answered == 1 and changed.skipped_cached == 3


def test_key_refused_stops_the_run_with_one_line(project, server, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    server.expected_key = "right-key-123456"
    monkeypatch.setenv("VLLM_KEY", "wrong-key-654321")
    rc = main(["--db", str(project.db), "alm", "run", "--model", "m", "--provider", "openai-compatible",
               "--base-url", server.base_url, "--api-model", MODEL, "--api-key-env", "VLLM_KEY", "--concurrency", "1"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "refused the API key (HTTP 401)" in err and "Traceback" not in err
    assert len(server.requests) == 1  # stopped at once
    assert "wrong-key-654321" not in err
    assert project.db.read_bytes().find(b"wrong-key-654321") == -1


def test_unknown_model_stops_the_run(project, server) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RunStopped, match="does not serve model 'no-such-model'"):
        run_alm(project.store, _options(project, server, api_model="no-such-model", concurrency=1))
    with project.store.session() as s:
        assert s.execute(select(AlmJob.status)).scalar_one() == "failed"


def test_missing_audio_is_a_per_clip_failure(project, server) -> None:  # type: ignore[no-untyped-def]
    project.audio(project.keys[2]).unlink()
    report = run_alm(project.store, _options(project, server, clip_keys=project.keys[:3]))
    assert report.answered == 2
    assert [f["key"] for f in report.failed] == [project.keys[2]]
    assert "recording not found" in report.failed[0]["reason"]
    assert server.requests_for(project.keys[2]) == 0


def test_bad_input_is_refused_before_anything_is_sent(project, server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="no clip with key nope"):
        run_alm(project.store, _options(project, server, clip_keys=["nope"]))
    with pytest.raises(RunStopped, match="no openai API key: set OPENAI_API_KEY"):
        run_alm(project.store, _options(project, server, provider="openai", api_model="gpt-4o-audio-preview"))
    template = tmp_path / "t.txt"
    template.write_text("Where was this recorded?", encoding="utf-8")
    with pytest.raises(InputError, match="no {audio} slot"):
        run_alm(project.store, _options(project, server, prompt=str(template)))
    with pytest.raises(InputError, match="exceeds --max-cost") as refused:
        run_alm(project.store, _options(project, server, max_cost=0.0001))
    # both sums readable, in the one money format (before: "the estimate $0.00 ... exceeds --max-cost $0.00")
    assert "--max-cost $0.0001" in str(refused.value) and "$0.00 " not in str(refused.value)
    with pytest.raises(InputError, match="no price for 'unpriced'"):
        run_alm(project.store, _options(project, server, api_model="unpriced", max_cost=10))
    assert not server.requests
    with project.store.session() as s:
        assert s.execute(select(func.count()).select_from(AlmJob)).scalar() == 0


def test_imported_model_name_is_not_mixed_with_a_run(project, server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from workbench.importing.service import import_predictions

    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"question_id": project.keys[0], "predicted_city": "X"}) + "\n", encoding="utf-8")
    import_predictions(project.store, "imported", records)
    with pytest.raises(InputError, match="holds predictions imported from"):
        run_alm(project.store, _options(project, server, model="imported"))


def test_samples_draw_several_answers_and_the_first_is_the_prediction(project, server) -> None:  # type: ignore[no-untyped-def]
    report = run_alm(project.store, _options(project, server, clip_keys=project.keys[:2], samples=3))
    assert report.requested == 6 and report.answered == 6 and len(server.requests) == 6
    seeds = sorted(r.body["seed"] for r in server.requests)
    assert seeds == [42, 42, 43, 43, 44, 44]
    assert len(_predictions(project.store, "vllm-omni")) == 2
    again = run_alm(project.store, _options(project, server, clip_keys=project.keys[:2], samples=3))
    assert again.skipped_cached == 6 and len(server.requests) == 6


def test_cancel_keeps_what_arrived_and_a_rerun_resumes(project, server) -> None:  # type: ignore[no-untyped-def]
    task = TaskContext()

    def cancel_after_three(event) -> None:  # type: ignore[no-untyped-def]
        if event.kind == "item" and event.done >= 3:
            task.cancel()

    task.subscribe(cancel_after_three)
    with pytest.raises(TaskCancelled):
        run_alm(project.store, _options(project, server, concurrency=1), task=task)
    stored = len(_predictions(project.store, "vllm-omni"))
    assert 3 <= stored < 11
    with project.store.session() as s:
        assert s.execute(select(AlmJob.status)).scalar_one() == "cancelled"
    sent = len(server.requests)
    resumed = run_alm(project.store, _options(project, server))
    assert resumed.skipped_cached == stored and resumed.answered == 11 - stored
    assert len(server.requests) == sent + 11 - stored


def test_max_cost_stops_sending_once_spent(project, server) -> None:  # type: ignore[no-untyped-def]
    estimate = dry_run(project.store, _options(project, server))
    assert run_alm(project.store, _options(project, server, model="under", max_cost=1.0)).answered == 11
    # The provider bills far more than estimated: the run stops sending once the spent cost reaches the limit.
    server.input_tokens, server.audio_tokens = 100_000, 99_000
    report = run_alm(project.store, _options(project, server, model="capped", concurrency=1,
                                              max_cost=estimate.cost_usd * 1.01))
    assert report.answered == 1 and report.cost_usd >= estimate.cost_usd  # one reply was enough
    assert "--max-cost" in (report.stopped or "")
    not_sent = [f for f in report.failed if f["reason"].startswith("not sent: --max-cost")]
    assert len(not_sent) == 11 - report.answered
    assert len(_predictions(project.store, "capped")) == report.answered


def test_dry_run_prices_offline_and_writes_nothing(project, server) -> None:  # type: ignore[no-untyped-def]
    estimate = dry_run(project.store, _options(project, server))
    assert estimate.requests == 11 and estimate.audio_seconds == pytest.approx(11 * 99.5)
    assert estimate.audio_tokens == 11 * 995 and estimate.cost_usd is not None
    assert not server.requests
    with project.store.session() as s:
        assert s.execute(select(func.count()).select_from(AlmRun)).scalar() == 0


def test_cli_json_keys_exit_status_and_export_round_trip(project, server, capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    server.behave(project.keys[1], "always_fail")
    server.behave(project.keys[2], "refusal")
    argv = ["--db", str(project.db), "--json", "alm", "run", "--model", "vllm-omni", "--provider", "openai-compatible",
            "--base-url", server.base_url, "--api-model", MODEL, "--clips", ",".join(project.keys[:4])]
    rc = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert rc == 1  # a clip failed
    assert {"model", "provider", "requested", "answered", "skipped_cached", "failed", "input_tokens",
            "output_tokens", "cost_usd"} <= set(out)
    assert (out["requested"], out["answered"], out["skipped_cached"]) == (4, 3, 0)
    assert out["failed"][0]["key"] == project.keys[1] and "HTTP 500" in out["failed"][0]["reason"]
    assert out["cost_usd"] > 0

    export = tmp_path / "seed_42_ABCD.jsonl"
    assert main(["--db", str(project.db), "export", "predictions", "--model", "vllm-omni", str(export)]) == 0
    records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 3 and set(records[0]) >= {"question", "question_id", "predicted_latitude", "model_output",
                                                     "reasoning", "seed", "title", "description"}
    first = next(r for r in records if r["question_id"] == project.keys[0])
    assert isinstance(first["predicted_latitude"], float)
    assert main(["--db", str(project.db), "export", "predictions", "--model", "vllm-omni", str(export)]) == 1
    assert "exists; pass --force" in capsys.readouterr().err
    assert main(["--db", str(project.db), "import", "predictions", "--model", "reimported", str(export)]) == 0

    def comparable(p: Prediction) -> dict:
        data = p.model_dump()
        for name in ("id", "alm_run_id", "line_no"):
            data.pop(name)
        return data

    original = {k: comparable(p) for k, p in _predictions(project.store, "vllm-omni").items()}
    back = {k: comparable(p) for k, p in _predictions(project.store, "reimported").items()}
    assert original == back


def test_gemini_inline_files_api_faults_and_key(project, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    write_alm_config(timeout=2.0, gemini_inline_mb=0.001)  # clips above 1 kB go through the Files API
    big = project.keys[0]
    write_tone(project.audio(big), 0, seconds=1.0)  # 32 kB: uploaded
    monkeypatch.setenv("GEMINI_API_KEY", "gem-key-0123456789")
    with FakeGeminiServer(expected_key="gem-key-0123456789", retry_after_s=3) as server:
        for key in project.keys:
            server.register_audio(project.audio(key), key)
        server.behave(project.keys[1], "429")
        server.behave(project.keys[2], "html")
        server.behave(project.keys[3], "refusal")
        server.behave(project.keys[4], "503")
        waits: list[float] = []
        options = AlmRunOptions(model="gemini", provider="gemini", api_model="gemini-fake", base_url=server.base_url,
                                clip_keys=project.keys[:6])
        report = run_alm(project.store, options, sleep=waits.append)
        assert report.answered == 5 and [f["key"] for f in report.failed] == [project.keys[2]]
        assert [r["key"] for r in report.rejected] == [project.keys[3]]
        assert 3.0 in waits
        assert server.uploads == 1 and server.deleted == 1
        answers = {a.clip_key: a for a in _answers(project.store) if a.status == "ok"}
        assert answers[big].audio["transport"] == "files"
        assert answers[project.keys[5]].audio["transport"] == "inline"
        assert answers[big].input_tokens == 900 and answers[big].output_tokens == 350
        body = next(r.body for r in server.requests if r.key == project.keys[5])
        assert body["generationConfig"]["responseMimeType"] == "application/json"
        assert body["contents"][0]["parts"][0]["text"].startswith("You are an expert audio analyst")
        sent = len(server.requests)
        assert run_alm(project.store, options).skipped_cached == 5 and len(server.requests) == sent + 1

        monkeypatch.setenv("GEMINI_API_KEY", "bad-key-9876543210")
        with pytest.raises(RunStopped, match="Gemini refused the API key"):
            run_alm(project.store, AlmRunOptions(model="gemini2", provider="gemini", api_model="gemini-fake",
                                                 base_url=server.base_url, concurrency=1))
        with pytest.raises(RunStopped, match="does not know model 'gemini-nope'"):
            monkeypatch.setenv("GEMINI_API_KEY", "gem-key-0123456789")
            run_alm(project.store, AlmRunOptions(model="gemini3", provider="gemini", api_model="gemini-nope",
                                                 base_url=server.base_url, concurrency=1))
    data = project.db.read_bytes()
    assert data.find(b"gem-key-0123456789") == -1 and data.find(b"bad-key-9876543210") == -1


@pytest.mark.postgres
def test_a_run_on_postgresql_stores_answers_and_skips_them_next_time(pg_url, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from storage import open_store
    from tests.storage.test_import_dataset import clip_row, write_csv
    from workbench.importing import import_dataset

    write_alm_config(timeout=2.0)
    media = tmp_path / "media"
    media.mkdir()
    rows = [clip_row(i) for i in range(1, 5)]
    keys = [row[0] for row in rows]
    for i, key in enumerate(keys):
        write_tone(media / f"{key}.wav", i)
    store = open_store(pg_url)
    try:
        import_dataset(store, write_csv(tmp_path / "d.csv", rows), media_root=media)
        with FakeOpenAIServer(models=[MODEL]) as server:
            for key in keys:
                server.register_audio(media / f"{key}.wav", key)
            server.behave(keys[1], "refusal")
            options = AlmRunOptions(model="pg-model", provider="openai-compatible", api_model=MODEL,
                                    base_url=server.base_url, concurrency=4)
            report = run_alm(store, options)
            assert report.answered == 4 and [r["key"] for r in report.rejected] == [keys[1]]
            assert run_alm(store, options).skipped_cached == 4 and len(server.requests) == 4
            forced = run_alm(store, AlmRunOptions(**{**options.__dict__, "force": True}))
            assert forced.answered == 4
        assert len(_predictions(store, "pg-model")) == 4
    finally:
        store.dispose()


def test_gemini_batch_is_submitted_then_collected_at_the_batch_price(project, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main
    from workbench.alm.batch import collect_batches, submit_batch

    write_alm_config(timeout=2.0)
    monkeypatch.setenv("GEMINI_API_KEY", "gem-key-0123456789")
    keys = project.keys[:6]
    with FakeGeminiServer(expected_key="gem-key-0123456789", batch_polls_before_end=1) as server:
        for key in project.keys:
            server.register_audio(project.audio(key), key)
        server.behave(keys[1], "refusal")
        server.behave(keys[2], "500")
        options = AlmRunOptions(model="gemini-batch", provider="gemini", api_model="gemini-fake",
                                base_url=server.base_url, clip_keys=keys)
        submitted = submit_batch(project.store, options)
        assert "as batch batches/" in (submitted.stopped or "") and server.uploads == 6
        assert not _predictions(project.store, "gemini-batch")
        with project.store.session() as s:
            assert s.execute(select(AlmJob.status)).scalar_one() == "submitted"

        waiting = collect_batches(project.store, "gemini-batch")  # the batch is still running
        assert "still running" in (waiting.stopped or "") and waiting.answered == 0
        collected = collect_batches(project.store, "gemini-batch")
        assert collected.answered == 5 and [f["key"] for f in collected.failed] == [keys[2]]
        assert [r["key"] for r in collected.rejected] == [keys[1]]
        one = (300 * 0.30 + 600 * 1.0 + 350 * 2.5) / 1e6
        assert collected.cost_usd == pytest.approx(5 * one * 0.5)
        assert server.deleted == 6
        assert len(_predictions(project.store, "gemini-batch")) == 5
        with project.store.session() as s:
            assert s.execute(select(AlmJob.status)).scalar_one() == "done"
        assert collect_batches(project.store, "gemini-batch").stopped.startswith("no submitted batch")

        again = run_alm(project.store, options)  # synchronously: only the failed clip is asked
        assert again.skipped_cached == 5 and again.answered == 1

        server.batch_end_state = "BATCH_STATE_EXPIRED"
        server.batch_polls_before_end = 0
        expired = AlmRunOptions(model="gemini-expired", provider="gemini", api_model="gemini-fake",
                                base_url=server.base_url, clip_keys=keys[:2])
        capsys.readouterr()
        assert main(["--db", str(project.db), "--json", "alm", "run", "--model", "gemini-expired", "--provider", "gemini",
                     "--api-model", "gemini-fake", "--base-url", server.base_url, "--clips", ",".join(keys[:2]),
                     "--mode", "batch"]) == 0
        assert "batches/" in json.loads(capsys.readouterr().out)["stopped"]
        assert main(["--db", str(project.db), "--json", "alm", "run", "--model", expired.model, "--collect"]) == 1
        out = json.loads(capsys.readouterr().out)
        assert len(out["failed"]) == 2 and all("ended expired" in f["reason"] for f in out["failed"])
