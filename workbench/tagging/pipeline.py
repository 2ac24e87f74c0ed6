"""The batched tagging pipeline: decoding processes → one tagger (windows of many clips per pass) → the caller.

Three stages overlap:

* decoding and resampling in ``workers`` processes (spawned: they import only
  :mod:`workbench.tagging.decode`, no torch), a bounded number of clips ahead;
* the network in a thread of this process (:func:`workbench.tagging.batched.tag_many`; on a GPU the
  waveforms go through pinned memory with non-blocking copies);
* the caller, which stores each result as it comes (on SQLite a commit per clip), while the next
  passes run.

What comes out is what the per-clip path gives: ``(item, TagResult, '')`` or ``(item, None, why)``
per clip, in input order for the tagged ones (a clip whose decoding failed comes out as soon as
that is known).
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Generic, TypeVar

import numpy as np

from workbench.tagging.batched import tag_many
from workbench.tagging.decode import decode_or_error
from workbench.tagging.inference import AudioTagger, TagResult

J = TypeVar("J")
_DONE = object()
# Results waiting for the caller; beyond this the network waits (memory stays bounded).
_RESULTS_AHEAD = 64


class _Decoder(Generic[J]):
    """Decodes ``(item, path)`` pairs in spawned processes, ``2 × workers`` ahead, in order."""

    def __init__(self, items: Sequence[tuple[J, str]], workers: int) -> None:
        self.items = deque(items)
        self.workers = workers
        self.pool = self._new_pool()
        self.pending: deque[tuple[J, str, Future]] = deque()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))

    def _fill(self) -> None:
        while self.items and len(self.pending) < 2 * self.workers:
            item, path = self.items.popleft()
            self.pending.append((item, path, self.pool.submit(decode_or_error, path)))

    def __iter__(self) -> Iterator[tuple[J, np.ndarray | None, str]]:
        try:
            self._fill()
            while self.pending:
                item, path, future = self.pending.popleft()
                try:
                    samples, error = future.result()
                except BrokenProcessPool:
                    # A decoder died (a crash in a native library): this clip fails, the rest are
                    # decoded again in a fresh pool.
                    samples, error = None, "the decoding process died while reading this recording"
                    self._restart()
                yield item, samples, error
                self._fill()
        finally:
            self.pool.shutdown(cancel_futures=True)

    def _restart(self) -> None:
        self.pool.shutdown(cancel_futures=True)
        self.pool = self._new_pool()
        retry = [(item, path) for item, path, _ in self.pending]
        self.pending.clear()
        self.items.extendleft(reversed(retry))


def batched_outcomes(items: Sequence[tuple[J, str]], tagger: AudioTagger, *, workers: int,
                     timeline: bool = True) -> Iterator[tuple[J, TagResult | None, str]]:
    """Tag ``(item, audio path)`` pairs through the pipeline; see the module rules."""
    results: queue.Queue = queue.Queue(maxsize=_RESULTS_AHEAD)
    stop = threading.Event()

    def put(value: object) -> bool:
        while not stop.is_set():
            try:
                results.put(value, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def decoded() -> Iterator[tuple[J, np.ndarray]]:
        source = iter(_Decoder(items, workers))
        try:
            for item, samples, error in source:
                if stop.is_set():
                    return
                if samples is None:
                    put((item, None, error))
                else:
                    yield item, samples
        finally:
            source.close()  # type: ignore[attr-defined] - a generator: shuts the decoding processes down

    def network() -> None:
        inputs = decoded()
        outcomes = tag_many(tagger, inputs, timeline=timeline)
        try:
            for item, result in outcomes:
                outcome = (item, None, str(result)) if isinstance(result, ValueError) else (item, result, "")
                if not put(outcome):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread, raised there
            put(exc)
        finally:
            outcomes.close()
            inputs.close()
            put(_DONE)

    worker = threading.Thread(target=network, name="aglw-tagger-gpu", daemon=True)
    worker.start()
    try:
        while True:
            value = results.get()
            if value is _DONE:
                return
            if isinstance(value, BaseException):
                raise value
            yield value
    finally:
        stop.set()
        worker.join()
