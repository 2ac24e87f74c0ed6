"""Jobs panel: judging and tagging started from the GUI can be cancelled and resumed; errors per clip are shown."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import select

from storage.models import JudgeRun, Judgment, TaggerRun, TagStatus
from tests.storage.test_attribution_service import NAMES, project  # noqa: F401 - fixture
from tests.storage.test_curation_fixtures import WORKED_EXAMPLE, build_project
from tests.storage.test_tagging_service import checkpoint_file  # noqa: F401 - fixture
from tests.storage.test_tagging_service import project as tagging_project  # noqa: F401 - fixture
from tests.core.test_tagging_ontology import write_small_ontology
from ui.cockpit.jobs import JobsPanel, fit_job, judge_job, judging_cost_text, tag_job
from workbench.attribution.config import load_judges
from workbench.curation.model import FitParameters
from workbench.tagging.assets import load_checkpoint
from workbench.tagging.ontology import load_ontology


def _cancel_after_first(panel: JobsPanel) -> list[str]:
    seen: list[str] = []

    def on_clip(key: str, _ok: bool, _error: str) -> None:
        seen.append(key)
        if len(seen) == 1:
            panel.cancel()

    panel.clipFinished.connect(on_clip)
    return seen


def test_judging_job_shows_cost_first_cancels_resumes_and_lists_errors(qtbot, project) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    store, api = project
    config = load_judges()
    cost = judging_cost_text(store, config, judge_names=["sonnet"], base_url=api.base_url, names=NAMES)
    assert "sonnet: 3 requests" in cost and "Total: 3 requests" in cost
    assert api.message_requests() == []  # the dry run sent nothing

    panel = JobsPanel(store, force_sync=True)
    qtbot.addWidget(panel)
    api.script.extend(["ok", "ok", "missing_id", "missing_id"])
    spec = judge_job(store, config, judge_names=["sonnet"], base_url=api.base_url, names=NAMES)
    seen = _cancel_after_first(panel)
    with qtbot.waitSignal(panel.finished) as ended:
        panel.start(spec)
    assert ended.args[0] == "cancelled" and seen == ["clip0"]
    assert panel.resume_button.isEnabled() and "resume" in panel.status.text()
    with store.session() as s:
        assert {j.clip_id for j in s.exec(select(Judgment))} == {1}
        assert s.exec(select(JudgeRun.status)).all() == ["cancelled"]

    seen.append("resumed")  # no second cancel
    with qtbot.waitSignal(panel.finished) as ended:
        assert panel.resume()
    assert ended.args[0] == "done" and "1 answered before" in ended.args[1]
    assert seen[1:] == ["resumed", "clip1", "clip2"]
    errors = panel.error_rows()
    assert len(errors) == 1 and errors[0][0] == "clip2" and "missing category ids" in errors[0][1]
    assert panel.bar.value() == panel.bar.maximum() == 2
    with store.session() as s:
        assert s.exec(select(JudgeRun.status).order_by(JudgeRun.id)).all() == ["cancelled", "done"]


def test_tagging_job_cancel_and_resume(qtbot, tagging_project, checkpoint_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    ontology = load_ontology(*write_small_ontology(tmp_path / "onto"))
    spec = tag_job(tagging_project, workers=1,
                   load_model=lambda: (load_checkpoint(checkpoint_file, "mn01", name="mn01_as"), ontology.classes))
    panel = JobsPanel(tagging_project, force_sync=True)
    qtbot.addWidget(panel)
    cancel_at_first_clip = panel.bar.valueChanged.connect(lambda value: panel.cancel() if value == 1 else None)
    with qtbot.waitSignal(panel.finished) as ended:
        panel.start(spec)
    assert ended.args[0] == "cancelled"
    panel.bar.valueChanged.disconnect(cancel_at_first_clip)
    with tagging_project.session() as s:
        assert s.exec(select(TaggerRun.status)).all() == ["cancelled"]
        assert len(s.exec(select(TagStatus)).all()) == 1
    with qtbot.waitSignal(panel.finished) as ended:
        panel.resume()
    assert ended.args[0] == "done" and "1 done before" in ended.args[1] and "2 failed" in ended.args[1]
    assert {key for key, _ in panel.error_rows()} == {"gone", "escape"}
    with tagging_project.session() as s:
        assert s.exec(select(TaggerRun.status)).all() == ["done"]
        assert len(s.exec(select(TagStatus)).all()) == 4


def test_fit_job_runs_in_a_worker_thread(qtbot, store) -> None:  # type: ignore[no-untyped-def]
    build_project(store, WORKED_EXAMPLE)
    panel = JobsPanel(store)
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.finished, timeout=20_000) as ended:
        assert panel.start(fit_job(store, FitParameters(n_min=1)))
        assert panel.running and not panel.start(fit_job(store, FitParameters()))
    assert ended.args[0] == "done" and ended.args[1].startswith("stored curation run 1:")
    assert not panel.running and panel.wait()


def test_a_job_in_the_worker_thread_lists_failed_items_and_stops_on_cancel(qtbot, store) -> None:  # type: ignore[no-untyped-def]
    import threading

    from ui.cockpit.jobs import JobSpec

    panel = JobsPanel(store)
    qtbot.addWidget(panel)
    third = threading.Event()
    stored: list[str] = []

    def run(task) -> str:  # type: ignore[no-untyped-def]
        task.set_total(1000)
        for item in range(1000):
            stored.append(f"k{item}")
            task.item_done(f"k{item}", item % 2 == 0, f"item {item} is odd")
            if item == 2:
                third.set()
            threading.Event().wait(0.005)
        return "all done"

    with qtbot.waitSignal(panel.finished, timeout=20_000) as ended:
        assert panel.start(JobSpec("count", run))
        assert third.wait(10)
        panel.cancel()
    assert ended.args[0] == "cancelled" and "run it again to resume" in ended.args[1]
    assert 3 <= len(stored) < 1000 and panel.last_result is not None
    # every failure the job reported crossed to the GUI thread, in order
    assert panel.error_rows() == [(f.key, f.error) for f in panel.last_result.failures]
    assert panel.error_rows()[0] == ("k1", "item 1 is odd")
    assert panel.bar.value() == len(stored) and panel.resume_button.isEnabled()
