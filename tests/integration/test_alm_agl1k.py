"""Done-when of the ALM runner: `aglw alm run` over the real AGL1K CSV (synthetic short audio per clip)
against fake OpenAI-compatible and Gemini servers answering with real AGL1K model outputs, every fault
injected; metrics equal those of the answers computed independently; a rerun pays nothing; the export
round-trips."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.cli_helpers import run_json
from tests.storage.alm_project import write_alm_config, write_tone
from tests.support.fake_alm import FakeGeminiServer, FakeOpenAIServer, generated_answer

pytestmark = pytest.mark.slow

# fault -> how many clips get it (the rest answer with AGL1K's real reply)
FAULTS = {"fenced": 2, "nested": 2, "refusal": 2, "zero": 2, "429": 3, "500": 2, "503": 2, "slow": 1, "html": 1,
          "always_fail": 1}
CONTENT = {"fenced", "nested", "zero"}  # the fake's generated answer replaces the real reply
FAILING = {"html", "always_fail"}


@pytest.fixture
def agl1k(shared_dir: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    from storage import open_store
    from workbench.importing import import_dataset

    root = tmp_path / "alm-agl1k"
    records = [json.loads(line) for line in
               (shared_dir / "data" / "agl1k" / "gemini-3-pro-preview_seed_42_ABCD.partial.jsonl")
               .read_text(encoding="utf-8").splitlines()]
    media = root / "media"
    media.mkdir(parents=True)
    for i, record in enumerate(records):
        write_tone(media / f"{record['question_id']}.wav", i, seconds=0.02)
    db = root / "agl1k.sqlite"
    store = open_store(db)
    import_dataset(store, shared_dir / "data" / "agl1k" / "geoLocalization_schema.csv", media_root=media)
    store.dispose()
    return {"db": db, "media": media, "records": records}


def _script(server, records: list[dict]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Register audio and real replies; give the first clips the faults. Returns key -> fault."""
    faults: dict[str, str] = {}
    keys = iter(r["question_id"] for r in records)
    for fault, count in FAULTS.items():
        for _ in range(count):
            key = next(keys)
            faults[key] = fault
            server.behave(key, fault)
    for record in records:
        server.replies[record["question_id"]] = record["model_output"]
    return faults


def _expected_records(records: list[dict], faults: dict[str, str]) -> pd.DataFrame:
    """What the answers said, independently of the store: the reply's own fields (the AGL1K
    record's parsed values), the fake's generated answer, or nothing for a reply without JSON."""
    from workbench.alm.parse import parse_reply

    rows = []
    for record in records:
        key = record["question_id"]
        fault = faults.get(key)
        if fault in FAILING:
            continue
        predicted: dict = {name: None for name in ("city", "country", "continent", "latitude", "longitude")}
        if fault in CONTENT:
            answer = generated_answer(key)
            if fault == "zero":
                answer = dict(answer, latitude=0.0, longitude=0.0)
            predicted.update({k: answer[k] for k in predicted})
        elif fault != "refusal" and parse_reply(record["model_output"]).status == "ok":
            predicted.update({k: record[f"predicted_{k}"] for k in predicted})
        rows.append({
            **{f"true_{k}": record[f"true_{k}"] for k in ("city", "country", "continent", "latitude", "longitude")},
            **{f"predicted_{k}": (None if v is None else str(v)) for k, v in predicted.items()},
        })
    return pd.DataFrame(rows, dtype=object)


