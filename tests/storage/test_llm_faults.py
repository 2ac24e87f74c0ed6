"""Run-level faults and paid answers, decided once by the LLM engine for ALM runs, judges and error-mode judges.

A server that cannot be reached, a refused key: one line, exit 1, nothing left behind. A full disk or
a project locked by another program never drops an answer that was paid for: it waits, or keeps the
answer in the run's journal for the next run, which stores it without asking again.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import func, select

from cli.main import main
from storage.models import AlmAnswer, AlmJob, AlmRun, Clip, Dataset, JudgeCall, JudgeRun, Prediction, Tag, TaggerRun
from tests.storage.alm_project import make_project, write_alm_config
from tests.support.fake_alm import FakeOpenAIServer
from tests.support.fake_anthropic import FakeAnthropicAPI

MODEL = "fake-audio-model"
KEY = "sk-ant-engine-SECRET-0a1b2c3d4e5f"
COT = "I hear Swedish speech on a platform and a train horn, so this is Stockholm Central."


def closed_port_url(path: str = "/v1") -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture
def alm(tmp_path: Path):  # type: ignore[no-untyped-def]
    write_alm_config(timeout=5.0)
    project = make_project(tmp_path, n=8)
    yield project
    project.store.dispose()


def alm_argv(project, base_url: str, *extra: str, model: str = "m") -> list[str]:  # type: ignore[no-untyped-def]
    return ["--db", str(project.db), "alm", "run", "--model", model, "--provider", "openai-compatible",
            "--base-url", base_url, "--api-model", MODEL, *extra]


def judge_project(store, monkeypatch, tmp_path: Path, n: int = 3) -> None:  # type: ignore[no-untyped-def]
    """``n`` clips with a prediction of ALM ``alm-x`` and two tags each (test_judge_faults' shape)."""
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
        run = AlmRun(model="alm-x")
        tagger = TaggerRun(model_name="mn10_as", status="done")
        s.add_all([run, tagger])
        s.flush()
        for i in range(n):
            clip = Clip(dataset_id=dataset.id, key=f"clip{i}", latitude=59.33, longitude=18.06, city="Stockholm",
                        country="Sweden")
            s.add(clip)
            s.flush()
            s.add(Prediction(alm_run_id=run.id, clip_id=clip.id, question_id=clip.key, predicted_city="Oslo",
                             predicted_latitude="59.91", predicted_longitude="10.75", reasoning=COT))
            s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=0, audioset_id="/m/09x0r", probability=0.8))
            s.add(Tag(tagger_run_id=tagger.id, clip_id=clip.id, class_index=1, audioset_id="/m/07jdr", probability=0.3))


def _count(store, table) -> int:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return int(s.execute(select(func.count()).select_from(table)).scalar() or 0)


# --------------------------------------------------------------------------- run-level faults


def test_alm_run_against_a_closed_port_is_one_line_and_leaves_no_run(alm, capsys) -> None:  # type: ignore[no-untyped-def]
    rc = main(alm_argv(alm, closed_port_url(), "--concurrency", "4"))
    captured = capsys.readouterr()
    assert rc == 1
    assert len(lines(captured.err)) == 1 and "cannot reach http://127.0.0.1:" in captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    assert _count(alm.store, AlmRun) == 0 and _count(alm.store, AlmJob) == 0  # nothing `judge` could list
    assert not list(alm.db.parent.glob(".*.answers"))  # the empty journal went too


