"""The one task protocol (workbench.tasks) and its CLI renderer (cli.context.run_task)."""

from __future__ import annotations

import os
import signal
import threading

import pytest
import typer

from cli.context import EXIT_CANCELLED, run_task as render_task
from workbench.errors import InputError
from workbench.tasks import ItemOutcome, TaskCancelled, TaskContext, TaskEvent, run_task


def _job(keys: list[str], failing: frozenset[str] = frozenset()):  # type: ignore[no-untyped-def]
    """A job that 'stores' each key (in ``stored``) before reporting it done."""
    stored: list[str] = []

    def job(task: TaskContext) -> str:
        task.set_total(len(keys))
        for key in keys:
            if key in stored:  # resume: what is stored is skipped
                task.advance()
                continue
            stored.append(key)
            task.item_done(key, key not in failing, f"{key} is broken" if key in failing else "")
        return f"{len(stored)} stored"

    return job, stored


def test_events_counts_and_failures_are_reported_in_order() -> None:
    events: list[TaskEvent] = []
    job, stored = _job(["a", "b", "c"], failing=frozenset({"b"}))
    result = run_task("count", job, TaskContext(events.append))
    assert result.status == "done" and result.message == "3 stored" and result.value == "3 stored"
    assert (result.done, result.total) == (3, 3)
    assert result.failures == [ItemOutcome("b", False, "b is broken")]
    assert not result.ok  # finished, but an item failed
    assert [(e.kind, e.done, e.total) for e in events] == [("progress", 0, 3), ("item", 1, 3), ("item", 2, 3), ("item", 3, 3)]
    assert [e.item.key for e in events if e.item] == ["a", "b", "c"] and stored == ["a", "b", "c"]


def test_cancel_stops_after_the_item_in_flight_and_a_rerun_resumes() -> None:
    job, stored = _job([f"k{i}" for i in range(10)])
    context = TaskContext()
    context.subscribe(lambda event: context.cancel() if event.kind == "item" and event.done == 4 else None)
    result = run_task("count", job, context)
    assert result.status == "cancelled" and "run it again to resume" in result.message
    assert stored == ["k0", "k1", "k2", "k3"] and (result.done, result.total) == (4, 10)
    again = run_task("count", job)
    assert again.status == "done" and again.ok and stored == [f"k{i}" for i in range(10)]


def test_failed_job_keeps_its_error_and_never_raises() -> None:
    def job(task: TaskContext) -> None:
        task.set_total(2)
        task.item_done("first")
        raise InputError("data.csv, line 3: bad field")

    result = run_task("import", job)
    assert result.status == "failed" and result.message == "import: data.csv, line 3: bad field"
    assert isinstance(result.error, InputError) and result.done == 1

    def broken(task: TaskContext) -> None:
        raise ZeroDivisionError("division by zero")

    crashed = run_task("maths", broken)
    assert crashed.status == "failed" and "ZeroDivisionError" in crashed.message


def test_check_cancel_and_unsubscribe() -> None:
    context = TaskContext()
    seen: list[str] = []

    def listener(event: TaskEvent) -> None:
        seen.append(event.kind)

    context.subscribe(listener)
    context.note("hello")
    context.unsubscribe(listener)
    context.advance()
    assert seen == ["note"]
    context.check_cancel()  # nothing pending
    context.cancel()
    assert context.cancelled
    with pytest.raises(TaskCancelled):
        context.check_cancel()


def test_reports_from_many_threads_are_counted_once_each() -> None:
    context = TaskContext()
    context.set_total(800)

    def work(offset: int) -> None:
        for i in range(100):
            context.item_done(f"{offset}-{i}", ok=i % 10 != 0, error="tenth")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert context.done == 800 and context.succeeded == 720 and len(context.failures) == 80


# --------------------------------------------------------------------------- the CLI renderer


def test_cli_renderer_prints_failures_on_stderr_and_returns_the_result(capsys) -> None:  # type: ignore[no-untyped-def]
    job, _ = _job(["a", "b"], failing=frozenset({"a"}))
    result = render_task("counting", job)
    captured = capsys.readouterr()
    assert result.value == "2 stored" and [f.key for f in result.failures] == ["a"]
    assert "a: a is broken" in captured.err and captured.out == ""


def test_cli_renderer_reraises_the_job_error() -> None:
    def job(task: TaskContext) -> None:
        raise InputError("file.csv, line 2: no key; add one")

    with pytest.raises(InputError, match="line 2"):
        render_task("importing", job)


def test_ctrl_c_cancels_the_token_finishes_the_item_and_exits_130(capsys) -> None:  # type: ignore[no-untyped-def]
    stored: list[int] = []

    def job(task: TaskContext) -> None:
        task.set_total(5)
        for item in range(5):
            if item == 2:
                # Ctrl-C while item 2 is in flight: it is finished and stored all the same.
                os.kill(os.getpid(), signal.SIGINT)
            stored.append(item)
            task.item_done(str(item))

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(typer.Exit) as stopped:
        render_task("counting", job)
    assert stopped.value.exit_code == EXIT_CANCELLED == 130
    assert stored == [0, 1, 2]
    err = capsys.readouterr().err
    assert "cancelled after 3 of 5" in err and "run it again to resume" in err
    assert signal.getsignal(signal.SIGINT) is before  # the handler is put back
