"""Opening a clip for the review window (workbench.audio.clip_open.load_clip_audio), without Qt:
one decode gives the playback samples, the spectrogram pyramid (cached for the next open) and a
direction view that points where the sound is; a clip without direction information gets a note,
a file that cannot be decoded an error. The decode itself: tests/core/test_audio_opening.py."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from workbench.audio import synth
from workbench.audio.clip_open import AudioRequest, load_clip_audio
from workbench.audio.direction import analyze_file, direction_image
from workbench.audio.direction.view import HEATMAP_BINS
from workbench.audio.pyramid_cache import compute_pyramids, wait_for_cache_writes
from workbench.audio.spectrogram import SpectrogramParams

RATE = 16000
PARAMS = SpectrogramParams(n_fft=512, hop=128)


def _open(path: Path, layout: str | None = None, spacing_m: float | None = None) -> tuple:  # type: ignore[type-arg]
    """load_clip_audio as the review window's worker calls it: the spectrogram handed over first,
    then (the paint being instant here) the rest."""
    stages: list[str] = []
    resume = threading.Event()

    def partial(result) -> None:  # type: ignore[no-untyped-def]
        stages.append(result.stage)
        resume.set()

    request = AudioRequest(1, 7, path, layout, PARAMS, spacing_m=spacing_m)
    return load_clip_audio(request, threading.Event(), partial, resume), stages


def _tone(path: Path, channels: int) -> Path:
    t = np.arange(RATE) / RATE
    tone = 0.2 * np.sin(2 * np.pi * 440 * t)
    sf.write(path, np.repeat(tone[:, None], channels, axis=1).astype(np.float32), RATE, subtype="FLOAT")
    return path


def test_one_open_gives_samples_pyramid_and_a_direction_view_that_points_at_the_source(tmp_path: Path) -> None:
    samples = synth.woodworth_binaural(synth.white_noise(RATE * 3, np.random.default_rng(8)), RATE, 35.0)
    path = tmp_path / "pair.wav"
    sf.write(path, samples.astype(np.float32), RATE, subtype="FLOAT")
    result, stages = _open(path, "binaural")
    assert result.error is None and stages == ["spectrogram"]
    assert result.samples.shape == (RATE * 3, 2) and result.sample_rate == RATE
    expected, expected_envelope = compute_pyramids(path, PARAMS, use_cache=False)
    assert len(result.pyramid.levels) == len(expected.levels)
    for got, want in zip(result.pyramid.levels, expected.levels):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(result.envelope.maxs[0], expected_envelope.maxs[0])
    analysis = analyze_file(path, layout="binaural", heatmap_bins=HEATMAP_BINS)
    assert all(abs(angle - 35.0) <= 2.0 for angle in analysis.frames.lateral_deg.tolist())
    view = direction_image(analysis)
    assert (result.direction.kind, result.direction.y_range) == (view.kind, view.y_range)
    np.testing.assert_allclose(result.direction.image, view.image, rtol=1e-5, atol=1e-6)
    # The pyramid went to the user cache (written behind): the next open maps it instead of computing.
    wait_for_cache_writes()
    entries = [e for e in (Path(os.environ["AGLW_CACHE_DIR"]) / "pyramids").iterdir() if not e.name.startswith(".")]
    assert len(entries) == 1
    again, stages = _open(path, "binaural")
    assert stages == ["spectrogram"] and isinstance(again.pyramid.levels[0], np.memmap)
    np.testing.assert_array_equal(np.asarray(again.pyramid.levels[0]), expected.levels[0])
    np.testing.assert_allclose(again.direction.image, result.direction.image)


def test_a_clip_without_direction_information_gets_a_note_and_a_bad_file_an_error(tmp_path: Path) -> None:
    mono, _ = _open(_tone(tmp_path / "mono.wav", channels=1))
    assert mono.error is None and mono.pyramid.levels[0].shape[1] > 0
    assert mono.direction.kind == "none" and mono.direction.image is None and "Mono recording" in mono.direction.note
    pair = _tone(tmp_path / "pair.wav", channels=2)
    refused, _ = _open(pair, "ab")
    assert refused.error is None and refused.direction.kind == "none" and "spacing" in refused.direction.note
    spaced, _ = _open(pair, "ab", spacing_m=0.3)
    assert spaced.error is None and spaced.direction.kind == "lateral" and spaced.direction.image is not None
    absent, stages = _open(tmp_path / "absent.wav")
    assert stages == [] and absent.samples is None and "absent.wav" in (absent.error or "")


def test_the_direction_analysis_runs_at_a_lower_priority_than_the_spectrogram(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.audio.opening as opening

    samples = synth.woodworth_binaural(synth.white_noise(RATE, np.random.default_rng(3)), RATE, -20.0)
    path = tmp_path / "pair.wav"
    sf.write(path, samples.astype(np.float32), RATE, subtype="FLOAT")
    lowered: list[tuple[str, int]] = []
    monkeypatch.setattr(opening.os, "getpriority", lambda which, who: 0, raising=False)
    monkeypatch.setattr(opening.os, "setpriority",
                        lambda which, who, value: lowered.append((threading.current_thread().name, value)), raising=False)
    result, _ = _open(path, "binaural")
    assert result.error is None and lowered == [("aglw-open-direction", 10)]
