"""The one batch driver (workbench/llm/batch.py) on an in-memory batch: collecting is resumable and
buys nothing twice; the request map is recorded before the batch is created; a batch that ended
badly leaves stored failures; a refused key stops with its one line."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from workbench.llm.batch import NO_RESULT, BatchState, Replies, collect, submit
from workbench.llm.errors import RunStopped
from workbench.tasks import TaskCancelled, TaskContext, TaskEvent


def _store(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(sqlite_path=tmp_path / "project.sqlite", url=f"sqlite:///{tmp_path / 'project.sqlite'}")


class Provider:
    """A provider's batch: results by custom id; a reply starting "bad" needs one paid retry."""

    def __init__(self, results: dict[str, str], *, state: BatchState = BatchState(True)) -> None:
        self.results, self.state = results, state
        self.reads = 0
        self.bought: list[str] = []  # the paid follow-up requests, by custom id

    def retry(self, custom_id: str) -> str:
        self.bought.append(custom_id)
        return f"fixed {custom_id}"


class Kind:
    """A question kind over ``Provider``; ``project`` (custom id → answers) is what it stores."""

    group: int | None = 1

    def __init__(self, provider: Provider, project: dict[str, list[str]], request_map: dict[str, dict[str, Any]],
                 *, crash_on: str | None = None) -> None:
        self.provider, self.project, self.map = provider, project, request_map
        self.batch_id = "batches/1"
        self.crash_on = crash_on
        self.finished = 0

    def state(self) -> BatchState:
        return self.provider.state

    def results(self) -> Iterable[tuple[str, Any]]:
        self.provider.reads += 1
        return list(self.provider.results.items())

    def request_map(self) -> dict[str, dict[str, Any]]:
        return self.map

    def stored(self) -> set[str]:
        return set(self.project)

    def record(self, custom_id: str, result: Any) -> dict[str, Any]:
        return {"text": result}

    def outcome(self, custom_id: str, replies: Replies) -> tuple[str, list[str]]:
        texts = [replies.first["text"]]
        if texts[0].startswith("bad"):
            texts.append(replies.ask(lambda: self.provider.retry(custom_id), lambda r: {"text": r}, lambda e: e["text"]))
        return custom_id, texts

    def failed(self, custom_id: str, reason: str) -> tuple[str, list[str]]:
        return custom_id, [f"failed: {reason}"]

    def store(self, outcomes: list[tuple[str, list[str]]]) -> None:
        if self.crash_on is not None and any(custom_id == self.crash_on for custom_id, _ in outcomes):
            raise RuntimeError("killed while storing")  # as a kill after the replies were journaled
        for custom_id, texts in outcomes:
            assert custom_id not in self.project, f"{custom_id} stored twice"
            self.project[custom_id] = texts

    def announce(self, outcomes: list[tuple[str, list[str]]], task: TaskContext) -> None:
        for custom_id, texts in outcomes:
            task.item_done(custom_id, not texts[-1].startswith("failed"), texts[-1])

    def finish(self) -> None:
        self.finished += 1


RESULTS = {"a": "ok a", "b": "bad b", "c": "ok c", "d": "bad d", "e": "ok e"}
MAP = {key: {"n": i} for i, key in enumerate([*RESULTS, "f"])}  # "f" has no result in the batch


def _cancel_after(k: int) -> TaskContext:
    task = TaskContext()

    def listen(event: TaskEvent) -> None:
        if event.kind == "item" and event.done >= k:
            task.cancel()

    task.subscribe(listen)
    return task


def _whole() -> dict[str, list[str]]:
    return {"a": ["ok a"], "b": ["bad b", "fixed b"], "c": ["ok c"], "d": ["bad d", "fixed d"], "e": ["ok e"],
            "f": [f"failed: {NO_RESULT}"]}


@pytest.mark.parametrize("k", [1, 2, 4])
def test_a_collect_cancelled_after_k_results_resumes_and_buys_nothing_again(tmp_path: Path, k: int) -> None:
    provider, project = Provider(dict(RESULTS)), {}
    with pytest.raises(TaskCancelled):
        collect(Kind(provider, project, MAP), _store(tmp_path), what="test", task=_cancel_after(k))  # type: ignore[arg-type]
    assert len(project) == k  # what was reported is stored, nothing more
    kind = Kind(provider, project, MAP)
    task = TaskContext()
    collect(kind, _store(tmp_path), what="test", task=task)  # type: ignore[arg-type]
    assert project == _whole()
    assert sorted(provider.bought) == ["b", "d"]  # each retry bought once
    assert task.total == len(MAP) - k and kind.finished == 1
    assert not (tmp_path / ".project.sqlite.answers").exists()  # the journal is gone once all is stored


