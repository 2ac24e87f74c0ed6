"""Project tagging through the store: runs, tags, timelines, statuses, resume, failures, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from sqlmodel import select

from storage.models import Clip, Dataset, MediaRoot, Tag, TaggerRun, TagStatus, TagTimeline
from tests.core.test_tagging_model import calibrated_model
from tests.core.test_tagging_ontology import write_small_ontology
from workbench.tagging.assets import load_checkpoint
from workbench.tagging.ontology import load_ontology
from workbench.tagging.service import TAG_FLOOR, TAG_MIN_TOP, TIMELINE_TOP_K, tag_clips


@pytest.fixture
def project(store, tmp_path: Path):  # type: ignore[no-untyped-def]
    media = tmp_path / "media"
    media.mkdir()
    rng = np.random.default_rng(0)
    t = np.arange(int(3.5 * 44_100)) / 44_100
    stereo = np.stack([np.sin(2 * np.pi * 440 * t), 0.1 * rng.standard_normal(t.size)], axis=1)
    sf.write(media / "a.wav", stereo.astype(np.float32), 44_100)
    sf.write(media / "b.flac", (0.2 * rng.standard_normal(12 * 16_000)).astype(np.float32), 16_000)
    with store.write() as s:
        dataset = Dataset(name="demo")
        s.add(dataset)
        s.flush()
        s.add(MediaRoot(dataset_id=dataset.id, path=str(media)))
        s.add(Clip(dataset_id=dataset.id, key="a", audio_path="a.wav"))
        s.add(Clip(dataset_id=dataset.id, key="b", audio_path="b.flac"))
        s.add(Clip(dataset_id=dataset.id, key="gone", audio_path="missing.wav"))
        s.add(Clip(dataset_id=dataset.id, key="escape", audio_path="../../etc/passwd"))
    return store


@pytest.fixture(scope="module")
def checkpoint_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "mn01_as.pt"
    torch.save(calibrated_model("mn01", seed=5).state_dict(), path)
    return path


def test_tags_store_timeline_status_and_resume(project, checkpoint_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ontology = load_ontology(*write_small_ontology(tmp_path / "onto"))
    checkpoint = load_checkpoint(checkpoint_file, "mn01", name="mn01_as")
    summary = tag_clips(project, checkpoint, ontology.classes, workers=2, batch_size=4)
    assert summary.n_tagged == 2 and summary.n_skipped == 0 and not summary.resumed
    failed = {f.key: f.error for f in summary.failures}
    assert set(failed) == {"gone", "escape"}
    assert "missing.wav" in failed["gone"] and "not found" in failed["gone"]
    assert "outside the media roots" in failed["escape"]

    with project.session() as s:
        run = s.get(TaggerRun, summary.run_id)
        assert run.status == "done" and run.model_name == "mn01_as"
        assert run.checkpoint_sha256 == checkpoint.sha256 and run.finished_at is not None
        clip_ids = {c.key: c.id for c in s.exec(select(Clip)).all()}
        statuses = {row.clip_id: row for row in s.exec(select(TagStatus)).all()}
        assert statuses[clip_ids["a"]].status == "done" and statuses[clip_ids["gone"]].status == "failed"
        tags_a = s.exec(select(Tag).where(Tag.clip_id == clip_ids["a"])).all()
        timeline_b = s.exec(select(TagTimeline).where(TagTimeline.clip_id == clip_ids["b"])).all()
        assert s.exec(select(Tag).where(Tag.clip_id == clip_ids["gone"])).all() == []

    assert len(tags_a) >= TAG_MIN_TOP
    assert all(t.probability >= TAG_FLOOR for t in tags_a) or len(tags_a) == TAG_MIN_TOP
    assert {t.audioset_id for t in tags_a} <= {c.id for c in ontology.classes}
    assert all(ontology.classes[t.class_index].id == t.audioset_id for t in tags_a)
    assert len(timeline_b) == TIMELINE_TOP_K
    assert all(len(row.values) == 12 and row.hop_s == 1.0 for row in timeline_b)
    top_b = max(s_.probability for s_ in _tags(project, clip_ids["b"]))
    # clip probability is a max over 10 s windows: no timeline value of a class exceeds it by much
    assert max(max(row.values) for row in timeline_b) <= 1.0 and top_b <= 1.0

    again = tag_clips(project, checkpoint, ontology.classes, workers=1)
    assert again.resumed and again.run_id == summary.run_id
    assert again.n_skipped == 2 and again.n_tagged == 0 and len(again.failures) == 2
    with project.session() as s:
        assert len(s.exec(select(TagStatus).where(TagStatus.tagger_run_id == summary.run_id)).all()) == 4
        assert len(s.exec(select(Tag).where(Tag.clip_id == clip_ids["a"])).all()) == len(tags_a)

    only_a = tag_clips(project, checkpoint, ontology.classes, clip_keys=["a"], fresh_run=True)
    assert only_a.run_id != summary.run_id and only_a.n_tagged == 1 and only_a.n_selected == 1


def _tags(store, clip_id: int) -> list[Tag]:  # type: ignore[no-untyped-def]
    with store.session() as s:
        return list(s.exec(select(Tag).where(Tag.clip_id == clip_id)).all())


def test_cli_tag_and_tag_file(project, checkpoint_file: Path, tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    models = tmp_path / "models"
    models.mkdir()
    (models / "mn01_as.pt").write_bytes(checkpoint_file.read_bytes())
    ontology_path, _ = write_small_ontology(tmp_path / "onto")
    monkeypatch.setenv("AGLW_EFFICIENTAT_DIR", str(models))
    monkeypatch.setenv("AGLW_ONTOLOGY", str(ontology_path))
    db = str(project.sqlite_path)

    with project.write() as s:  # a clip whose recording was never linked
        s.add(Clip(dataset_id=s.exec(select(Dataset)).one().id, key="unlinked", mp3name="later.mp3"))
    # any requested clip failing exits 1, after the whole JSON summary
    assert main(["--db", db, "--json", "tag", "--clips", "a,gone", "--model", "mn01_as", "--workers", "1"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["tagged"] == 1 and [f["key"] for f in payload["failed"]] == ["gone"]
    assert main(["--db", db, "tag", "--model", "mn01_as"]) == 1
    captured = capsys.readouterr()
    # one summary line and the failures on stdout, not a line per clip of the pool on stderr
    assert captured.out.splitlines()[0].startswith("run ") and "1 without audio (not attempted)" in captured.out
    assert "1 clip(s) have no audio linked" in captured.err and "2 of 4 clip(s) failed" in captured.err
    assert "tagging clip" not in captured.err
    assert main(["--db", db, "--json", "tag", "--model", "mn01_as", "--clips", "a,b"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["resumed"] and payload["skipped"] == 2 and payload["tagged"] == 0 and not payload["no_audio"]
    assert main(["--db", db, "--json", "tag", "--model", "mn01_as", "--clips", "unlinked"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert "no audio linked" in payload["failed"][0]["error"]

    assert main(["--db", db, "tag", "--clips", "nope", "--model", "mn01_as"]) == 1
    assert "unknown clip key(s) nope" in capsys.readouterr().err

    audio = Path(project.sqlite_path).parent / "media" / "a.wav"
    assert main(["--json", "tag-file", str(audio), "--model", "mn01_as", "--top", "3", "--all-classes", "--timeline"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sample_rate"] == 32_000 and result["duration_s"] == pytest.approx(3.5, abs=1e-3)
    assert len(result["probabilities"]) == 527 and len(result["top"]) == 3
    best = result["top"][0]
    assert best["probability"] == pytest.approx(max(result["probabilities"]))
    assert best["id"] == f"/c/{best['index']}"
    assert len(result["timeline"]["classes"][0]["values"]) == 4
    assert set(result["agl1k_categories"]) >= {"channel", "environment_and_background"}

    assert main(["tag-file", str(audio), "--checkpoint", str(checkpoint_file), "--arch", "mn04"]) == 1
    assert "not a mn04 EfficientAT checkpoint" in capsys.readouterr().err
    assert main(["tag-file", str(audio), "--checkpoint", str(checkpoint_file)]) == 2  # a usage error (issue 40)
    assert "also pass --arch" in capsys.readouterr().err


def test_tag_file_offline_without_an_ontology_says_how_to_provide_it(checkpoint_file: Path, tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main
    from workbench.tagging import assets

    monkeypatch.delenv("AGLW_ONTOLOGY", raising=False)
    monkeypatch.delenv("AGLW_AUDIOSET_CLASSES", raising=False)
    # nothing listens on port 9: the download fails the way it does offline, without the internet
    monkeypatch.setattr(assets, "ONTOLOGY_URL", "http://127.0.0.1:9/ontology.json")
    audio = tmp_path / "x.wav"
    sf.write(audio, np.zeros(32_000, dtype=np.float32), 32_000)
    assert main(["tag-file", str(audio), "--checkpoint", str(checkpoint_file), "--arch", "mn01"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "cannot download ontology.json" in err and "AGLW_ONTOLOGY" in err


def _stored_rows(store, run_id: int) -> dict:  # type: ignore[no-untyped-def]
    with store.session() as s:
        keys = {c.id: c.key for c in s.exec(select(Clip)).all()}
        tags = {(keys[t.clip_id], t.class_index, t.audioset_id, t.probability)
                for t in s.exec(select(Tag).where(Tag.tagger_run_id == run_id)).all()}
        lines = {(keys[t.clip_id], t.class_index, t.hop_s, tuple(t.values))
                 for t in s.exec(select(TagTimeline).where(TagTimeline.tagger_run_id == run_id)).all()}
        statuses = {(keys[t.clip_id], t.status, t.error)
                    for t in s.exec(select(TagStatus).where(TagStatus.tagger_run_id == run_id)).all()}
    return {"tags": tags, "timelines": lines, "statuses": statuses}


def test_batched_path_stores_the_rows_of_the_per_clip_path(project, checkpoint_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The GPU path (decoding processes, windows of many clips per pass), run on CPU: the same rows."""
    ontology = load_ontology(*write_small_ontology(tmp_path / "onto"))
    checkpoint = load_checkpoint(checkpoint_file, "mn01", name="mn01_as")
    per_clip = tag_clips(project, checkpoint, ontology.classes, workers=2, batched=False)
    batched = tag_clips(project, checkpoint, ontology.classes, workers=2, batched=True, fresh_run=True)
    assert batched.run_id != per_clip.run_id and batched.n_tagged == per_clip.n_tagged == 2
    assert {f.key: f.error for f in batched.failures} == {f.key: f.error for f in per_clip.failures}
    rows, expected = _stored_rows(project, batched.run_id), _stored_rows(project, per_clip.run_id)
    assert rows["tags"] and rows["timelines"]
    assert rows == expected


