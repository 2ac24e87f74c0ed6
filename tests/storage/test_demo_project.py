"""The offline demo project."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlmodel import select

from storage import open_store
from storage.models import AlmRun, Clip, CurationClipResult, JudgeRun, TaggerRun
from workbench.demo import create_demo_project
from workbench.errors import InputError
from workbench.review.service import ReviewService
from workbench.timerefs import find_time_references


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return create_demo_project(tmp_path_factory.mktemp("demo"))


def test_demo_covers_every_layout_with_real_wav_files(demo) -> None:  # type: ignore[no-untyped-def]
    assert demo.layouts == ("mono", "stereo", "binaural", "ambix")
    channels = {"mono": 1, "stereo": 2, "binaural": 2, "ambix": 4}
    for key, layout in zip(demo.clip_keys, demo.layouts):
        data, rate = sf.read(demo.media_root / f"{key}.wav")
        data = data.reshape(len(data), -1)
        assert data.shape[1] == channels[layout]
        assert rate == 16_000
        assert np.max(np.abs(data)) > 0.1


def test_foa_demo_source_circles_the_listener(demo) -> None:  # type: ignore[no-untyped-def]
    data, rate = sf.read(demo.media_root / "DEMO-0004.wav")
    quarter = len(data) // 4
    # ambiX [W, Y, Z, X]: at t = T/4 the source is at +90° (left): Y carries the energy, X not.
    block = data[quarter - 800 : quarter + 800]
    w, y, x = block[:, 0], block[:, 1], block[:, 3]
    assert np.dot(w, y) / np.dot(w, w) == pytest.approx(1.0, abs=0.1)
    assert abs(np.dot(w, x) / np.dot(w, w)) < 0.1


def test_everything_is_marked_demo(demo) -> None:  # type: ignore[no-untyped-def]
    store = open_store(demo.db_path)
    try:
        with store.session() as s:
            clips = s.exec(select(Clip)).all()
            assert len(clips) == 4 and all(c.is_demo and "DEMO" in c.title for c in clips)
            alm = s.exec(select(AlmRun)).all()
            assert [a.is_demo for a in alm] == [True] and "DEMO" in alm[0].model
            tagger = s.exec(select(TaggerRun)).one()
            assert tagger.is_demo and "DEMO" in tagger.model_name
            judges = s.exec(select(JudgeRun)).all()
            assert sorted(j.judge_name for j in judges) == list(demo.judges)
            assert all(j.is_demo for j in judges)
            results = s.exec(select(CurationClipResult).where(CurationClipResult.run_id == demo.curation_run_id)).all()
            assert len(results) == 4
        detail = ReviewService(store).clip_detail(clips[0].id)
        assert detail.audio_path is not None and detail.audio_path.is_file()
        assert find_time_references(detail.predictions[0].reasoning)
        assert len(detail.judge_names) == 3
    finally:
        store.dispose()


def test_demo_refuses_to_overwrite(demo) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="already exists"):
        create_demo_project(Path(demo.db_path).parent)


def test_a_stored_run_stays_readable_after_a_second_alm_is_judged(tmp_path: Path) -> None:
    """Selection reads a run against the ALM it was fitted on, even once another ALM is judged
    too (the GUI's selection view used to fail, and with it the whole window)."""
    from workbench.curation import runs
    from workbench.curation.selection import selection_pool

    project = create_demo_project(tmp_path / "demo")
    store = open_store(project.db_path)
    try:
        with store.write() as s:
            demo_alm = s.exec(select(AlmRun)).one()
            other = AlmRun(model="another ALM")
            s.add(other)
            s.flush()
            s.add(JudgeRun(judge_name="opus", provider="demo", model_id="x", prompt_version="v",
                           alm_run_id=other.id, status="done"))
        [run] = runs.list_runs(store)
        info = runs.run_info(store, run.id)
        assert info.parameters["alm_model"] == demo_alm.model  # the demo records it as fit does
        pool_before, keys, _ = selection_pool(store, run.id)
        # a run written without the parameter (older projects) falls back on its alm_run_id
        with store.write() as s:
            from storage.models import CurationRun

            stored = s.get(CurationRun, run.id)
            stored.parameters = {k: v for k, v in stored.parameters.items() if k != "alm_model"}
        pool_after, _, _ = selection_pool(store, run.id)
        assert len(pool_after) == len(pool_before) == len(keys) == 4
        assert pool_after.equals(pool_before)
    finally:
        store.dispose()
