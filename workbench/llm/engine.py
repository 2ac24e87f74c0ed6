"""The campaign engine: ask an LLM about each item, store every answer as it arrives.

One run of a question kind goes:

1. **replay** — what the journal holds and the project does not is stored first (no request);
2. **ask** — the rest goes to a paced pool of at most ``concurrency`` requests in flight (new
   requests are handed to the pool only as earlier ones end, so at a kill at most ``concurrency``
   requests are in the air); transient faults are retried with backoff honouring ``retry-after``;
   each reply is journaled by the worker that received it, before anything else;
3. **store** — the calling thread writes the answers in small group transactions; a project
   locked by another program makes it wait (with a note) and never drops an answer;
4. **report** — each stored item is one item of the task protocol.

Run-level faults are decided here for every kind: a server not reached on the run's first
requests (refused, DNS, TLS) stops the run with :class:`~workbench.llm.errors.Unreachable`;
:class:`~workbench.llm.errors.RunStopped` (401/403/404) stops it at once; a server that fails
:data:`FAILING_SERVER_CLIPS` clips in a row (each one's requests all 5xx, time-outs, ... after the
retries; no reply) stops it with :class:`~workbench.llm.errors.ServerFailing`, and nothing is stored
for those clips. A kind never sees those.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from workbench.llm.errors import AnswerError, RetryableError, RunStopped, ServerFailing, Unreachable
from workbench.llm.journal import Journal
from workbench.tasks import TaskCancelled, TaskContext

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")
Reply = TypeVar("Reply")

_WAIT_S = 0.2
# How long the answers that end while others are asked are gathered into one transaction (at
# concurrency > 1; the freed slots are refilled meanwhile, so no worker waits for it).
_GATHER_S = 0.02
_LOCK_RETRY_S = 1.0
# A broken server stops the run: after this many different clips in a row whose requests all failed at
# the server (a transient fault that outlasted the retries, no reply at all), nothing more is sent.
# Documented in README ("Faults") and docs/architecture.md ("Run-level faults").
FAILING_SERVER_CLIPS = 5


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a transient fault is retried (the server's ``retry-after`` wins)."""

    max_retries: int = 3
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    max_retry_after_s: float = 300.0


@dataclass(frozen=True)
class Call(Generic[Reply]):
    """A request that got a reply: the reply, how many attempts it took and the last one's latency."""

    reply: Reply
    attempts: int
    latency_s: float


class Pacer:
    """At most ``per_minute`` request starts per minute across all workers (None: no limit)."""

    def __init__(self, per_minute: float | None, sleep: Callable[[float], None]) -> None:
        self._interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()
        self._sleep = sleep

    def wait(self) -> None:
        if not self._interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._interval
        if start > now:
            self._sleep(start - now)


class GaveUp(Exception):
    """A transient fault outlasted the retries; ``reason`` names it and the attempts."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


@dataclass(frozen=True)
class _Ended(Generic[Outcome]):
    """A worker's result: the outcome, and the server's fault when no request of the item got a reply."""

    outcome: Outcome
    fault: str | None = None


class QuestionKind(Protocol[Item, Outcome]):
    """What differs between ALM runs, judges and error-mode judges: items, asking, reading, storing."""

    def key(self, item: Item) -> str:
        """The item's journal key (its fingerprint, plus the sample number where there are samples)."""
        ...

    def label(self, item: Item) -> str:
        """The item as the task protocol names it."""
        ...

    def work(self, campaign: Campaign[Item, Outcome], item: Item) -> Outcome:
        """Ask about one item (in a worker): requests go through :meth:`Campaign.request`."""
        ...

    def replay(self, item: Item, entries: list[dict[str, Any]]) -> Outcome:
        """The outcome of an item from its journaled replies (no request)."""
        ...

    def failed(self, item: Item, reason: str) -> Outcome:
        """An item that failed outside the provider (an unexpected error in the worker)."""
        ...

    def not_sent(self, item: Item, reason: str) -> Outcome | None:
        """An item left unasked because the run stopped on purpose (None: not reported)."""
        ...

    def store(self, outcomes: list[Outcome]) -> None:
        """Write the outcomes in one transaction (the calling thread; may raise a lock time-out)."""
        ...

    def announce(self, outcomes: list[Outcome], task: TaskContext) -> None:
        """Count the stored outcomes and report them to ``task`` (may raise ``TaskCancelled``)."""
        ...


