"""The one batch driver: a question kind's requests submitted as one provider batch, collected later.

Gemini's Batch API (ALM runs, :mod:`workbench.alm.batch`) and Anthropic's Message Batches (judges,
:mod:`workbench.attribution.batch`) are two adapters of this protocol; they keep only what the
provider and the kind make different (uploads, the request format, reading a result, storing).

**Submitting** (:func:`submit`): the request map (custom id → what was asked) is recorded durably
*before* the batch is created, so a crash right after the provider accepted it leaves a record,
never an untracked paid batch; then the batch is created (one call: whole or not at all) and its id
recorded. A failed creation is recorded as such and re-raised.

**Collecting** (:func:`collect`), safe to repeat after a crash or a cancel:

1. ask the batch's state; a batch still running is left for later;
2. a batch that ended badly (failed, expired, cancelled) leaves each request stored as a failure,
   to be asked again by the next run;
3. otherwise read the results and match them on the custom id (unknown or repeated ids are
   logged and ignored); requests already stored by an earlier collect are skipped;
4. each result is journaled (:mod:`workbench.llm.journal`, fsynced) before it is read, as the
   synchronous engine does, and so is a paid follow-up request a kind sends while reading it
   (the judges' one interactive retry, :meth:`Replies.ask`): a collect killed midway stores those
   from the journal next time and buys nothing again;
5. the kind stores the outcomes on the calling thread (``group`` results per transaction, waiting
   while another program holds the project's lock) and reports them through the task protocol
   (:mod:`workbench.tasks`); once everything is stored the batch is marked collected, before the
   last group is reported, so a cancel there leaves nothing to collect again.

Run-level faults are the engine's vocabulary (:mod:`workbench.llm.errors`): a provider's
:class:`~workbench.llm.errors.RunStopped` (401/403/404) propagates with its one line; what was
stored stays stored and the batch stays submitted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from workbench.llm.engine import write_waiting
from workbench.llm.errors import RunStopped
from workbench.llm.journal import Journal
from workbench.tasks import TaskContext

if TYPE_CHECKING:
    from storage import Store

log = logging.getLogger(__name__)

Request = TypeVar("Request")
Outcome = TypeVar("Outcome")
Reply = TypeVar("Reply")

NO_RESULT = "the batch ended without a result for this request"


@dataclass(frozen=True)
class BatchState:
    """Where a submitted batch stands.

    ``ended``: no request is processing any more. ``failed``: the batch ended badly, in words
    that become each request's stored failure ("the batch ended expired; ..."). ``words``: a
    running batch in words, for the caller's "still running" line.
    """

    ended: bool
    failed: str | None = None
    words: str = ""


class BatchSubmission(Protocol[Request]):
    """What submitting needs from an adapter: the provider's ``submit`` and three records."""

    def record(self, request_map: dict[str, dict[str, Any]]) -> None:
        """Store the request map durably (the batch is not created yet)."""
        ...

    def submit(self, requests: list[tuple[str, Request]]) -> str:
        """Create the batch at the provider; returns its id."""
        ...

    def submitted(self, batch_id: str) -> None:
        """Record the created batch's id: it is now collectable."""
        ...

    def not_submitted(self, exc: BaseException) -> None:
        """Record that no batch was created (``exc`` is re-raised afterwards)."""
        ...


class BatchCollection(Protocol[Outcome]):
    """One submitted batch as a question kind: the provider's ``state``/``results`` and the kind's steps."""

    batch_id: str
    group: int | None  # results stored per transaction (None: the whole batch in one)

    def state(self) -> BatchState:
        """Ask the provider where the batch stands."""
        ...

    def results(self) -> Iterable[tuple[str, Any]]:
        """The ended batch's results as (custom id, provider result), in the provider's order."""
        ...

    def request_map(self) -> dict[str, dict[str, Any]]:
        """The request map recorded before submitting (custom id → what was asked)."""
        ...

    def stored(self) -> set[str]:
        """The custom ids whose result the project already holds."""
        ...

    def record(self, custom_id: str, result: Any) -> dict[str, Any]:
        """A provider result as plain values (its journal entry)."""
        ...

    def outcome(self, custom_id: str, replies: Replies) -> Outcome:
        """The outcome of a request from its journaled result (``replies.first``)."""
        ...

    def failed(self, custom_id: str, reason: str) -> Outcome:
        """A request without a usable result (the batch ended badly, or holds none for it)."""
        ...

    def store(self, outcomes: list[Outcome]) -> None:
        """Write the outcomes in one transaction (may raise a lock time-out: it is tried again)."""
        ...

    def announce(self, outcomes: list[Outcome], task: TaskContext) -> None:
        """Report the stored outcomes to ``task`` (may raise ``TaskCancelled``)."""
        ...

    def finish(self) -> None:
        """Every request is stored: mark the batch collected."""
        ...


