"""SIGKILL at random moments during `aglw alm run` and `aglw judge`, then resume: no paid answer lost or bought twice.

Every reply is journaled (fsynced) the moment it arrives, so an answer that reached the program is
stored by the next run without being asked again. The fake server notes when each request arrived
and when its response was written; a clip may be asked again only when one of its earlier requests
was still in the air at a kill (not written, or written less than ``GRACE_S`` before it: the time a
reply takes from the server's socket to the journal). What can be in the air at a kill is bounded by
the concurrency.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from storage.models import AlmAnswer, AlmJob, JudgeCall, JudgeRun, Prediction
from tests.storage.alm_project import make_project, write_alm_config
from tests.storage.test_llm_faults import judge_project
from tests.support.fake_alm import FakeOpenAIServer
from tests.support.fake_anthropic import FakeAnthropicAPI

MODEL = "fake-audio-model"
KILLS = 20
CONCURRENCY = 4
# An answer the server finished sending less than this before a kill may still sit in the socket
# buffer, unread by a program whose threads were not scheduled yet: it never reached the program,
# so asking for it again is no second purchase. 0.1 s held on an idle machine; on CI's loaded two
# cores it once counted 4 of 80 judge answers as bought again (their delays were not recorded).
GRACE_S = 0.25
DEBUG = False
REPO = Path(__file__).resolve().parents[2]


def kill_at_random(argv: list[str], requests: Callable[[], int], seed: int) -> tuple[list[float], list[float]]:
    """Start ``aglw argv`` KILLS times and SIGKILL it at a random moment once it has sent a request.

    Returns (spawn times, kill times) on the monotonic clock; stops early when a run finishes.
    """
    rng = random.Random(seed)
    spawns: list[float] = []
    kills: list[float] = []
    for _ in range(KILLS):
        before = requests()
        spawns.append(time.monotonic())
        process = subprocess.Popen([sys.executable, "-m", "cli.main", *argv], cwd=REPO,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while requests() == before and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.6))
        if process.poll() is not None:  # it ended before the kill: everything is answered
            process.wait()
            break
        kills.append(time.monotonic())
        process.kill()
        process.wait(30)
    return spawns, kills


def finish(argv: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", "cli.main", *argv], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def audit(timeline: list[tuple[str, float, Any]], key_of: Callable[[Any], str | None], spawns: list[float],
          kills: list[float]) -> tuple[dict[str, int], list[str], list[int]]:
    """(requests per key, keys bought again without excuse, requests in the air at each kill)."""
    received = {id(r): (t, r) for event, t, r in timeline if event == "received" and key_of(r) is not None}
    delivered = {id(r): t for event, t, r in timeline if event == "delivered"}
    by_key: dict[str, list[int]] = {}
    for ident, (_t, request) in received.items():
        by_key.setdefault(key_of(request), []).append(ident)  # type: ignore[arg-type]

    def in_air(ident: int, kill: float, grace: float) -> bool:
        t = received[ident][0]
        return t <= kill and delivered.get(ident, float("inf")) > kill - grace

    unexcused = []
    for key, idents in by_key.items():
        excused = sum(1 for ident in idents if any(in_air(ident, kill, GRACE_S) for kill in kills))
        if len(idents) - 1 > excused:
            unexcused.append(key)
            if DEBUG:
                for ident in sorted(idents, key=lambda i: received[i][0]):
                    t = received[ident][0]
                    d = delivered.get(ident)
                    nxt = min((k for k in kills if k >= t), default=None)
                    print("DEBUG", key, "recv", round(t, 3), "deliv", None if d is None else round(d, 3),
                          "next kill", None if nxt is None else round(nxt, 3),
                          "gap", None if (d is None or nxt is None) else round(nxt - d, 3))
    spawn_of = {kill: max(s for s in spawns if s <= kill) for kill in kills}
    flying = [sum(1 for ident in received if received[ident][0] >= spawn_of[kill] and in_air(ident, kill, 0.0))
              for kill in kills]
    return {key: len(idents) for key, idents in by_key.items()}, unexcused, flying


@pytest.mark.slow
@pytest.mark.timeout(900)  # twenty program starts: about a minute on an idle machine, more on a busy one
def test_twenty_kills_during_alm_run_lose_nothing_and_buy_nothing_twice(tmp_path: Path) -> None:
    write_alm_config(timeout=10.0)
    project = make_project(tmp_path, n=100)
    project.store.dispose()
    with FakeOpenAIServer(models=[MODEL], delay_s=0.3) as server:
        for key in project.keys:
            server.register_audio(project.audio(key), key)
        argv = ["--db", str(project.db), "alm", "run", "--model", "m", "--provider", "openai-compatible",
                "--base-url", server.base_url, "--api-model", MODEL, "--concurrency", str(CONCURRENCY)]
        spawns, kills = kill_at_random(argv, lambda: len(server.requests), seed=28)
        finish(argv)
        counts, unexcused, flying = audit(server.timeline, lambda r: r.key, spawns, kills)
    assert len(kills) >= 10  # the kills landed while clips were being asked
    assert set(counts) == set(project.keys)
    assert unexcused == []  # 0 answers that reached the program bought again
    assert max(flying) <= CONCURRENCY
    from storage import open_store

    store = open_store(project.db)
    try:
        with store.session() as s:
            per_clip = dict(s.execute(select(AlmAnswer.clip_key, func.count()).where(AlmAnswer.status == "ok")
                                      .group_by(AlmAnswer.clip_key)).all())
            predictions = s.execute(select(func.count()).select_from(Prediction)).scalar()
            statuses = list(s.execute(select(AlmJob.status).order_by(AlmJob.id)).scalars())
            failed = s.execute(select(func.count()).select_from(AlmAnswer).where(AlmAnswer.status != "ok")).scalar()
    finally:
        store.dispose()
    assert per_clip == {key: 1 for key in project.keys} and predictions == 100 and failed == 0  # 0 lost, 0 twice
    assert "running" not in statuses and "interrupted" in statuses and statuses[-1] == "done"
    assert not list(tmp_path.glob(".*.answers"))  # the journal is gone once everything in it is stored


_CLIP = re.compile(r"Clip: (clip\d+)")


def _judged_clip(request: Any) -> str | None:
    if getattr(request, "method", None) != "POST" or getattr(request, "path", "").rstrip("/") != "/v1/messages":
        return None
    match = _CLIP.search(str(request.body))
    return match.group(1) if match else None


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_twenty_kills_during_judge_lose_nothing_and_buy_nothing_twice(store, sqlite_path, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    judge_project(store, monkeypatch, tmp_path, n=80)
    store.dispose()
    with FakeAnthropicAPI(expected_key="sk-ant-engine-SECRET-0a1b2c3d4e5f", delay_s=0.2) as api:
        argv = ["--db", str(sqlite_path), "judge", "--judges", "haiku", "--base-url", api.base_url,
                "--concurrency", str(CONCURRENCY)]
        spawns, kills = kill_at_random(argv, lambda: len(api.message_requests()), seed=29)
        finish(argv)
        counts, unexcused, flying = audit(api.timeline, _judged_clip, spawns, kills)
    assert len(kills) >= 10
    assert len(counts) == 80 and unexcused == []
    assert max(flying) <= CONCURRENCY
    with store.session() as s:
        calls = list(s.execute(select(JudgeCall)).scalars())
        statuses = list(s.execute(select(JudgeRun.status).order_by(JudgeRun.id)).scalars())
    per_clip: dict[int, int] = {}
    for call in calls:
        assert call.status == "ok"
        per_clip[call.clip_id] = per_clip.get(call.clip_id, 0) + 1
    assert len(per_clip) == 80 and set(per_clip.values()) == {1}  # 0 lost, 0 twice
    assert "running" not in statuses and "interrupted" in statuses and statuses[-1] == "done"
