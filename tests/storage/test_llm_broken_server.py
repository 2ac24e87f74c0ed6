"""A broken server stops the run (issue 40, "Trust at the edges").

A server that fails every request is not asked about every clip in turn: after a documented number
of clips in a row failed at the server (``FAILING_SERVER_CLIPS``), the engine stops the run with one
line that names the server and the status, stores nothing for those clips, and a rerun against a
healthy server resumes. A time-out is named as one, with the time-out in force and the option that
sets it; a provider's error body is put in words; a ``--base-url`` carrying a query is refused before
anything is sent. Requests are counted, never timed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from cli.main import main
from storage.models import AlmAnswer, AlmJob, AlmRun, JudgeCall, JudgeRun, Judgment
from tests.storage.alm_project import make_project, write_alm_config
from tests.storage.test_llm_faults import MODEL, alm_argv, judge_project, lines
from tests.support.fake_alm import FakeOpenAIServer
from tests.support.fake_anthropic import FakeAnthropicAPI

THRESHOLD = 5  # the documented number (README, docs/alm.md, docs/architecture.md)
ALM_ATTEMPTS = 4  # max_retries = 3 in the tests' alm.toml
JUDGE_ATTEMPTS = 5  # the judges' default max_retries = 4 (the SDK's own retries)


def _count(store, table) -> int:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return int(s.execute(select(func.count()).select_from(table)).scalar() or 0)


@pytest.fixture
def alm(tmp_path: Path):  # type: ignore[no-untyped-def]
    write_alm_config(timeout=5.0)
    project = make_project(tmp_path, n=8)
    yield project
    project.store.dispose()


def _register(server: FakeOpenAIServer, project) -> None:  # type: ignore[no-untyped-def]
    for key in project.keys:
        server.register_audio(project.audio(key), key)


def _write_judges(**changes: object) -> None:
    from workbench.attribution.config import judges_path, load_judges

    load_judges(write_defaults=True)
    path = judges_path()
    text = path.read_text(encoding="utf-8")
    for name, value in changes.items():
        text = text.replace(f"{name} = 120" if name == "timeout_s" else f"{name} = 4", f"{name} = {value}")
    path.write_text(text, encoding="utf-8")


def test_the_threshold_is_the_documented_number() -> None:
    from workbench.llm.engine import FAILING_SERVER_CLIPS

    assert FAILING_SERVER_CLIPS == THRESHOLD
    root = Path(__file__).resolve().parents[2]
    for doc in ("README.md", "docs/alm.md", "docs/architecture.md"):
        assert f"{THRESHOLD} clips in a row" in (root / doc).read_text(encoding="utf-8"), doc


# --------------------------------------------------------------------------- a server failing everything


def test_alm_run_against_a_server_failing_everything_stops_in_one_line_and_a_rerun_resumes(alm, capsys) -> None:  # type: ignore[no-untyped-def]
    with FakeOpenAIServer(models=[MODEL], fail_status=500) as server:
        rc = main(alm_argv(alm, server.base_url, "--concurrency", "1"))
        sent, origin = server.hits, server.origin
    captured = capsys.readouterr()
    assert rc == 1 and captured.out == ""
    assert len(lines(captured.err)) == 1, captured.err
    line = captured.err
    assert origin in line and "HTTP 500" in line and f"{THRESHOLD} clips in a row" in line
    assert "rerun" in line.lower() and "Traceback" not in line and "{'" not in line
    assert sent == THRESHOLD * ALM_ATTEMPTS  # 8 clips x 4 attempts = 32 before
    # Nothing empty is stored: no run, no job, no failed answers for the clips the server failed.
    assert _count(alm.store, AlmRun) == 0 and _count(alm.store, AlmJob) == 0 and _count(alm.store, AlmAnswer) == 0

    with FakeOpenAIServer(models=[MODEL]) as healthy:
        _register(healthy, alm)
        rc = main(alm_argv(alm, healthy.base_url, "--concurrency", "1"))
        assert rc == 0 and len(healthy.model_requests) == 8
    with alm.store.session() as s:
        assert s.execute(select(func.count()).select_from(AlmAnswer).where(AlmAnswer.status == "ok")).scalar() == 8


def test_at_concurrency_the_answers_in_flight_are_stored_and_the_requests_stay_bounded(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    concurrency = 4
    write_alm_config(timeout=5.0)
    project = make_project(tmp_path, n=16)
    try:
        with FakeOpenAIServer(models=[MODEL], slow_s=1.5) as server:
            _register(server, project)
            server.behave(project.keys[0], "slow")  # still in flight when the run stops: stored
            for key in project.keys[2:]:
                server.behave(key, "always_fail")
            rc = main(alm_argv(project, server.base_url, "--concurrency", str(concurrency)))
            sent = len(server.model_requests)
        err = capsys.readouterr().err
        assert rc == 1 and len(lines(err)) == 1 and f"{THRESHOLD} clips in a row" in err and "HTTP 500" in err
        assert sent <= 2 + (THRESHOLD + concurrency - 1) * ALM_ATTEMPTS  # before: 2 + 14 x 4
        with project.store.session() as s:
            answers = s.execute(select(AlmAnswer.clip_key, AlmAnswer.status)).all()
            job = s.execute(select(AlmJob.status)).scalar_one()
        # The two answers are kept, the slow one included; no failed answer for the server's faults.
        assert sorted(answers) == sorted([(project.keys[0], "ok"), (project.keys[1], "ok")])
        assert job == "failed"

        with FakeOpenAIServer(models=[MODEL]) as healthy:
            _register(healthy, project)
            assert main(alm_argv(project, healthy.base_url, "--concurrency", str(concurrency))) == 0
            assert sorted(r.key for r in healthy.model_requests) == sorted(project.keys[2:])  # only the rest is asked
    finally:
        project.store.dispose()


def test_fewer_clips_than_the_threshold_fail_one_by_one(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    write_alm_config(timeout=5.0)
    project = make_project(tmp_path, n=THRESHOLD - 1)
    try:
        with FakeOpenAIServer(models=[MODEL], fail_status=500) as server:
            rc = main(alm_argv(project, server.base_url, "--concurrency", "1"))
            assert server.hits == (THRESHOLD - 1) * ALM_ATTEMPTS
        err = capsys.readouterr().err
        assert rc == 1 and "in a row" not in err
        with project.store.session() as s:
            assert s.execute(select(AlmAnswer.status)).scalars().all() == ["failed"] * (THRESHOLD - 1)
    finally:
        project.store.dispose()


def test_an_answer_between_failures_ends_the_run_of_failures(alm, capsys) -> None:  # type: ignore[no-untyped-def]
    with FakeOpenAIServer(models=[MODEL]) as server:
        _register(server, alm)
        for i, key in enumerate(alm.keys):
            if i != 3:
                server.behave(key, "always_fail")
        rc = main(alm_argv(alm, server.base_url, "--concurrency", "1"))
        sent = len(server.model_requests)
    err = capsys.readouterr().err
    assert rc == 1 and "in a row" not in err  # 3 failures, an answer, 4 failures: never 5 in a row
    assert sent == 7 * ALM_ATTEMPTS + 1
    with alm.store.session() as s:
        statuses = sorted(s.execute(select(AlmAnswer.status)).scalars().all())
    assert statuses == ["failed"] * 7 + ["ok"]  # the failures held back are stored once the run goes on


def test_judge_against_a_server_failing_every_message_stops_in_one_line_and_a_rerun_resumes(  # type: ignore[no-untyped-def]
        store, sqlite_path, monkeypatch, tmp_path, capsys) -> None:
    judge_project(store, monkeypatch, tmp_path, n=8)
    argv = ["--db", str(sqlite_path), "judge", "--judges", "haiku", "--concurrency", "1"]
    with FakeAnthropicAPI(fail_status=500, fail_route="POST /v1/messages") as api:
        rc = main([*argv, "--base-url", api.base_url])
        sent, origin = api.hits - api.count("GET", "/v1/models"), api.origin
    err = capsys.readouterr().err
    assert rc == 1 and len(lines(err)) == 1, err
    assert origin in err and "HTTP 500" in err and f"{THRESHOLD} clips in a row" in err and "rerun" in err.lower()
    assert "{'" not in err
    assert sent == THRESHOLD * JUDGE_ATTEMPTS  # 8 clips x 5 attempts = 40 before
    assert _count(store, JudgeRun) == 0 and _count(store, JudgeCall) == 0

    with FakeAnthropicAPI() as healthy:
        assert main([*argv, "--base-url", healthy.base_url]) == 0
        assert len(healthy.message_requests()) == 8
    assert len({j.clip_id for j in _judgments(store)}) == 8


def _judgments(store) -> list[Judgment]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return list(s.execute(select(Judgment)).scalars())


def test_judge_against_a_server_failing_everything_names_the_status_in_words(  # type: ignore[no-untyped-def]
        store, sqlite_path, monkeypatch, tmp_path, capsys) -> None:
    judge_project(store, monkeypatch, tmp_path, n=3)
    with FakeAnthropicAPI(fail_status=500) as api:
        rc = main(["--db", str(sqlite_path), "judge", "--judges", "haiku", "--base-url", api.base_url])
    err = capsys.readouterr().err
    assert rc == 1 and len(lines(err)) == 1, err
    assert "HTTP 500" in err and "Internal server error (api_error)" in err and "Nothing was asked" in err
    assert "{'" not in err and "Error code" not in err  # before: Error code: 500 - {'type': 'error', ...}
    assert _count(store, JudgeRun) == 0


def test_a_judge_failure_stored_per_clip_is_in_words(store, sqlite_path, monkeypatch, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    judge_project(store, monkeypatch, tmp_path, n=2)
    with FakeAnthropicAPI(fail_status=500, fail_route="POST /v1/messages") as api:
        rc = main(["--db", str(sqlite_path), "--json", "judge", "--judges", "haiku", "--concurrency", "1",
                   "--base-url", api.base_url])
    captured = capsys.readouterr()
    assert rc == 1
    failures = json.loads(captured.out)["judges"][0]["failures"]
    assert len(failures) == 2
    for failure in failures:
        assert "HTTP 500" in failure["reason"] and "Internal server error (api_error)" in failure["reason"]
        assert "{'" not in failure["reason"]
    assert "{'" not in captured.err


# --------------------------------------------------------------------------- a slow server


def test_alm_run_against_a_slow_server_is_one_line_naming_the_time_out(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    write_alm_config(timeout=0.3)
    project = make_project(tmp_path, n=12)
    concurrency = 4
    try:
        with FakeOpenAIServer(models=[MODEL], delay_s=3.0) as server:
            rc = main(alm_argv(project, server.base_url, "--concurrency", str(concurrency)))
            sent = server.hits
        err = capsys.readouterr().err
        assert rc == 1 and len(lines(err)) == 1, err  # before: a line per clip
        assert "time-out of 0.3 s" in err and "timeout_s" in err and "alm.toml" in err
        assert f"{THRESHOLD} clips in a row" in err
        assert sent <= (THRESHOLD + concurrency - 1) * ALM_ATTEMPTS  # before: 12 x 4
        assert _count(project.store, AlmRun) == 0 and _count(project.store, AlmAnswer) == 0
    finally:
        project.store.dispose()


def test_judge_against_a_slow_server_names_the_time_out_not_the_model_list(  # type: ignore[no-untyped-def]
        store, sqlite_path, monkeypatch, tmp_path, capsys) -> None:
    judge_project(store, monkeypatch, tmp_path, n=2)
    _write_judges(timeout_s=0.3, max_retries=0)
    with FakeAnthropicAPI(delay_s=3.0) as api:
        rc = main(["--db", str(sqlite_path), "judge", "--judges", "haiku", "--base-url", api.base_url])
        assert api.hits == 1
    err = capsys.readouterr().err
    assert rc == 1 and len(lines(err)) == 1, err
    assert "time-out of 0.3 s" in err and "timeout_s" in err and "judges.toml" in err
    assert "model list" not in err or "not in the" not in err
    assert _count(store, JudgeRun) == 0


def test_judge_replies_that_time_out_name_the_time_out(store, sqlite_path, monkeypatch, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    judge_project(store, monkeypatch, tmp_path, n=2)
    _write_judges(timeout_s=0.3, max_retries=0)
    with FakeAnthropicAPI(slow_s=3.0) as api:
        api.script.extend(["slow", "slow"])
        rc = main(["--db", str(sqlite_path), "--json", "judge", "--judges", "haiku", "--concurrency", "1",
                   "--base-url", api.base_url])
    assert rc == 1
    failures = json.loads(capsys.readouterr().out)["judges"][0]["failures"]
    assert [f["reason"].count("time-out of 0.3 s (timeout_s of judge 'haiku' in judges.toml)") for f in failures] == [1, 1]


# --------------------------------------------------------------------------- a query in --base-url


def test_a_query_in_the_alm_base_url_is_refused_before_anything_is_sent(alm, capsys) -> None:  # type: ignore[no-untyped-def]
    with FakeOpenAIServer(models=[MODEL]) as server:
        _register(server, alm)
        rc = main(alm_argv(alm, f"{server.base_url}?key=SECRETKEY42", "--concurrency", "1"))
        assert server.hits == 0
    err = capsys.readouterr().err
    assert rc == 1 and len(lines(err)) == 1, err
    assert "--base-url" in err and "query" in err and "SECRETKEY42" not in err
    assert "does not serve model" not in err  # before: ... (HTTP 404)
    assert _count(alm.store, AlmRun) == 0 and _count(alm.store, AlmJob) == 0


def test_a_query_in_the_judge_base_url_is_refused_before_anything_is_sent(  # type: ignore[no-untyped-def]
        store, sqlite_path, monkeypatch, tmp_path, capsys) -> None:
    judge_project(store, monkeypatch, tmp_path, n=2)
    with FakeAnthropicAPI() as api:
        rc = main(["--db", str(sqlite_path), "judge", "--judges", "haiku", "--base-url", f"{api.base_url}/?key=SECRETKEY42"])
        assert api.hits == 0
    err = capsys.readouterr().err
    assert rc == 1 and len(lines(err)) == 1, err
    assert "--base-url" in err and "query" in err and "SECRETKEY42" not in err
