"""A gate that holds a job in its worker thread until the test cancels it: "cancel midway" without timing.

Wrapped around a function the job calls per item (a clip's lookup, a fit's computation), the
gate lets the calls through until ``when(*args)`` matches, then sets ``reached`` and blocks
that call until the job's task context says it was cancelled. The test waits for ``reached``,
cancels (the Cancel button, a window close), and the job then finishes the item in flight and
stops at its next check, exactly there, whatever the threads' timing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from workbench.tasks import TaskContext


class CancelGate:
    """Install with ``monkeypatch.setattr(module, "name", CancelGate(module.name, when, task))``.

    ``task`` returns the running job's context (read when the gate closes: the context is made
    when the job starts).
    """

    def __init__(self, func: Callable[..., Any], when: Callable[..., bool],
                 task: Callable[[], TaskContext | None], timeout_s: float = 30.0) -> None:
        self.func, self.when, self.task, self.timeout_s = func, when, task, timeout_s
        self.reached = threading.Event()
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if not self.reached.is_set() and self.when(*args, **kwargs):
            self.reached.set()
            deadline = time.monotonic() + self.timeout_s
            while not self._cancelled():
                if time.monotonic() > deadline:
                    raise AssertionError("the gate was never released: the job was not cancelled")
                time.sleep(0.005)
        return self.func(*args, **kwargs)

    def _cancelled(self) -> bool:
        context = self.task()
        return context is not None and context.cancelled