def test_precision_is_recorded_and_keys_the_run(project, checkpoint_file: Path, tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.main import main

    ontology = load_ontology(*write_small_ontology(tmp_path / "onto"))
    checkpoint = load_checkpoint(checkpoint_file, "mn01", name="mn01_as")
    fast = tag_clips(project, checkpoint, ontology.classes, clip_keys=["a"], precision="fast")
    assert fast.precision == "fast"
    with project.session() as s:
        run = s.get(TaggerRun, fast.run_id)
        assert run.parameters["precision"] == "fast" and run.device == "cpu"
    # a conformant run never resumes a fast one (its numbers may differ by the fast tolerance)
    full = tag_clips(project, checkpoint, ontology.classes, clip_keys=["a"])
    assert full.run_id != fast.run_id and not full.resumed and full.n_tagged == 1
    with project.session() as s:
        assert s.get(TaggerRun, full.run_id).parameters["precision"] == "full"
    again = tag_clips(project, checkpoint, ontology.classes, clip_keys=["a"], precision="fast")
    assert again.run_id == fast.run_id and again.resumed and again.n_skipped == 1

    models = tmp_path / "models"
    models.mkdir()
    (models / "mn01_as.pt").write_bytes(checkpoint_file.read_bytes())
    monkeypatch.setenv("AGLW_EFFICIENTAT_DIR", str(models))
    monkeypatch.setenv("AGLW_ONTOLOGY", str(write_small_ontology(tmp_path / "onto2")[0]))
    db = str(project.sqlite_path)
    assert main(["--db", db, "--json", "tag", "--clips", "b", "--model", "mn01_as", "--precision", "fast",
                 "--new-run"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["precision"] == "fast" and payload["device"] == "cpu"
    with project.session() as s:
        assert s.get(TaggerRun, payload["run_id"]).parameters["precision"] == "fast"
    assert main(["--db", db, "tag", "--clips", "b", "--model", "mn01_as", "--precision", "fast"]) == 0
    assert "(mn01_as on cpu, precision fast): 0 tagged, 1 already done" in capsys.readouterr().out
    assert main(["--db", db, "tag", "--clips", "b", "--model", "mn01_as", "--precision", "half"]) == 2
    assert "expected full or fast" in capsys.readouterr().err
