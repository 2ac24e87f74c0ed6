"""Asking an ALM from the cockpit: the estimate before *Run*, the job against the fake server with
progress, cost and errors per clip, and the starter in the jobs panel using the browser's clips."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialog
from sqlmodel import select

from storage.models import AlmRun, Prediction
from tests.storage.alm_project import make_project, write_alm_config
from tests.support.fake_alm import FakeOpenAIServer
from ui.cockpit.alm_job import AlmRunDialog, alm_job
from ui.cockpit.jobs import JobsPanel


def test_estimate_first_then_the_job_stores_answers_with_cost(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_alm_config(timeout=2.0)
    project = make_project(tmp_path, n=4)
    with project.store.session() as s:
        from storage.models import Clip

        ids = [c.id for c in s.exec(select(Clip).order_by(Clip.id))][:3]
    with FakeOpenAIServer(models=["fake-audio-model"]) as server:
        for key in project.keys:
            server.register_audio(project.audio(key), key)
        server.behave(project.keys[2], "always_fail")
        dialog = AlmRunDialog(project.store, ids)
        qtbot.addWidget(dialog)
        dialog.provider.setCurrentText("openai-compatible")
        dialog.model.setText("gui-omni")
        dialog.api_model.setText("fake-audio-model")
        dialog.base_url.setText(server.base_url)
        assert not dialog.run_button.isEnabled()  # no run before an estimate
        dialog.estimate_button.click()
        assert "3 request(s) for 3 clip(s)" in dialog.estimate_text.text()
        assert "Estimated cost $" in dialog.estimate_text.text()
        assert dialog.run_button.isEnabled() and not server.requests  # the estimate sent nothing
        dialog.concurrency.setValue(2)
        assert not dialog.run_button.isEnabled()  # changed settings need a new estimate
        assert dialog.estimate()

        panel = JobsPanel(project.store, force_sync=True)
        qtbot.addWidget(panel)
        notes: list[str] = []
        panel.clipFinished.connect(lambda key, ok, error: notes.append(key))
        with qtbot.waitSignal(panel.finished) as ended:
            panel.start(alm_job(project.store, dialog.options()))
        status, message = ended.args
        assert status == "done" and "gui-omni: 2 answered" in message and "1 failed" in message and "cost $" in message
        assert sorted(notes) == sorted(project.keys[:3])
        assert [row[0] for row in panel.error_rows()] == [project.keys[2]]
        with project.store.session() as s:
            stored = s.exec(select(Prediction.question_id).join(AlmRun).where(AlmRun.model == "gui-omni")).all()
        assert sorted(stored) == sorted(project.keys[:2])
        requests = len(server.requests)
        with qtbot.waitSignal(panel.finished):
            assert panel.resume()  # the failed clip again, nothing answered is re-sent
        assert len(server.requests) == requests + 4  # the always-failing clip: 1 + 3 retries
    project.store.dispose()


def test_the_jobs_panel_starter_opens_the_dialog_on_the_browser_clips(make_window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    shown: list[int] = []

    def fake_exec(dialog: AlmRunDialog) -> int:
        shown.append(len(dialog.clip_ids))
        return QDialog.DialogCode.Rejected

    monkeypatch.setattr(AlmRunDialog, "exec", fake_exec)
    button = next(b for b in window.cockpit.jobs._starters if b.text().startswith("Ask an ALM"))
    button.click()
    assert shown == [len(window.browser.visible_clip_ids())] and shown[0] > 0
    assert not window.cockpit.jobs.running


def test_answers_reach_the_leaderboard_and_the_review_while_the_run_goes_on(make_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    """The live refresh: a model appears on the leaderboard before its run has ended."""
    from workbench.alm.runner import AlmRunOptions

    write_alm_config(timeout=30.0)
    window = make_window(force_sync=False)
    store = window.review.store if hasattr(window.review, "store") else window.store
    keys = ["DEMO-0001", "DEMO-0002", "DEMO-0003", "DEMO-0004"]
    with FakeOpenAIServer(models=["fake-audio-model"]) as server:
        server.slow_s = 6.0
        for key in keys:
            source = window.review.audio_source(window.review.clip_id_for_key(key))
            server.register_audio(Path(source.audio_path), key)
        server.behave("DEMO-0004", "slow")
        window.open_clip(window.review.clip_id_for_key("DEMO-0001"))
        options = AlmRunOptions(model="live-omni", provider="openai-compatible", api_model="fake-audio-model",
                                base_url=server.base_url, clip_keys=keys, concurrency=1)
        jobs = window.cockpit.jobs
        assert jobs.start(alm_job(store, options))
        board = window.cockpit.leaderboard
        qtbot.waitUntil(lambda: "live-omni" in set(board.frame["model"]), timeout=5000)
        assert jobs.running, "the leaderboard showed the model while its run was still going"
        # The shown clip is re-read off the GUI thread: it follows the leaderboard, still during the run.
        qtbot.waitUntil(lambda: any(p.model == "live-omni" for p in window.detail.predictions), timeout=5000)
        assert jobs.running, "the open clip's ALM chooser had the model while its run was still going"
        with qtbot.waitSignal(jobs.finished, timeout=30_000):
            pass
