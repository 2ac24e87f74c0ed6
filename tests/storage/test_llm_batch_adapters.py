"""Both batch modes through the one driver (workbench/llm/batch.py), against the fake servers that
drive the real SDKs: a collect that dies while storing stores everything from its journal next
time, and buys nothing again (the judges' interactive retry included)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from storage.models import JudgeCall, JudgeRun
from tests.storage.test_attribution_service import NAMES, project  # noqa: F401 - fixture
from tests.storage.test_task_cancel_resume import _alm_state, _gemini_options, _job_statuses, gemini  # noqa: F401 - fixture
from workbench.attribution.config import load_judges
from workbench.attribution.runner import run_judges


def _dies_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
    real = getattr(owner, name)
    calls = []

    def store(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("killed while storing")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, store)


def test_judge_collect_dying_while_storing_does_not_buy_the_retry_again(project, monkeypatch) -> None:  # noqa: F811
    from workbench.attribution import batch

    store, api = project
    config = load_judges()
    api.batch_script.extend(["unknown_id", "succeeded", "succeeded"])  # the first needs its interactive retry
    run_judges(store, config, judge_names=["haiku"], mode="batch", base_url=api.base_url, names=NAMES)
    _dies_once(monkeypatch, batch, "store_outcomes")
    with pytest.raises(RuntimeError, match="killed"):
        batch.collect_batches(store, config, base_url=api.base_url, names=NAMES)
    assert len(api.message_requests()) == 1  # the retry was bought (and journaled) before the store died
    with store.session() as s:
        assert s.exec(select(JudgeCall)).all() == [] and s.exec(select(JudgeRun.status)).all() == ["submitted"]
    report = batch.collect_batches(store, config, base_url=api.base_url, names=NAMES)
    assert (report.judges[0].ok, report.judges[0].retries) == (3, 1)
    assert len(api.message_requests()) == 1  # read back from the journal, not asked again
    with store.session() as s:
        attempts = sorted((c.attempt, c.status, c.custom_id is not None) for c in s.exec(select(JudgeCall)))
        assert s.exec(select(JudgeRun.status)).all() == ["done"]
    assert attempts == [(1, "failed", True), (1, "ok", True), (1, "ok", True), (2, "ok", False)]


def test_alm_collect_dying_while_storing_stores_the_batch_from_its_journal(gemini, monkeypatch) -> None:  # noqa: F811
    from workbench.alm import batch

    server, (interrupted, whole) = gemini
    batch.submit_batch(interrupted.store, _gemini_options(server, interrupted.keys))
    batch.submit_batch(whole.store, _gemini_options(server, whole.keys))
    _dies_once(monkeypatch, batch.GeminiBatch, "store")
    with pytest.raises(RuntimeError, match="killed"):
        batch.collect_batches(interrupted.store, "gemini-batch")
    assert _alm_state(interrupted.store) == ([], []) and _job_statuses(interrupted.store) == ["submitted"]
    assert server.deleted == 0  # the uploads stay until the batch is collected
    resumed = batch.collect_batches(interrupted.store, "gemini-batch")
    assert resumed.answered == 6 and not resumed.failed and _job_statuses(interrupted.store) == ["done"]
    batch.collect_batches(whole.store, "gemini-batch")
    assert _alm_state(interrupted.store) == _alm_state(whole.store) and len(_alm_state(whole.store)[1]) == 6