def is_lock_timeout(exc: BaseException) -> bool:
    """A write that waited for another program's lock and gave up (SQLite or PostgreSQL)."""
    text = str(exc).lower()
    return "database is locked" in text or "lock timeout" in text or "locknotavailable" in text \
        or "canceling statement due to lock timeout" in text


def is_disk_full(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "disk is full" in text or "no space left" in text or getattr(exc, "errno", None) == 28


def write_waiting(fn: Callable[[], Any], *, task: TaskContext, what: str, kept: str | None = None) -> Any:
    """``fn()`` (one write transaction), tried again while another program holds the project's lock.

    The first wait is noted on the task (stderr in the CLI); nothing is dropped. A cancel while
    waiting stops only when the answers are safe in a journal (``kept``). A full disk is one line.
    """
    noted = False
    while True:
        try:
            result = fn()
            break
        except Exception as exc:  # noqa: BLE001 - only lock time-outs and a full disk are handled here
            where = f"; the answers are kept in {kept} and the next run stores them without asking again" if kept else ""
            if is_disk_full(exc):
                raise RunStopped(f"the disk is full: {what} could not be stored{where}. Free space and rerun") from None
            if not is_lock_timeout(exc):
                raise
            if not noted:
                task.note(f"{what}: another program holds the project's write lock; waiting for it{where}")
                noted = True
            if task.cancelled and kept:
                raise TaskCancelled() from None
            time.sleep(_LOCK_RETRY_S)
    if noted:
        task.note(f"{what}: the lock was released; stored")
    return result


class Campaign(Generic[Item, Outcome]):
    """One run of a question kind against one provider.

    Parameters
    ----------
    kind
        The question kind.
    what
        The run in words, for messages ("vllm-omni", "judge opus").
    where
        The endpoint in words (secrets stripped), named when it cannot be reached.
    journal
        The run's journal (None: answers go to the project only; tests of single pieces).
    concurrency, retry, per_minute
        Requests in flight, retries, request starts per minute.
    task, sleep
        Progress and cancel; waiting between retries (tests pass a recorder).
    resume
        How to resume, a sentence ending the line that stops a run on a broken server.
    """

    def __init__(self, kind: QuestionKind[Item, Outcome], *, what: str, where: str, journal: Journal | None,
                 concurrency: int, retry: RetryPolicy, per_minute: float | None = None,
                 task: TaskContext | None = None, sleep: Callable[[float], None] = time.sleep,
                 resume: str = "Rerun the same command once the server answers: it asks only what has no answer") -> None:
        self.kind, self.what, self.where, self.journal = kind, what, where, journal
        self.concurrency = max(1, concurrency)
        self.retry = retry
        self.task = task or TaskContext()
        self.sleep = sleep
        self.pacer = Pacer(per_minute, sleep)
        self.stop = threading.Event()
        self.stop_reason: str | None = None
        self.requests_sent = 0
        self.replies = 0
        self._count_lock = threading.Lock()
        self.stopped: RunStopped | None = None
        self.failing: ServerFailing | None = None  # the run stopped on a broken server
        self.resume = resume
        self.cancelled = False
        self._item = threading.local()  # the item a worker is asking about: replied?, the server's fault

    # ------------------------------------------------------------------ workers
    def halt(self, reason: str) -> None:
        """Send nothing more (requests in flight still end and are stored)."""
        if not self.stop.is_set():
            self.stop_reason = reason
            self.stop.set()

    @property
    def halted(self) -> bool:
        return self.stop.is_set() or self.task.cancelled

    def request(self, key: str, send: Callable[[Callable[[bytes], None]], Reply],
                record: Callable[[Reply], dict[str, Any]], *, note: dict[str, Any] | None = None) -> Call[Reply]:
        """Send one request with the engine's retries; the reply is journaled before it is returned.

        ``send(keep_body)`` sends once; a provider that can hands the response's raw body to
        ``keep_body`` before its SDK parses it, and the body is journaled at once (an SDK's first
        parse in a process can take longer than the kill it must survive). Otherwise the entry is
        ``record(reply)`` once the reply is parsed. Either way the entry holds ``note`` and the
        attempts, and the kind reads it back in :meth:`QuestionKind.replay`.

        Raises
        ------
        GaveUp
            A transient fault outlasted the retries (or the run stopped meanwhile).
        Unreachable
            The server was not reached and no reply has arrived in this run yet.
        RunStopped, AnswerError
            From the provider.
        """
        attempts = 0
        while True:
            attempts += 1
            self.pacer.wait()
            with self._count_lock:
                self.requests_sent += 1
            started = time.monotonic()
            kept: list[bool] = []

            def keep_body(body: bytes, attempts: int = attempts) -> None:
                kept.append(True)
                self.keep(key, {**(note or {}), "attempts": attempts, "body": body.decode("utf-8", "replace")})

            try:
                reply = send(keep_body)
            except AnswerError as exc:
                # A provider that retries by itself (the judges' SDK) reports an unreached server so.
                if getattr(exc, "connection", False) and self.replies == 0:
                    raise Unreachable.at(self.where, str(exc)) from None
                self._note(fault=str(exc) if getattr(exc, "transient", False) else None)
                raise
            except RetryableError as exc:
                if exc.connection and self.replies == 0:
                    raise Unreachable.at(self.where, exc.reason) from None
                if attempts > self.retry.max_retries or self.halted:
                    reason = f"{exc.reason} (gave up after {attempts} attempt(s))"
                    self._note(fault=reason)
                    raise GaveUp(reason, attempts) from None
                backoff = min(self.retry.backoff_s * 2 ** (attempts - 1), self.retry.max_backoff_s)
                delay = min(exc.retry_after, self.retry.max_retry_after_s) if exc.retry_after is not None else backoff
                self.sleep(delay)
                continue
            latency = time.monotonic() - started
            with self._count_lock:
                self.replies += 1
            self._note(fault=None)
            if not kept:
                self.keep(key, {**(note or {}), "attempts": attempts, "latency_s": latency, **record(reply)})
            return Call(reply, attempts, latency)

    def keep(self, key: str, entry: dict[str, Any]) -> None:
        """Journal one paid reply now; a journal that cannot be written stops further requests."""
        if self.journal is None:
            return
        try:
            self.journal.append(key, entry)
        except OSError as exc:
            self.halt(f"the journal {self.journal.path} cannot be written ({exc.strerror or exc}); "
                      "the answers received are stored, nothing more is asked")

    def _note(self, *, fault: str | None) -> None:
        """What the last request of this worker's item met: a reply (or a final answer), or the server's fault."""
        state = self._item
        if fault is None:
            state.replied = True
        else:
            state.fault = fault

    def _work(self, item: Item) -> _Ended[Outcome]:
        if self.halted:
            return _Ended(NOT_SENT)
        state = self._item
        state.replied, state.fault = False, None
        try:
            outcome = self.kind.work(self, item)
        except GaveUp as exc:
            outcome = self.kind.failed(item, exc.reason)
        return _Ended(outcome, None if state.replied else state.fault)

    def _clip(self, item: Item) -> str:
        """The clip an item is about (a kind with samples says so through ``clip``; else its label)."""
        clip = getattr(self.kind, "clip", None)
        return str(clip(item)) if callable(clip) else self.kind.label(item)

    def _server_failing(self, streak: list[tuple[Outcome, Item, str]]) -> ServerFailing | None:
        """The run's stop when the items failed at the server in a row cover enough different clips."""
        clips = {self._clip(item) for _, item, _ in streak}
        if len(clips) < FAILING_SERVER_CLIPS:
            return None
        fault = streak[-1][2]
        return ServerFailing(
            f"{self.what}: {self.where} failed {len(clips)} clips in a row ({fault}); the run stopped and sent "
            f"nothing more (a server failing {FAILING_SERVER_CLIPS} clips in a row is taken for broken). Nothing "
            f"was stored for those clips, the answers received are. {self.resume}")

    # ------------------------------------------------------------------ storing
    def write(self, fn: Callable[[], Any], what: str = "its record") -> Any:
        """Run a write of this run's (``fn``), waiting while another program holds the project's lock."""
        return write_waiting(fn, task=self.task, what=f"{self.what}: {what}",
                             kept=str(self.journal.path) if self.journal is not None else None)

    def store(self, outcomes: list[Outcome], items: list[Item]) -> None:
        """Store on the calling thread; wait (with a note) while another program holds the lock."""
        if not outcomes:
            return
        self.write(lambda: self.kind.store(outcomes), f"{len(outcomes)} answer(s)")
        if self.journal is not None:
            self.journal.mark_stored([self.kind.key(item) for item in items])

    def _announce(self, outcomes: list[Outcome]) -> None:
        try:
            self.kind.announce(outcomes, self.task)
        except TaskCancelled:
            self.cancelled = True
            self.halt("cancelled")

    # ------------------------------------------------------------------ the run
    def replay(self, items: Iterable[Item], stored: Callable[[Item], bool] | None = None) -> list[Item]:
        """Store what the journal holds for ``items``; returns the items still to ask.

        ``stored(item)`` says whether the project already holds the item's answer (a journal entry
        whose "stored" note was lost): such entries are marked stored, not stored twice.
        """
        items = list(items)
        if self.journal is None:
            return items
        pending = self.journal.pending()
        if not pending:
            return items
        rest: list[Item] = []
        replayed: list[tuple[Item, Outcome]] = []
        for item in items:
            entries = pending.get(self.kind.key(item))
            if entries is None:
                rest.append(item)
            elif stored is not None and stored(item):
                self.journal.mark_stored([self.kind.key(item)])
            else:
                replayed.append((item, self.kind.replay(item, entries)))
        if replayed:
            self.task.note(f"{self.what}: storing {len(replayed)} answer(s) received by an earlier run "
                           f"(from {self.journal.path}); they are not asked again")
            for start in range(0, len(replayed), 200):
                chunk = replayed[start:start + 200]
                self.store([o for _, o in chunk], [i for i, _ in chunk])
                self._announce([o for _, o in chunk])
        return rest

    def run(self, items: Iterable[Item]) -> list[Item]:
        """Ask about ``items``; returns the items never sent (the run stopped or was cancelled).

        Raises
        ------
        RunStopped
            401/403/404, an unreachable server, a full disk: answers received are stored first.
        TaskCancelled
            The task was cancelled: requests in flight ended and were stored.
        """
        queue: deque[Item] = deque(items)
        in_flight: dict[Future[_Ended[Outcome]], Item] = {}
        outcomes: list[Outcome] = []  # the group being gathered: ended, not stored yet
        stored_items: list[Item] = []
        # Items that failed at the server since the last reply: held back (neither stored nor reported)
        # until a reply shows the server alive; dropped when they make the run stop (ServerFailing).
        streak: list[tuple[Outcome, Item, str]] = []
        error: BaseException | None = None
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="llm") as pool:

            def refill() -> None:
                while queue and not self.halted and len(in_flight) < self.concurrency:
                    item = queue.popleft()
                    in_flight[pool.submit(self._work, item)] = item

            def release_streak() -> None:
                outcomes.extend(o for o, _, _ in streak)
                stored_items.extend(i for _, i, _ in streak)
                streak.clear()

            def collect(done: Iterable[Future[_Ended[Outcome]]]) -> None:
                for future in done:
                    item = in_flight.pop(future)
                    exc = future.exception()
                    if isinstance(exc, RunStopped):
                        self.stopped = self.stopped or exc
                        self.halt(str(exc))
                        continue
                    ended = _Ended(self.kind.failed(item, f"{type(exc).__name__}: {exc}")) if exc is not None \
                        else future.result()
                    outcome = ended.outcome
                    if outcome is NOT_SENT:
                        queue.appendleft(item)
                        continue
                    if ended.fault is not None:
                        if self.failing is None:
                            streak.append((outcome, item, ended.fault))
                            self.failing = self._server_failing(streak)
                            if self.failing is not None:
                                self.halt(str(self.failing))
                        continue  # after the stop, the failures of the requests in flight are dropped too
                    if self.failing is None:
                        release_streak()  # an item that did not fail at the server ends the streak
                    outcomes.append(outcome)
                    stored_items.append(item)

            try:
                while in_flight or (queue and not self.halted):
                    refill()
                    if not in_flight:
                        break
                    done, _ = wait(in_flight, timeout=_WAIT_S, return_when=FIRST_COMPLETED)
                    if not done:
                        continue
                    collect([future for future in in_flight if future.done()])
                    if self.concurrency > 1:
                        # The freed slots are refilled at once and the answers that end within a
                        # moment join the group, so the workers ask while answers gather and while
                        # this thread stores them in one transaction (P13: storing each answer
                        # before refilling its slot made an ALM run 1.2-1.4 x the bare SDK's time;
                        # a store costs ~2 ms of this thread's CPU, whatever the group's size).
                        gather_until = time.monotonic() + _GATHER_S
                        refill()
                        while in_flight and not self.halted:
                            left = gather_until - time.monotonic()
                            if left <= 0:
                                break
                            ended, _ = wait(in_flight, timeout=left, return_when=FIRST_COMPLETED)
                            if not ended:
                                break
                            collect(ended)
                            refill()
                    # At concurrency 1 the run is strictly sequential: the next request is sent only
                    # after this answer is stored and reported, so a cancel raised while reporting
                    # leaves nothing in flight. (A cancel never stops a request already sent: its
                    # answer is paid for and is stored.)
                    self.store(outcomes, stored_items)
                    group = outcomes[:]
                    outcomes.clear()
                    stored_items.clear()
                    self._announce(group)
                if streak and self.failing is None:
                    # The run ended (or stopped for another reason) with failures held back: they are
                    # the clips' failures, stored and reported as any other.
                    release_streak()
                    self.store(outcomes, stored_items)
                    group = outcomes[:]
                    outcomes.clear()
                    stored_items.clear()
                    self._announce(group)
            except BaseException as exc:
                error = exc
                self.halt("stopped")
                # Requests in flight are paid for: their replies are journaled by the workers;
                # store them now (with the group gathered and not yet stored) when the store works.
                rest = [(f.result().outcome, i) for f, i in in_flight.items()
                        if not f.cancelled() and f.exception() is None and f.result().outcome is not NOT_SENT]
                if self.failing is None:
                    release_streak()
                rest += list(zip(outcomes, stored_items))
                if rest and not isinstance(exc, RunStopped):
                    try:
                        self.store([o for o, _ in rest], [i for _, i in rest])
                    except Exception:  # noqa: BLE001 - the journal holds them for the next run
                        pass
                raise
        if error is None and self.cancelled:
            raise TaskCancelled()
        if self.stopped is not None:
            raise self.stopped
        if self.failing is not None:
            raise self.failing
        return list(queue)


class _NotSent:
    def __repr__(self) -> str:
        return "<not sent>"


NOT_SENT: Any = _NotSent()

__all__ = ["FAILING_SERVER_CLIPS", "NOT_SENT", "Call", "Campaign", "GaveUp", "Pacer", "QuestionKind", "RetryPolicy", "is_disk_full",
           "is_lock_timeout", "write_waiting"]