def test_a_collect_killed_while_storing_replays_the_paid_retry_from_the_journal(tmp_path: Path) -> None:
    provider, project = Provider(dict(RESULTS)), {}
    with pytest.raises(RuntimeError, match="killed"):
        collect(Kind(provider, project, MAP, crash_on="d"), _store(tmp_path), what="test",  # type: ignore[arg-type]
                task=TaskContext())
    assert set(project) == {"a", "b", "c"} and provider.bought == ["b", "d"]
    journal = next((tmp_path / ".project.sqlite.answers").glob("batch-*.jsonl")).read_text()
    assert '"fixed d"' in journal  # the paid retry was on disk before the store failed
    collect(Kind(provider, project, MAP), _store(tmp_path), what="test", task=TaskContext())  # type: ignore[arg-type]
    assert project == _whole() and provider.bought == ["b", "d"]  # "d" was not bought again


def test_a_collect_of_a_collected_batch_stores_nothing_and_finishes(tmp_path: Path) -> None:
    provider, project = Provider(dict(RESULTS)), _whole()
    kind = Kind(provider, project, MAP)
    collect(kind, _store(tmp_path), what="test", task=TaskContext())  # type: ignore[arg-type]
    assert project == _whole() and provider.bought == [] and kind.finished == 1


def test_the_whole_batch_in_one_group_is_finished_before_it_is_reported(tmp_path: Path) -> None:
    """A kind that stores the batch whole (Gemini's): a cancel while reporting leaves it collected."""
    provider, project = Provider(dict(RESULTS)), {}
    kind = Kind(provider, project, MAP)
    kind.group = None
    with pytest.raises(TaskCancelled):
        collect(kind, _store(tmp_path), what="test", task=_cancel_after(1))  # type: ignore[arg-type]
    assert project == _whole() and kind.finished == 1


def test_a_running_batch_is_left_and_a_badly_ended_one_leaves_failures(tmp_path: Path) -> None:
    running = Provider(dict(RESULTS), state=BatchState(False, words="batches/1 (running)"))
    project: dict[str, list[str]] = {}
    state = collect(Kind(running, project, MAP), _store(tmp_path), what="test", task=TaskContext())  # type: ignore[arg-type]
    assert not state.ended and state.words == "batches/1 (running)" and project == {} and running.reads == 0
    expired = Provider(dict(RESULTS), state=BatchState(True, failed="the batch ended expired"))
    collect(Kind(expired, project, MAP), _store(tmp_path), what="test", task=TaskContext())  # type: ignore[arg-type]
    assert project == {key: ["failed: the batch ended expired"] for key in MAP} and expired.reads == 0


def test_unknown_and_repeated_custom_ids_are_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    provider, project = Provider({}), {}
    kind = Kind(provider, project, {"a": {}})
    kind.results = lambda: [("a", "ok a"), ("zz", "ok zz"), ("a", "ok again")]  # type: ignore[method-assign]
    collect(kind, _store(tmp_path), what="test", task=TaskContext())  # type: ignore[arg-type]
    assert project == {"a": ["ok a"]}
    assert caplog.text.count("unknown or repeated custom_id") == 2


class Submission:
    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail, self.log = fail, []  # type: ignore[var-annotated]

    def record(self, request_map: dict[str, dict[str, Any]]) -> None:
        self.log.append(("record", sorted(request_map)))

    def submit(self, requests: list[tuple[str, str]]) -> str:
        self.log.append(("submit", [cid for cid, _ in requests]))
        if self.fail is not None:
            raise self.fail
        return "batches/9"

    def submitted(self, batch_id: str) -> None:
        self.log.append(("submitted", batch_id))

    def not_submitted(self, exc: BaseException) -> None:
        self.log.append(("not submitted", str(exc)))


def test_the_request_map_is_recorded_before_the_batch_is_created() -> None:
    submission = Submission()
    requests = [("a", "ask a", {"n": 1}), ("b", "ask b", {"n": 2}), ("a", "ask a", {"n": 1})]
    assert submit(submission, requests, what="test", task=TaskContext()) == "batches/9"
    assert submission.log == [("record", ["a", "b"]), ("submit", ["a", "b"]), ("submitted", "batches/9")]


def test_a_refused_key_stops_the_submission_with_its_one_line_and_is_recorded() -> None:
    submission = Submission(RunStopped("the provider refused the API key"))
    with pytest.raises(RunStopped, match="refused the API key"):
        submit(submission, [("a", "ask a", {})], what="test", task=TaskContext())
    assert submission.log[-1] == ("not submitted", "the provider refused the API key")
