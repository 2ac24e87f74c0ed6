"""The pool step stores clip properties and quality; the analyze / fetch-audio CLI commands.

Opening a clip for the player: tests/core/test_clip_open.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlmodel import select

from storage.models import Clip, ClipQuality, Dataset, MediaRoot
from workbench.audio.service import analyze_file, pool_quality_flags
from workbench.pool.service import analyze_pool
from cli.main import main


def _tone(path: Path, amplitude: float, channels: int = 2, seconds: float = 1.0) -> Path:
    rate = 8000
    t = np.arange(int(rate * seconds)) / rate
    tone = amplitude * np.sin(2 * np.pi * 440 * t)
    sf.write(path, np.repeat(tone[:, None], channels, axis=1), rate, subtype="FLOAT" if path.suffix == ".wav" else "PCM_16")
    return path


@pytest.fixture
def project(store, tmp_path: Path):  # type: ignore[no-untyped-def]
    media = tmp_path / "media"
    media.mkdir()
    _tone(media / "loud.wav", 0.5)
    _tone(media / "quiet.wav", 0.001, channels=1)
    with store.write() as s:
        dataset = Dataset(name="agl1k")
        s.add(dataset)
        s.flush()
        s.add(MediaRoot(dataset_id=dataset.id, path=str(media)))
        s.add(Clip(dataset_id=dataset.id, key="loud", audio_path="loud.wav", description="binaural walk"))
        s.add(Clip(dataset_id=dataset.id, key="quiet", mp3name="quiet.wav"))
        s.add(Clip(dataset_id=dataset.id, key="escape", audio_path="../outside.wav"))
    with store.session() as s:
        ids = {c.key: c.id for c in s.exec(select(Clip))}
    return store, ids, media


def _quality(store, clip_id):  # type: ignore[no-untyped-def]
    with store.session() as s:
        return s.get(Clip, clip_id), s.exec(select(ClipQuality).where(ClipQuality.clip_id == clip_id)).one()


def test_the_pool_step_stores_properties_and_quality(project) -> None:  # type: ignore[no-untyped-def]
    """One clip through the pool step (the product's one analysis of stored clips)."""
    store, ids, media = project
    result = analyze_pool(store, clip_keys=["loud"])
    assert result.measured == 1 and result.skipped == 0
    clip, quality = _quality(store, ids["loud"])
    assert (clip.sample_rate, clip.n_channels, clip.layout) == (8000, 2, "binaural")
    assert clip.duration_s == pytest.approx(1.0)
    assert quality.rms_dbfs == pytest.approx(20 * math.log10(0.5 / math.sqrt(2)), abs=0.05)
    assert quality.content_hash == clip.content_hash
    first_rms, first_aci = quality.rms_dbfs, quality.aci
    again = analyze_pool(store, clip_keys=["loud"])
    assert again.measured == 0 and again.skipped == 1  # the same content: nothing decoded again
    assert _quality(store, ids["loud"])[1].aci == pytest.approx(first_aci)
    _tone(media / "loud.wav", 0.05)  # the file changed: the hash differs, so it is measured again
    changed = analyze_pool(store, clip_keys=["loud"])
    assert changed.measured == 1 and _quality(store, ids["loud"])[1].rms_dbfs < first_rms - 15
    with store.session() as s:
        assert len(s.exec(select(ClipQuality)).all()) == 1


def test_the_pool_step_refuses_escapes_and_flags_the_pool(project) -> None:  # type: ignore[no-untyped-def]
    store, ids, _ = project
    result = analyze_pool(store, clip_keys=["escape", "loud", "quiet"])
    # the one rule: a path out of the media roots is never read, and mp3name alone is not audio until linked
    assert sorted(result.no_audio) == ["escape", "quiet"] and result.measured == 1
    from workbench.media import link_media

    assert [entry["key"] for entry in link_media(store).linked] == ["quiet"]
    assert analyze_pool(store, clip_keys=["quiet"]).measured == 1
    assert _quality(store, ids["quiet"])[0].layout == "mono"
    flags = pool_quality_flags(store)
    assert "low_level" in flags[ids["quiet"]] and "low_level" not in flags[ids["loud"]]


def test_analyze_file_and_cli_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _tone(tmp_path / "x.flac", 0.25)
    described = analyze_file(path, description="XY pair")
    assert described["layout"] == "xy" and described["format"] == "FLAC"
    rc = main(["--json", "analyze", str(path), "--layout", "ms"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= {"path", "duration_s", "sample_rate", "n_channels", "layout", "format", "quality", "flags"}
    assert payload["layout"] == "ms" and payload["sample_rate"] == 8000 and payload["n_channels"] == 2
    assert set(payload["quality"]) == {"rms_dbfs", "spectral_flatness", "clipping_ratio", "aci"}
    assert payload["quality"]["rms_dbfs"] == pytest.approx(20 * math.log10(0.25 / math.sqrt(2)), abs=0.05)


def test_cli_errors_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["analyze", str(tmp_path / "absent.wav")])
    assert rc == 1
    assert "absent.wav: file not found" in capsys.readouterr().err
    path = _tone(tmp_path / "y.wav", 0.1)
    assert main(["analyze", str(path), "--layout", "octo"]) == 2  # a usage error
    err = capsys.readouterr().err
    assert "--layout" in err and "'octo' is not one of" in err


def test_fetch_audio_cli_reports_failures(project, sqlite_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    store, _, _ = project
    store.dispose()
    # Nothing listens on port 9 of localhost: every download fails fast, and the command says so.
    rc = main(["--db", str(sqlite_path), "--json", "fetch-audio", "--clips", "quiet", "--to", str(tmp_path / "dl"), "--timeout", "2", "--url-template", "http://127.0.0.1:9/{key}/{mp3name}"])
    captured = capsys.readouterr()
    assert rc == 1
    payload = json.loads(captured.out)
    assert payload["failed"] == 1 and "quiet" in payload["failures"]
    assert "could not be fetched" in captured.err
    assert main(["--db", str(sqlite_path), "fetch-audio", "--clips", "all,quiet"]) == 2  # a usage error (issue 40)
