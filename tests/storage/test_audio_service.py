"""The pool step stores clip properties and quality; the analyze / fetch-audio CLI commands; opening a clip."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from sqlmodel import select

from storage.models import Clip, ClipQuality, Dataset, MediaRoot
from workbench.audio.loader import AudioError
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
    assert main(["--db", str(sqlite_path), "fetch-audio", "--clips", "all,quiet"]) == 1


def test_open_clip_decodes_once_and_matches_each_stage(tmp_path: Path) -> None:
    from workbench.audio import synth
    from workbench.audio.direction import analyze_file
    from workbench.audio.service import open_clip
    from workbench.audio.pyramid_cache import compute_pyramids
    from workbench.audio.spectrogram import SpectrogramParams

    rate = 16000
    samples = synth.woodworth_binaural(synth.white_noise(rate * 3, np.random.default_rng(8)), rate, 35.0)
    path = tmp_path / "pair.wav"
    sf.write(path, samples.astype(np.float32), rate, subtype="FLOAT")
    params = SpectrogramParams(n_fft=512, hop=128)
    cache = tmp_path / "cache"
    opened = open_clip(path, layout="binaural", params=params, cache_dir=cache)
    assert opened.audio.samples.shape == (rate * 3, 2) and opened.audio.sample_rate == rate
    assert opened.direction == analyze_file(path, layout="binaural")
    assert all(abs(angle - 35.0) <= 2.0 for angle in opened.direction.frames.lateral_deg.tolist())
    expected, expected_envelope = compute_pyramids(opened.audio, params)
    assert len(opened.pyramid.levels) == len(expected.levels)
    for got, want in zip(opened.pyramid.levels, expected.levels):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(opened.envelope.maxs[0], expected_envelope.maxs[0])
    assert set(opened.timings) >= {"decode", "pyramid", "direction", "total"}
    assert opened.timings["total"] >= opened.timings["decode"] > 0
    # The pyramid went to the cache: a second open reads it (memory-mapped) instead of computing.
    assert len(list(cache.iterdir())) == 1
    again = open_clip(path, layout="binaural", params=params, cache_dir=cache)
    assert isinstance(again.pyramid.levels[0].base, np.memmap) or isinstance(again.pyramid.levels[0], np.memmap)
    np.testing.assert_array_equal(again.pyramid.levels[0], expected.levels[0])
    # Without the cache nothing is written.
    open_clip(path, layout="stereo", params=params, cache_dir=tmp_path / "unused", use_cache=False)
    assert not (tmp_path / "unused").exists()


def test_open_clip_can_write_the_cache_behind(tmp_path: Path) -> None:
    from workbench.audio.service import open_clip
    from workbench.audio.pyramid_cache import wait_for_cache_writes
    from workbench.audio.spectrogram import SpectrogramParams

    path = _tone(tmp_path / "pair.wav", 0.3, seconds=2.0)
    params = SpectrogramParams(n_fft=512, hop=128)
    cache = tmp_path / "cache"
    opened = open_clip(path, layout="binaural", params=params, cache_dir=cache, write_behind=True)
    assert opened.computed_pyramids and "cache_write" not in opened.timings  # not waited for
    wait_for_cache_writes()
    assert len([entry for entry in cache.iterdir() if not entry.name.startswith(".tmp-")]) == 1
    again = open_clip(path, layout="binaural", params=params, cache_dir=cache, write_behind=True)
    assert not again.computed_pyramids
    for got, want in zip(again.pyramid.levels, opened.pyramid.levels):
        np.testing.assert_array_equal(got, want)


def test_open_clip_without_direction_information(tmp_path: Path) -> None:
    from workbench.audio.service import open_clip

    path = _tone(tmp_path / "mono.wav", 0.2, channels=1)
    opened = open_clip(path, cache_dir=tmp_path / "cache")
    assert opened.direction is None and "mono clips carry no direction information" in opened.direction_note
    assert opened.pyramid.levels[0].shape[1] > 0
    stereo = _tone(tmp_path / "pair.wav", 0.2)
    refused = open_clip(stereo, layout="ab", cache_dir=tmp_path / "cache")
    assert refused.direction is None and "needs the microphone spacing" in refused.direction_note
    spaced = open_clip(stereo, layout="ab", spacing_m=0.3, cache_dir=tmp_path / "cache")
    assert spaced.direction is not None and spaced.direction.layout == "ab"
    with pytest.raises(AudioError, match="absent.wav"):
        open_clip(tmp_path / "absent.wav")


def test_open_clip_side_by_side_equals_one_after_the_other(tmp_path: Path) -> None:
    from workbench.audio.service import open_clip

    path = _tone(tmp_path / "pair.wav", 0.3, seconds=2.0)
    both = open_clip(path, layout="binaural", use_cache=False, parallel=True)
    one = open_clip(path, layout="binaural", use_cache=False, parallel=False)
    assert both.timings["parallel"] == 1.0 and one.timings["parallel"] == 0.0
    assert both.direction == one.direction and both.direction is not None
    np.testing.assert_array_equal(both.pyramid.levels[0], one.pyramid.levels[0])


def test_open_clip_runs_the_direction_beside_at_a_lower_priority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import workbench.audio.opening as opening
    from workbench.audio.service import open_clip

    path = _tone(tmp_path / "pair.wav", 0.3, seconds=1.0)
    lowered: list[tuple[str, int]] = []
    monkeypatch.setattr(opening.os, "getpriority", lambda which, who: 0, raising=False)
    monkeypatch.setattr(opening.os, "setpriority",
                        lambda which, who, value: lowered.append((threading.current_thread().name, value)), raising=False)
    opened = open_clip(path, layout="binaural", use_cache=False, parallel=True)
    assert opened.timings["parallel"] == 1.0 and lowered == [("aglw-open-direction", 10)]
    open_clip(path, layout="binaural", use_cache=False, parallel=False)
    assert len(lowered) == 1  # one thread: nothing to lower


def test_side_by_side_needs_a_second_core_not_an_idle_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from workbench.audio import service

    monkeypatch.setattr(os, "getloadavg", lambda: (3.9, 4.0, 4.0), raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert service.has_second_core()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not service.has_second_core()
