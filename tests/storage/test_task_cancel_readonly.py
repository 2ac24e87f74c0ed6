"""The long jobs that store nothing, cancelled midway: they stop at once with TaskCancelled, and no
output (a report folder, a sweep's files) is left half-written; an earlier report stays as it was.
Also Ctrl-C in the study commands (sensitivity, report, judge-error-modes), which now run through
`cli.context.run_task`: it cancels the job instead of killing it, and the command exits 130.

The workbench functions are cancelled from a listener or from the work itself; the commands by a
Ctrl-C (SIGINT) sent from inside the job, as tests/core/test_tasks.py does.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from storage import Store
from tests.storage.studies_project import ALM, populate
from workbench.curation import model
from workbench.errors import InputError
from workbench.studies import sensitivity
from workbench.studies.report import REPORT, write_report
from workbench.tasks import TaskCancelled, TaskContext, TaskEvent

GRID = ([500.0, 1000.0, 3000.0], [0.0, 0.05, 0.3], [0.0, 0.2])  # 3 × 3 refits


@pytest.fixture(scope="module")
def studies(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from storage import open_store

    base = tmp_path_factory.mktemp("cancel-studies")
    store = open_store(base / "project.sqlite")
    populate(store)
    yield store, str(base / "project.sqlite")
    store.dispose()


def _count_refits(monkeypatch: pytest.MonkeyPatch, then: Callable[[int], None]) -> list[int]:
    """Count the curation refits (one per γ × α of a sweep); ``then(n)`` runs after the n-th."""
    calls: list[int] = []
    fit = model.fit_categories

    def counted(*args: Any, **kwargs: Any) -> Any:
        result = fit(*args, **kwargs)
        calls.append(1)
        then(len(calls))
        return result

    monkeypatch.setattr(model, "fit_categories", counted)
    return calls


def ctrl_c() -> None:
    """Press Ctrl-C inside a command's job; refuse when it would kill the command instead of cancelling it."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        raise AssertionError("Ctrl-C is not handled by cli.context.run_task here: it would kill the command")
    os.kill(os.getpid(), signal.SIGINT)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --------------------------------------------------------------------------- events eval


def test_events_eval_stops_between_scored_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file is one item once scored (the scoring is the long part, reading is quick): a cancel
    after the first stops before the second is scored, which here would fail (no distances)."""
    from workbench.events import files

    ref, pred = tmp_path / "ref", tmp_path / "pred"
    ref.mkdir()
    pred.mkdir()
    for name in ("a", "b", "c"):
        (ref / f"{name}.csv").write_text("0,0,0,10,0,100\n1,0,0,10,0,100\n")
        (pred / f"{name}.csv").write_text("0,0,0,14,0,120\n" if name == "a" else "0,0,0,14,0\n")
    with pytest.raises(InputError, match="b.csv: the prediction has no distance column"):
        files.evaluate_folders(ref, pred)  # uncancelled, scoring reaches b.csv
    reads: list[str] = []
    reader = files.read_metadata
    monkeypatch.setattr(files, "read_metadata", lambda path, **kw: reads.append(path.name) or reader(path, **kw))
    task = TaskContext()
    seen: list[tuple[str, int]] = []

    def listen(event: TaskEvent) -> None:
        if event.kind == "item" and event.item is not None:
            seen.append((event.item.key, len(reads)))
            task.cancel()

    task.subscribe(listen)
    with pytest.raises(TaskCancelled):
        files.evaluate_folders(ref, pred, task=task)
    # a.csv is done when it is scored: every file was read (and checked) before the scoring began
    assert seen == [("a.csv", 6)] and (task.done, task.total) == (1, 3)


# --------------------------------------------------------------------------- sensitivity sweep


def test_sensitivity_sweep_stops_between_refits(studies, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    store, _ = studies
    inputs, _ = sensitivity.load_sweep_inputs(store)
    task = TaskContext()

    def listen(event: TaskEvent) -> None:
        if event.kind == "progress" and event.done >= 2:
            task.cancel()

    task.subscribe(listen)
    refits = _count_refits(monkeypatch, lambda n: None)
    with pytest.raises(TaskCancelled):
        sensitivity.sweep(inputs, *GRID, task=task)
    assert len(refits) == 2 and (task.done, task.total) == (2, 9)


def test_sensitivity_command_cancelled_writes_no_files(studies, monkeypatch, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    _, db = studies
    refits = _count_refits(monkeypatch, lambda n: ctrl_c() if n == 2 else None)
    out = tmp_path / "sweep"
    before = signal.getsignal(signal.SIGINT)
    rc = main(["--db", db, "study", "sensitivity", "--gamma", "500,1000,3000", "--alpha", "0,0.05,0.3",
               "--theta", "0,0.2", "--out", str(out)])
    assert rc == 130 and len(refits) == 2
    assert not out.exists()
    assert "cancelled after 2 of 9" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before


# --------------------------------------------------------------------------- study report


def test_study_report_cancelled_in_its_sweep_writes_nothing(studies, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The sweep inside the report honours the report's cancel: it stops after the refit in flight."""
    store, _ = studies
    task = TaskContext()
    refits = _count_refits(monkeypatch, lambda n: task.cancel() if n == 2 else None)
    out = tmp_path / "report"
    with pytest.raises(TaskCancelled):
        write_report(store, out, bootstrap=10, sweep_grid=GRID, alm_model=ALM, task=task)
    assert len(refits) == 2  # not all nine: the report does not wait for the whole sweep
    assert _leftovers(tmp_path) == []  # neither the folder nor its staging copy