def _check_run(agl1k, server, capsys, monkeypatch, tmp_path, *, model: str, provider_args: list[str]) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main
    from workbench.metrics.aggregate import compute_metrics

    db = str(agl1k["db"])
    records = agl1k["records"]
    for record in records:
        server.register_audio(agl1k["media"] / f"{record['question_id']}.wav", record["question_id"])
    faults = _script(server, records)
    keys = ",".join(r["question_id"] for r in records)
    argv = ["--db", db, "--json", "alm", "run", "--model", model, *provider_args, "--clips", keys, "--concurrency", "8"]
    capsys.readouterr()
    rc = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert rc == 1  # two clips failed for good
    assert out["requested"] == len(records) and out["answered"] == len(records) - 2
    failed = {f["key"]: f["reason"] for f in out["failed"]}
    assert {faults[k] for k in failed} == FAILING and all(failed.values())
    rejected = {r["key"] for r in out["rejected"]}
    assert {k for k, f in faults.items() if f in ("refusal", "zero")} <= rejected
    assert out["input_tokens"] == 900 * out["answered"] and out["cost_usd"] > 0

    metrics = run_json(capsys, "--db", db, "--json", "metrics", "--model", model)
    expected = compute_metrics(_expected_records(records, faults), "agl1k")
    for name, value in expected.items():
        if isinstance(value, float) and pd.isna(value):
            assert metrics[name] is None or pd.isna(metrics[name]), name
        elif isinstance(value, float):
            assert metrics[name] == pytest.approx(value, rel=1e-9, abs=1e-9), name
        elif name != "model":
            assert metrics[name] == value, name

    sent = len(server.requests)
    server.script.clear()  # the faults are over; only the failed clips are asked again
    again = run_json(capsys, "--db", db, "--json", "alm", "run", "--model", model, *provider_args, "--clips", keys)
    assert again["skipped_cached"] == len(records) - 2 and again["answered"] == 2
    assert {r.key for r in server.requests[sent:]} == set(failed)
    sent = len(server.requests)
    third = run_json(capsys, "--db", db, "--json", "alm", "run", "--model", model, *provider_args, "--clips", keys)
    assert third["skipped_cached"] == len(records) and len(server.requests) == sent  # zero requests

    export = tmp_path / f"{model}_seed_42_ABCD.jsonl"
    run_json(capsys, "--db", db, "--json", "export", "predictions", "--model", model, str(export))
    run_json(capsys, "--db", db, "--json", "import", "predictions", "--model", f"{model}-back", str(export))
    assert run_json(capsys, "--db", db, "--json", "metrics", "--model", f"{model}-back") == {
        **run_json(capsys, "--db", db, "--json", "metrics", "--model", model), "model": f"{model}-back"}
    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(records)
    real = {r["question_id"]: r for r in records}
    sample = next(line for line in lines if line["question_id"] not in faults)
    assert sample["question"] == real[sample["question_id"]]["question"]  # the agl1k-v1 prompt, verbatim
    assert sample["model_output"] == real[sample["question_id"]]["model_output"]


def test_openai_compatible_server_with_every_fault(agl1k, capsys, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    write_alm_config(timeout=2.0)
    with FakeOpenAIServer(models=["fake-audio-model"], slow_s=3.5) as server:
        _check_run(agl1k, server, capsys, monkeypatch, tmp_path, model="qwen-omni-vllm",
                   provider_args=["--provider", "openai-compatible", "--base-url", server.base_url,
                                  "--api-model", "fake-audio-model"])
        # 401 and an unknown model stop the run at once with one line
        server.expected_key = "the-right-key-0001"
        monkeypatch.setenv("VLLM_KEY", "a-wrong-key-0002")
        for extra, message in ((["--api-key-env", "VLLM_KEY"], "refused the API key (HTTP 401)"),
                               (["--force"], "does not serve model")):
            model = "fake-audio-model" if "--api-key-env" in extra else "no-such-model"
            if model == "no-such-model":
                server.expected_key = None
            capsys.readouterr()
            rc = main(["--db", str(agl1k["db"]), "alm", "run", "--model", f"stop-{model}", "--provider",
                       "openai-compatible", "--base-url", server.base_url, "--api-model", model, *extra,
                       "--clips", agl1k["records"][0]["question_id"]])
            err = capsys.readouterr().err
            assert rc == 1 and message in err and "Traceback" not in err
    assert agl1k["db"].read_bytes().find(b"a-wrong-key-0002") == -1


def test_gemini_server_with_every_fault(agl1k, capsys, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    write_alm_config(timeout=2.0)
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key-000111")
    with FakeGeminiServer(models=["gemini-fake"], expected_key="gemini-key-000111", slow_s=3.5) as server:
        _check_run(agl1k, server, capsys, monkeypatch, tmp_path, model="gemini-replay",
                   provider_args=["--provider", "gemini", "--base-url", server.base_url, "--api-model", "gemini-fake"])
    assert agl1k["db"].read_bytes().find(b"gemini-key-000111") == -1
