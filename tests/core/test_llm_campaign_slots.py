"""When the engine sends the next request: while it stores (concurrency > 1), or after (concurrency 1).

A store costs the calling thread a few milliseconds per group; with a fast provider the workers
must keep asking meanwhile (P13: waiting for each store made an ALM run 1.2-1.4 x the bare SDK's
time). At concurrency 1 a run is strictly sequential: ask, store, report, then the next.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from workbench.llm.engine import Campaign, RetryPolicy
from workbench.tasks import TaskCancelled, TaskContext, TaskEvent


class Numbers:
    """Items are ints; asking one records it; a store may wait for a number of requests to be sent."""

    def __init__(self, wait_for_sent_during_first_store: int | None = None, ask_s: float = 0.0) -> None:
        self.ask_s = ask_s
        self.sent: list[int] = []
        self.stored: list[int] = []
        self.sent_by_end_of_first_store = 0
        self._lock = threading.Lock()
        self._sent_event = threading.Condition(self._lock)
        self._wait_for = wait_for_sent_during_first_store

    def key(self, item: int) -> str:
        return str(item)

    def label(self, item: int) -> str:
        return f"clip-{item}"

    def work(self, campaign: Campaign[int, int], item: int) -> int:
        time.sleep(self.ask_s)
        with self._lock:
            self.sent.append(item)
            self._sent_event.notify_all()
        return item

    def replay(self, item: int, entries: list[dict[str, Any]]) -> int:
        return item

    def failed(self, item: int, reason: str) -> int:
        return item

    def not_sent(self, item: int, reason: str) -> int | None:
        return None

    def store(self, outcomes: list[int]) -> None:
        if self._wait_for is not None and not self.stored:
            with self._lock:
                self._sent_event.wait_for(lambda: len(self.sent) >= self._wait_for, timeout=5)  # type: ignore[operator]
                self.sent_by_end_of_first_store = len(self.sent)
        self.stored.extend(outcomes)

    def announce(self, outcomes: list[int], task: TaskContext) -> None:
        for outcome in outcomes:
            task.item_done(self.label(outcome))


def _campaign(kind: Numbers, concurrency: int, task: TaskContext | None = None) -> Campaign[int, int]:
    return Campaign(kind, what="test", where="nowhere", journal=None, concurrency=concurrency,
                    retry=RetryPolicy(max_retries=0), task=task)


def test_the_workers_keep_asking_while_the_calling_thread_stores() -> None:
    # The first store waits (up to 5 s) until 3 of 10 items were sent. At concurrency 2 only 2 are
    # sent before the first answer ends, so a third is sent only if the slot that answer freed is
    # refilled before the calling thread stores it (the old engine refilled after the store: 2
    # sent by its end).
    kind = Numbers(wait_for_sent_during_first_store=3)
    left = _campaign(kind, concurrency=2).run(range(10))
    assert left == []
    assert kind.sent_by_end_of_first_store >= 3
    assert sorted(kind.stored) == list(range(10)) and sorted(kind.sent) == list(range(10))


def test_at_concurrency_one_nothing_is_sent_before_the_last_answer_is_stored_and_reported() -> None:
    kind = Numbers()
    task = TaskContext()
    reported = 0

    def cancel_at_the_second(event: TaskEvent) -> None:
        nonlocal reported
        if event.kind == "item":
            reported += 1
            assert len(kind.sent) == reported  # the next request waits for this report
            if reported == 2:
                task.cancel()

    task.subscribe(cancel_at_the_second)
    with pytest.raises(TaskCancelled):
        _campaign(kind, concurrency=1, task=task).run(range(5))
    assert kind.sent == [0, 1] and kind.stored == [0, 1]


def test_a_cancel_leaves_at_most_concurrency_requests_and_stores_every_one_sent() -> None:
    kind = Numbers(ask_s=0.002)
    task = TaskContext()
    stored_when_cancelled: list[int] = []

    def cancel_at_the_first(event: TaskEvent) -> None:
        if event.kind == "item" and not stored_when_cancelled:
            stored_when_cancelled.append(len(kind.stored))
            task.cancel()

    task.subscribe(cancel_at_the_first)
    with pytest.raises(TaskCancelled):
        _campaign(kind, concurrency=3, task=task).run(range(200))
    # When the first group was reported, at most 3 requests were in flight; nothing was sent
    # after the cancel, and every request sent was stored.
    assert len(kind.sent) <= stored_when_cancelled[0] + 3 < 200
    assert sorted(kind.stored) == sorted(kind.sent)