def test_a_refused_key_is_one_line_whatever_the_concurrency(alm, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("VLLM_KEY", "wrong-key-654321")
    with FakeOpenAIServer(models=[MODEL], expected_key="right-key-123456") as server:
        rc = main(alm_argv(alm, server.base_url, "--api-key-env", "VLLM_KEY", "--concurrency", "4"))
        err = capsys.readouterr().err
        assert rc == 1
        assert len(lines(err)) == 1 and "refused the API key (HTTP 401)" in err
        assert len(server.requests) <= 4  # those in flight when the first refusal came back
    with alm.store.session() as s:
        assert s.execute(select(AlmJob.status)).scalar_one() == "failed"


def test_a_key_in_the_base_url_is_neither_stored_nor_printed(alm, capsys) -> None:  # type: ignore[no-untyped-def]
    with FakeOpenAIServer(models=[MODEL], expected_key="right-key-123456") as server:
        host = server.origin.removeprefix("http://")
        # (a key in the query is refused before anything is sent: test_llm_broken_server.py)
        url = f"http://user:SECRETKEY42@{host}/v1"
        rc = main(alm_argv(alm, url, "--concurrency", "1"))
    err = capsys.readouterr().err
    assert rc == 1 and err and "SECRETKEY42" not in err
    with alm.store.session() as s:
        stored = s.execute(select(AlmJob.base_url)).scalar_one()
    assert stored == f"http://{host}/v1"
    assert b"SECRETKEY42" not in alm.db.read_bytes()


def test_judge_against_a_closed_port_is_one_line_and_leaves_no_run(store, sqlite_path, monkeypatch, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    judge_project(store, monkeypatch, tmp_path)
    rc = main(["--db", str(sqlite_path), "judge", "--judges", "haiku", "--base-url", closed_port_url("")])
    err = capsys.readouterr().err
    assert rc == 1 and len(lines(err)) == 1 and "connection error" in err
    assert _count(store, JudgeRun) == 0 and _count(store, JudgeCall) == 0


def test_error_mode_judges_against_a_closed_port_are_one_line(store, sqlite_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from storage.models import JudgeErrorMode
    from tests.storage.studies_project import ALM, populate

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    populate(store)
    rc = main(["--db", str(sqlite_path), "study", "judge-error-modes", "--alm", ALM, "--judges", "haiku",
               "--limit", "5", "--base-url", closed_port_url("")])
    err = capsys.readouterr().err
    assert rc == 1 and len(lines(err)) == 1 and "cannot reach http://127.0.0.1:" in err
    assert _count(store, JudgeErrorMode) == 0  # not five stored "connection error" failures


# --------------------------------------------------------------------------- the journal


def test_answers_a_full_disk_kept_from_the_project_are_stored_by_the_next_run_unasked(alm, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy.exc import OperationalError

    from workbench.alm import runner

    store = runner.AlmQuestions.store
    calls = 0

    def full_disk_from_the_second_group(self, outcomes):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls >= 2:
            raise OperationalError("INSERT", {}, Exception("database or disk is full"))
        return store(self, outcomes)

    with FakeOpenAIServer(models=[MODEL], delay_s=0.05) as server:
        for key in alm.keys:
            server.register_audio(alm.audio(key), key)
        monkeypatch.setattr(runner.AlmQuestions, "store", full_disk_from_the_second_group)
        rc = main(alm_argv(alm, server.base_url, "--concurrency", "2"))
        err = capsys.readouterr().err
        assert rc == 1 and "the disk is full" in err and "Traceback" not in err
        asked = {key: server.requests_for(key) for key in alm.keys}
        monkeypatch.setattr(runner.AlmQuestions, "store", store)
        assert main(alm_argv(alm, server.base_url, "--concurrency", "2")) == 0
        again = {key: server.requests_for(key) for key in alm.keys}
    answered_before = [key for key, n in asked.items() if n]
    assert answered_before and all(again[key] == 1 for key in answered_before)  # none bought twice
    assert all(n == 1 for n in again.values())
    with alm.store.session() as s:
        per_clip = dict(s.execute(select(AlmAnswer.clip_key, func.count()).group_by(AlmAnswer.clip_key)).all())
        statuses = list(s.execute(select(AlmJob.status).order_by(AlmJob.id)).scalars())
    assert per_clip == {key: 1 for key in alm.keys}  # 0 lost, 0 duplicates
    assert statuses == ["failed", "done"]


LOCKER = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
connection.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("COMMIT")
"""


def hold_lock(db: Path, seconds: float) -> subprocess.Popen:
    """Another program holding the project's write lock for ``seconds`` (returns once it holds it)."""
    process = subprocess.Popen([sys.executable, "-c", LOCKER, str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "locked"
    return process


def release(process: subprocess.Popen) -> None:
    process.wait(60)
    assert process.stdout is not None
    process.stdout.close()


@pytest.mark.slow
def test_alm_run_waits_out_a_lock_held_30_s_and_drops_nothing(alm) -> None:  # type: ignore[no-untyped-def]
    from workbench.alm.runner import AlmRunOptions, run_alm
    from workbench.tasks import TaskContext

    notes: list[str] = []
    task = TaskContext(lambda event: notes.append(event.message) if event.kind == "note" else None)
    locker: list[subprocess.Popen] = []

    def lock_after_the_first_answers(_report) -> None:  # type: ignore[no-untyped-def]
        if not locker:
            locker.append(hold_lock(alm.db, 30))

    with FakeOpenAIServer(models=[MODEL], delay_s=0.05) as server:
        for key in alm.keys:
            server.register_audio(alm.audio(key), key)
        options = AlmRunOptions(model="m", provider="openai-compatible", api_model=MODEL, base_url=server.base_url,
                                concurrency=2)
        report = run_alm(alm.store, options, task=task, on_stored=lock_after_the_first_answers)
        assert all(server.requests_for(key) == 1 for key in alm.keys)
    release(locker[0])
    assert report.answered == len(alm.keys) and not report.failed
    assert any("another program holds the project's write lock" in note for note in notes)
    with alm.store.session() as s:
        assert s.execute(select(func.count()).select_from(AlmAnswer).where(AlmAnswer.status == "ok")).scalar() == 8
        assert s.execute(select(AlmJob.status)).scalar_one() == "done"


@pytest.mark.slow
def test_judge_waits_out_a_lock_held_30_s_and_drops_nothing(store, sqlite_path, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from workbench.attribution.config import load_judges
    from workbench.attribution.runner import run_judges
    from workbench.tasks import TaskContext

    judge_project(store, monkeypatch, tmp_path, n=8)
    notes: list[str] = []
    locker: list[subprocess.Popen] = []

    def listen(event) -> None:  # type: ignore[no-untyped-def]
        if event.kind == "note":
            notes.append(event.message)
        elif event.kind == "item" and not locker:
            locker.append(hold_lock(sqlite_path, 30))

    with FakeAnthropicAPI(expected_key=KEY, delay_s=0.05) as api:
        report = run_judges(store, load_judges(), judge_names=["haiku"], base_url=api.base_url, concurrency=2,
                            task=TaskContext(listen))
        sent = len(api.message_requests())
    release(locker[0])
    summary = report.judges[0]
    assert (summary.ok, summary.failed, summary.status) == (8, 0, "done") and sent == 8
    assert any("another program holds the project's write lock" in note for note in notes)
    with store.session() as s:
        assert len(s.exec(select(JudgeCall)).all()) == 8
        assert s.execute(select(JudgeRun.status)).scalar_one() == "done"


def test_threads_are_not_left_behind(alm) -> None:  # type: ignore[no-untyped-def]
    before = {t.name for t in threading.enumerate()}
    main(alm_argv(alm, closed_port_url()))
    assert not {t.name for t in threading.enumerate() if t.name.startswith("llm")} - before


def test_a_refused_run_keeps_its_job_but_is_no_model_to_judge_or_fit(store, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A run the provider refused (401/403/404) records its failed job, but it holds no answer:
    `judge` and `fit` neither list it nor count it when they choose the only ALM; the model
    lists and the leaderboard do not show it."""
    from workbench.attribution.inputs import resolve_alm_run
    from workbench.curation.inputs import choose_alm_run
    from workbench.errors import AglwError

    judge_project(store, monkeypatch, tmp_path)
    with store.write() as s:
        refused = AlmRun(model="refused-model")
        s.add(refused)
        s.flush()
        s.add(AlmJob(alm_run_id=refused.id, provider="openai-compatible", api_model=MODEL, prompt_version="v1",
                     status="failed"))
    with store.session() as s:
        assert resolve_alm_run(s, None).model == "alm-x"
        with pytest.raises(AglwError, match="refused-model.*no answers"):
            resolve_alm_run(s, "refused-model")
    assert choose_alm_run(store, None)[1] == "alm-x"
    with pytest.raises(AglwError, match="refused-model.*no answers"):
        choose_alm_run(store, "refused-model")
    from workbench.metrics.service import leaderboard_rows, model_names

    assert model_names(store) == ["alm-x"]  # the cockpit's model lists
    assert [row["model"] for row in leaderboard_rows(store).rows] == ["alm-x"]


def test_a_closed_port_is_named_in_the_words_of_the_socket_not_the_sdk(alm, store, sqlite_path, monkeypatch,
                                                                       tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The one line says what the socket said ("Connection refused"), not the SDK's "Connection
    error.", and a judge run that never reached its API does not claim that answers were stored."""
    assert main(alm_argv(alm, closed_port_url(), "--concurrency", "2")) == 1
    alm_line = capsys.readouterr().err.strip()
    judge_project(store, monkeypatch, tmp_path)
    assert main(["--db", str(sqlite_path), "judge", "--judges", "haiku", "--base-url", closed_port_url("")]) == 1
    judge_line = capsys.readouterr().err.strip()
    for line in (alm_line, judge_line):
        assert "Connection refused" in line and "Nothing was asked" in line, line
        assert ".." not in line and "Connection error." not in line, line
    assert "Answers received so far are stored" not in judge_line and "haiku" in judge_line