def test_study_report_cancelled_before_writing_keeps_the_earlier_report(studies, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store, _ = studies
    out = tmp_path / "report"
    write_report(store, out, bootstrap=10, sweep_grid=GRID, alm_model=ALM)
    earlier = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    task = TaskContext()
    # Five of six steps done: everything is computed, the "write" step is next.
    task.subscribe(lambda event: task.cancel() if event.kind == "progress" and event.done == 5 else None)
    with pytest.raises(TaskCancelled):
        write_report(store, out, bootstrap=10, sweep_grid=GRID, alm_model=ALM, replace=True, task=task)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == earlier
    assert _leftovers(tmp_path) == ["report"]


def test_study_report_failing_while_writing_leaves_no_staging_folder(studies, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A failure after the files have started (a figure that cannot be drawn, a full disk) leaves the
    earlier report as it was and no hidden half-written copy beside it."""
    from workbench.studies import figures

    store, _ = studies
    out = tmp_path / "report"
    write_report(store, out, bootstrap=10, sweep_grid=GRID, alm_model=ALM)
    earlier = (out / REPORT).read_bytes()

    def broken(*args: Any, **kwargs: Any) -> bytes:
        raise OSError("No space left on device")

    monkeypatch.setattr(figures, "sensitivity_heatmaps", broken)
    from workbench.outputs import OutputError  # a full disk is one handled line naming the report folder

    with pytest.raises(OutputError, match="No space"):
        write_report(store, out, bootstrap=10, sweep_grid=GRID, alm_model=ALM, replace=True)
    assert (out / REPORT).read_bytes() == earlier
    assert _leftovers(tmp_path) == ["report"]


def test_study_report_command_cancelled_writes_nothing(studies, monkeypatch, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    _, db = studies
    refits = _count_refits(monkeypatch, lambda n: ctrl_c() if n == 1 else None)
    out = tmp_path / "report"
    rc = main(["--db", db, "study", "report", "--out", str(out), "--bootstrap", "10"])
    assert rc == 130 and len(refits) == 1
    assert _leftovers(tmp_path) == [] and not (out / REPORT).exists()
    assert "run it again" in capsys.readouterr().err


# --------------------------------------------------------------------------- judge-error-modes command


def test_judge_error_modes_command_ctrl_c_keeps_the_answers(tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Ctrl-C lets the answer in flight be stored, then exits 130; a re-run asks only the rest."""
    from sqlmodel import select

    from storage import open_store
    from storage.models import JudgeErrorMode
    from tests.support.fake_anthropic import FakeAnthropicAPI
    from workbench.attribution import providers

    key = "sk-ant-cancel-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    store: Store = open_store(tmp_path / "judged.sqlite")
    populate(store)
    make = providers.make_provider
    asked = 0

    def make_provider(*args: Any, **kwargs: Any) -> Any:
        provider = make(*args, **kwargs)
        complete = provider.complete

        def ctrl_c_on_the_second(request: Any) -> Any:
            nonlocal asked
            asked += 1
            if asked == 2:
                ctrl_c()  # while the second request is in flight
            return complete(request)

        provider.complete = ctrl_c_on_the_second
        return provider

    monkeypatch.setattr(providers, "make_provider", make_provider)
    command = ["--db", str(tmp_path / "judged.sqlite"), "--json", "study", "judge-error-modes", "--alm", ALM,
               "--judges", "opus", "--limit", "4"]
    with FakeAnthropicAPI(expected_key=key) as api:
        assert main([*command, "--base-url", api.base_url]) == 130
        assert len(api.message_requests()) == 2
        with store.session() as s:
            assert len(s.exec(select(JudgeErrorMode)).all()) == 2  # the answer in flight is stored
        monkeypatch.setattr(providers, "make_provider", make)
        capsys.readouterr()
        assert main([*command, "--base-url", api.base_url]) == 0
        assert len(api.message_requests()) == 4  # only the two not answered are asked
    store.dispose()
