"""An ALM run's fingerprints use the hash the store holds (``Clip.content_hash``), not a new read of every recording."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from sqlalchemy import select, update

from storage.models import AlmAnswer, Clip
from tests.storage.alm_project import make_project, write_alm_config
from tests.support.fake_alm import FakeOpenAIServer

MODEL = "fake-audio-model"


@pytest.fixture
def project(tmp_path: Path):  # type: ignore[no-untyped-def]
    write_alm_config(timeout=5.0)
    p = make_project(tmp_path, n=3)
    with p.store.write() as s:
        for key in p.keys:
            digest = hashlib.sha256(p.audio(key).read_bytes()).hexdigest()
            s.execute(update(Clip).where(Clip.key == key).values(content_hash=digest))
    yield p
    p.store.dispose()


def test_planning_reads_no_recording_when_the_store_has_its_hash(project, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workbench.alm import plan
    from workbench.alm.runner import AlmRunOptions, dry_run

    def no_reading(path):  # type: ignore[no-untyped-def]
        raise AssertionError(f"{path} was hashed again")

    monkeypatch.setattr(plan, "_file_sha256", no_reading)
    estimate = dry_run(project.store, AlmRunOptions(model="m", provider="openai-compatible", api_model=MODEL,
                                                    base_url="http://127.0.0.1:9/v1"))
    assert estimate.requests == 3


def test_a_stale_stored_hash_files_the_answer_under_what_was_sent(project) -> None:  # type: ignore[no-untyped-def]
    from workbench.alm.runner import AlmRunOptions, run_alm

    with project.store.write() as s:
        s.execute(update(Clip).where(Clip.key == project.keys[0]).values(content_hash="0" * 64))
    with FakeOpenAIServer(models=[MODEL]) as server:
        for key in project.keys:
            server.register_audio(project.audio(key), key)
        options = AlmRunOptions(model="m", provider="openai-compatible", api_model=MODEL, base_url=server.base_url)
        assert run_alm(project.store, options).answered == 3
    with project.store.session() as s:
        audio = s.execute(select(AlmAnswer.audio).where(AlmAnswer.clip_key == project.keys[0])).scalar_one()
    assert audio["sha256"] == hashlib.sha256(project.audio(project.keys[0]).read_bytes()).hexdigest()