def submit(kind: BatchSubmission[Request], requests: list[tuple[str, Request, dict[str, Any]]], *,
           what: str, task: TaskContext) -> str:
    """Submit ``requests`` (custom id, provider request, request-map entry) as one batch; returns its id.

    Raises
    ------
    RunStopped
        The provider refused the key or the model (recorded as not submitted first).
    Exception
        Any other failure to record the map or create the batch, recorded as not submitted first.
    """
    # Keyed by custom id: a batch holding one id twice is rejected whole by the APIs.
    unique = {custom_id: (request, entry) for custom_id, request, entry in requests}
    try:
        kind.record({custom_id: entry for custom_id, (_, entry) in unique.items()})
        batch_id = kind.submit([(custom_id, request) for custom_id, (request, _) in unique.items()])
    except Exception as exc:
        kind.not_submitted(exc)
        raise
    # The batch is paid for now: its id is recorded even if another program holds the project's lock.
    write_waiting(lambda: kind.submitted(batch_id), task=task, what=f"{what}: batch {batch_id}")
    return batch_id


class Replies:
    """The journaled replies of one request of a batch: its result, then any follow-up a kind paid for."""

    def __init__(self, journal: Journal, custom_id: str, entries: list[dict[str, Any]]) -> None:
        self._journal, self.custom_id, self.entries = journal, custom_id, entries
        self._read = 1

    @property
    def first(self) -> dict[str, Any]:
        """The batch's result, as :meth:`BatchCollection.record` wrote it."""
        return self.entries[0]

    def ask(self, send: Callable[[], Reply], record: Callable[[Reply], dict[str, Any]],
            read: Callable[[dict[str, Any]], Reply]) -> Reply:
        """A paid follow-up request (an interactive retry): the one an earlier collect journaled is
        read back with ``read`` and not sent again; otherwise ``send()``'s reply is journaled
        (``record``) before it is returned. ``send``'s exceptions propagate (nothing is journaled)."""
        if self._read < len(self.entries):
            entry = self.entries[self._read]
            self._read += 1
            return read(entry)
        reply = send()
        entry = record(reply)
        _keep(self._journal, self.custom_id, entry)
        self.entries.append(entry)
        self._read += 1
        return reply


def _keep(journal: Journal, key: str, entry: dict[str, Any]) -> None:
    try:
        journal.append(key, entry)
    except OSError as exc:
        raise RunStopped(f"the journal {journal.path} cannot be written ({exc.strerror or exc}); the results "
                         "stored so far stay, the batch stays submitted: collect again once it can be written") from None


def collect(kind: BatchCollection[Outcome], store: Store, *, what: str, task: TaskContext) -> BatchState:
    """Store what the ended batch ``kind`` holds and is not stored yet; returns the batch's state.

    ``what`` names the run in messages ("model 'x'", "judge opus"). A batch still running is left
    as it is (``state.ended`` is False). Everything raised propagates after the results stored so
    far are committed: ``RunStopped`` (one line), ``TaskCancelled`` (the batch stays submitted).
    """
    state = kind.state()
    if not state.ended:
        return state
    request_map = kind.request_map()
    stored = kind.stored()
    pending = [custom_id for custom_id in request_map if custom_id not in stored]
    task.set_total(task.total + len(pending))
    # One journal per batch: a second collect of the same batch while this one runs is refused.
    journal = Journal.open(store, "batch", kind.batch_id, f"the collect of batch {kind.batch_id}")
    try:
        kept = journal.pending()
        journal.mark_stored([key for key in kept if key in stored])  # their "stored" note was lost
        results: dict[str, Any] = {}
        if state.failed is None:
            for custom_id, result in kind.results():
                if custom_id in stored:
                    continue
                if custom_id not in request_map or custom_id in results:
                    log.warning("batch %s: ignoring a result with an unknown or repeated custom_id %s",
                                kind.batch_id, custom_id)
                    continue
                results[custom_id] = result
        order = [custom_id for custom_id in results] + [custom_id for custom_id in pending if custom_id not in results]
        size = kind.group or max(1, len(order))
        if not order:
            kind.finish()
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            outcomes = [_outcome(kind, journal, custom_id, state, results, kept) for custom_id in chunk]
            write_waiting(lambda: kind.store(outcomes), task=task,
                          what=f"{what}: {len(outcomes)} result(s) of batch {kind.batch_id}", kept=str(journal.path))
            journal.mark_stored(chunk)
            if start + size >= len(order):
                kind.finish()
            kind.announce(outcomes, task)
    finally:
        journal.close()
    return state


def _outcome(kind: BatchCollection[Outcome], journal: Journal, custom_id: str, state: BatchState,
             results: dict[str, Any], kept: dict[str, list[dict[str, Any]]]) -> Outcome:
    if state.failed is not None:
        return kind.failed(custom_id, state.failed)
    entries = kept.get(custom_id)
    if not entries:
        if custom_id not in results:
            return kind.failed(custom_id, NO_RESULT)
        # Journaled before it is read, as every paid reply is.
        entries = [kind.record(custom_id, results[custom_id])]
        _keep(journal, custom_id, entries[0])
    return kind.outcome(custom_id, Replies(journal, custom_id, list(entries)))


__all__ = ["NO_RESULT", "BatchCollection", "BatchState", "BatchSubmission", "Replies", "collect", "submit"]
