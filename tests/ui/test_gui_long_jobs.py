"""Linking audio and fitting from the window are jobs of the jobs panel: in its worker, with
progress and Cancel; a cancel keeps what was finished and running again does the rest; closing
the window while one runs asks, and a yes stops it cleanly (pytest-qt, offscreen).

Each job is held at a chosen item by a :class:`tests.support.cancel_gate.CancelGate` until the
test cancels it, so "midway" is the same item on every run, whatever the threads' timing.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox
from sqlmodel import select

import workbench.media as media
from storage.models import Clip, MediaRoot
from tests.support.cancel_gate import CancelGate
from workbench.curation import runs as curation_runs
from workbench.curation import service as curation_service

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

MOVED = ("DEMO-0002", "DEMO-0003", "DEMO-0004")  # clips whose recordings moved to a new folder
GATE_KEY = "DEMO-0003"  # the link job is cancelled while it looks for this clip's file


def _move_recordings(store, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """The MOVED clips lose their audio; their recordings, named as the dataset now says, are
    in a folder that is no media root yet."""
    new_home = tmp_path / "usb-stick"
    new_home.mkdir()
    with store.write() as s:
        root = Path(s.exec(select(MediaRoot)).first().path)
        for key in MOVED:
            clip = s.exec(select(Clip).where(Clip.key == key)).one()
            shutil.copy(root / clip.audio_path, new_home / f"moved-{key}.wav")
            clip.audio_path, clip.mp3name = None, f"moved-{key}.wav"
            s.add(clip)
    return new_home


def _audio(store) -> dict[str, str | None]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return {c.key: c.audio_path for c in s.exec(select(Clip))}


LINKED_AT_CANCEL = {"DEMO-0001": "DEMO-0001.wav", "DEMO-0002": "moved-DEMO-0002.wav",
                    "DEMO-0003": "moved-DEMO-0003.wav", "DEMO-0004": None}


def _hold_link_at_gate_key(monkeypatch, window) -> CancelGate:  # type: ignore[no-untyped-def]
    gate = CancelGate(media._link_one, lambda clip, *_: clip.key == GATE_KEY, lambda: window.cockpit.jobs.context)
    monkeypatch.setattr(media, "_link_one", gate)
    return gate


def _hold_fit_in_worker(monkeypatch, window) -> CancelGate:  # type: ignore[no-untyped-def]
    # Only the job's fit (in the worker) waits: the view's previews run in the GUI thread.
    gate = CancelGate(curation_service._compute, lambda *_a, **_k: threading.current_thread() is not threading.main_thread(),
                      lambda: window.cockpit.jobs.context)
    monkeypatch.setattr(curation_service, "_compute", gate)
    return gate


def _run_ids(store) -> list[int]:  # type: ignore[no-untyped-def]
    return [run.id for run in curation_runs.list_runs(store)]


def test_link_audio_is_a_job_a_cancel_keeps_the_links_found_and_resuming_links_the_rest(
        make_window, demo_store, tmp_path, monkeypatch, qtbot) -> None:  # type: ignore[no-untyped-def]
    new_home = _move_recordings(demo_store, tmp_path)
    window = make_window()
    jobs = window.cockpit.jobs
    window.open_clip(window.review.clip_id_for_key(GATE_KEY))
    assert window.detail.audio_path is None
    gate = _hold_link_at_gate_key(monkeypatch, window)
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: shown.append(box.text()) or 0)

    with qtbot.waitSignal(jobs.finished, timeout=30_000) as ended:
        assert window.link_audio(new_home)
        # off the GUI thread, shown in the jobs panel, which is brought to the front
        assert jobs.running and jobs.title.text() == "Running: link audio"
        assert gate.reached.wait(30)
        jobs.cancel_button.click()
    assert ended.args[0] == "cancelled" and "run it again to resume" in ended.args[1]
    assert _audio(demo_store) == LINKED_AT_CANCEL  # the clip in flight finished, the rest left
    assert jobs.bar.maximum() == 4 and jobs.bar.value() == 3  # progress: clips looked at
    assert shown == [] and "run it again to resume" in window.statusBar().currentMessage()
    # the clip under review shows the audio linked before the cancel at once
    assert window.detail.audio_path == (new_home / f"moved-{GATE_KEY}.wav").resolve()

    window.open_clip(window.review.clip_id_for_key("DEMO-0004"))
    assert window.detail.audio_path is None
    assert jobs.resume_button.isEnabled()
    with qtbot.waitSignal(jobs.finished, timeout=30_000) as ended:
        jobs.resume_button.click()  # the same job again: it skips the clips linked before
    assert ended.args[0] == "done"
    assert shown == ["Linked 1 clip(s); 3 already had audio; 0 not found; 0 ambiguous (not linked)."]
    assert _audio(demo_store) == {**LINKED_AT_CANCEL, "DEMO-0004": "moved-DEMO-0004.wav"}
    assert window.detail.audio_path == (new_home / "moved-DEMO-0004.wav").resolve()


def test_closing_while_audio_is_linked_asks_and_a_yes_stops_it_keeping_the_links_found(
        make_window, demo_store, tmp_path, monkeypatch, qtbot) -> None:  # type: ignore[no-untyped-def]
    import ui.cockpit.jobs

    new_home = _move_recordings(demo_store, tmp_path)
    window = make_window()
    window.show()
    jobs = window.cockpit.jobs
    gate = _hold_link_at_gate_key(monkeypatch, window)
    asked: list[str] = []
    answer = [False]
    monkeypatch.setattr(ui.cockpit.jobs, "confirm", lambda _parent, _title, text: asked.append(text) or answer[0])
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: shown.append(box.text()) or 0)

    assert window.link_audio(new_home)
    assert gate.reached.wait(30)
    assert window.close() is False  # "no": the window stays and the job goes on
    assert asked == ["link audio is running (2 of 4 done). Close and stop it after the item in flight? "
                     "Everything finished so far is stored; starting it again resumes."]
    assert jobs.running and not jobs.context.cancelled
    answer[0] = True
    assert window.close() is True
    assert len(asked) == 2 and not jobs.running and jobs.last_status == "cancelled"
    assert _audio(demo_store) == LINKED_AT_CANCEL
    assert shown == []  # no dialog from the closing window

    # running it again (a new window) links the rest
    again = make_window()
    with qtbot.waitSignal(again.cockpit.jobs.finished, timeout=30_000) as ended:
        assert again.link_audio(new_home)
    assert ended.args[0] == "done" and ended.args[1].startswith("Linked 1 clip(s); 3 already had audio")
    assert shown == [ended.args[1]]
    assert _audio(demo_store)["DEMO-0004"] == "moved-DEMO-0004.wav"


def test_fit_and_store_is_a_job_a_cancel_stores_no_run_and_fitting_again_stores_one(
        make_window, demo_store, monkeypatch, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    jobs, view = window.cockpit.jobs, window.cockpit.curation
    before = _run_ids(demo_store)
    names = {category: row["Name"] for category, row in view.category_rows().items()}  # the demo run's
    assert view.shown_run_id == before[-1] and all(names.values())
    gate = _hold_fit_in_worker(monkeypatch, window)

    with qtbot.waitSignal(jobs.finished, timeout=30_000) as ended:
        assert view.fit_and_store() is None  # started in the worker, not ended yet
        assert jobs.running and jobs.title.text() == "Running: fit curation model"
        assert not view.fit_button.isEnabled() and "Jobs panel" in view.fit_status.text()
        assert gate.reached.wait(30)
        jobs.cancel()
    assert ended.args[0] == "cancelled"
    assert _run_ids(demo_store) == before and view.run_ids() == before
    assert view.fit_status.text().startswith("fit cancelled: no run stored") and view.fit_button.isEnabled()

    with qtbot.waitSignal(view.runStored, timeout=30_000) as stored:
        view.fit_button.click()
    qtbot.waitUntil(lambda: not jobs.running, timeout=30_000)
    run_id = stored.args[0]
    assert _run_ids(demo_store) == [*before, run_id] and view.run_ids() == [*before, run_id]
    assert jobs.last_status == "done" and jobs.status.text().startswith(f"stored curation run {run_id}:")
    assert view.fit_status.text() == jobs.status.text()
    # what fit_and_store showed before it was a job: the new run, and its diff against the last
    assert view.shown_run_id == run_id and view.source.text().startswith(f"Stored run {run_id} (")
    assert (view.run_a.currentData(), view.run_b.currentData()) == (before[-1], run_id)
    assert view.run_diff.topLevelItem(0).text(1) == f"run {before[-1]} → run {run_id}"
    # stored with the category names, as `aglw fit` stores them
    assert {category: row["Name"] for category, row in view.category_rows().items()} == names


def test_closing_while_fitting_asks_and_a_yes_stops_it_with_no_run_stored(
        make_window, demo_store, monkeypatch, qtbot) -> None:  # type: ignore[no-untyped-def]
    import ui.cockpit.jobs

    window = make_window()
    window.show()
    jobs, view = window.cockpit.jobs, window.cockpit.curation
    before = _run_ids(demo_store)
    gate = _hold_fit_in_worker(monkeypatch, window)
    asked: list[str] = []
    monkeypatch.setattr(ui.cockpit.jobs, "confirm", lambda _parent, _title, text: asked.append(text) or True)

    view.fit_and_store()
    assert gate.reached.wait(30)
    assert window.close() is True
    assert asked and asked[0].startswith("fit curation model is running (0 of 1 done)")
    assert not jobs.running and jobs.last_status == "cancelled"
    assert _run_ids(demo_store) == before

    again = make_window()  # fitting again, from the jobs panel's own button this time
    starter = next(b for b in again.cockpit.jobs._starters if b.text() == "Fit curation model")
    with qtbot.waitSignal(again.cockpit.curation.runStored, timeout=30_000) as stored:
        starter.click()
    assert _run_ids(demo_store) == [*before, stored.args[0]]
    assert again.cockpit.curation.shown_run_id == stored.args[0]


def test_link_audio_from_a_folder_that_is_not_there_says_so_in_the_services_words(
        make_window, tmp_path, monkeypatch, qtbot) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    shown: list[tuple[QMessageBox.Icon, str]] = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: shown.append((box.icon(), box.text())) or 0)
    with qtbot.waitSignal(window.cockpit.jobs.finished, timeout=30_000) as ended:
        assert window.link_audio(tmp_path / "unplugged")
    assert ended.args[0] == "failed"
    assert shown == [(QMessageBox.Icon.Warning,
                      f"{tmp_path / 'unplugged'}: not a folder; give the folder that holds the recordings")]
