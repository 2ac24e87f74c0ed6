"""Opening a clip decodes its file once; the playback buffer, the spectrogram pyramid and the
direction analysis all come from those blocks and equal what separate decodes gave."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.support.decodes import count_decodes
from workbench.audio import synth
from workbench.audio.direction import DirectionAnalyzer, analyze_samples
from workbench.audio.loader import AudioError, load_audio
from workbench.audio.streaming import DecodeStream
from workbench.audio.opening import open_audio
from workbench.audio.pyramid_cache import compute_pyramids
from workbench.audio.spectrogram import SpectrogramParams

RATE = 16000
PARAMS = SpectrogramParams(n_fft=512, hop=128)


def _binaural(path: Path, seconds: float = 3.0, fmt: str = "WAV") -> Path:
    samples = synth.woodworth_binaural(synth.white_noise(int(RATE * seconds), np.random.default_rng(1)), RATE, 35.0)
    sf.write(path, (0.5 * samples).astype(np.float32), RATE, format=fmt, **({"subtype": "FLOAT"} if fmt == "WAV" else {}))
    return path


def _foa(path: Path, seconds: float = 3.0) -> Path:
    rng = np.random.default_rng(2)
    samples = synth.encode_plane_wave(synth.white_noise(int(RATE * seconds), rng), 60.0, 20.0)
    sf.write(path, (0.5 * samples).astype(np.float32), RATE, subtype="FLOAT")
    return path


@pytest.mark.parametrize(("name", "layout"), [("pair.wav", "binaural"), ("pair.flac", "stereo"), ("foa.wav", "ambix")])
def test_one_decode_feeds_playback_pyramid_and_direction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, layout: str
) -> None:
    path = _foa(tmp_path / name) if layout == "ambix" else _binaural(tmp_path / name, fmt=name.rsplit(".", 1)[1].upper())
    analysed: list[np.ndarray] = []
    real_push = DirectionAnalyzer.push

    def push(self: DirectionAnalyzer, block: np.ndarray) -> None:
        analysed.append(np.array(block))
        real_push(self, block)

    monkeypatch.setattr(DirectionAnalyzer, "push", push)
    decodes = count_decodes(monkeypatch)
    opened = open_audio(path, layout=layout, params=PARAMS, heatmap_bins=72, block_frames=4096)
    assert decodes.of(path) == 1

    # What the separate decodes gave before: the playback decode, the streamed pyramid and
    # the direction analysis of the decoded samples (the spy counts each of them).
    decodes.reset()
    separate = load_audio(path)
    pyramid, envelope = compute_pyramids(path, PARAMS, use_cache=False)
    assert decodes.of(path) == 2
    np.testing.assert_array_equal(opened.audio.samples, separate.samples)
    assert opened.audio.sample_rate == separate.sample_rate and opened.audio.info == separate.info
    np.testing.assert_array_equal(np.concatenate(analysed), separate.samples)  # the open's direction input
    assert len(opened.pyramid.levels) == len(pyramid.levels)
    for got, want in zip(opened.pyramid.levels, pyramid.levels):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(opened.envelope.mins + opened.envelope.maxs, envelope.mins + envelope.maxs):
        np.testing.assert_array_equal(got, want)
    # The same blocks of the separately decoded samples give exactly the same analysis; the
    # analysis of the whole samples at once differs only by float rounding of its sums.
    same_blocks = analyze_samples(separate.samples, RATE, layout=layout, heatmap_bins=72, block_s=4096 / RATE)
    assert opened.direction == same_blocks and opened.direction is not None
    assert opened.direction.layout == layout and opened.computed_pyramids
    whole = analyze_samples(separate.samples, RATE, layout=layout, heatmap_bins=72)
    for name in ("t", "energy", "azimuth_deg" if layout == "ambix" else "lateral_deg"):
        np.testing.assert_allclose(getattr(opened.direction.frames, name), getattr(whole.frames, name), rtol=1e-5)
    assert [p.weight for p in opened.direction.peaks] == pytest.approx([p.weight for p in whole.peaks], rel=1e-5)


def test_the_analyses_start_before_the_decode_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 blocks: the decoder may run up to 16 blocks (and one read) ahead of the consumers, so
    # a WAV, which decodes at once, still leaves the first half for the analyses to start in.
    path = _binaural(tmp_path / "pair.wav", seconds=8.0)
    events: list[str] = []
    lock = threading.Lock()
    real_blocks, real_push = DecodeStream.blocks, DirectionAnalyzer.push

    def blocks(self: DecodeStream):  # type: ignore[no-untyped-def]
        for item in real_blocks(self):
            with lock:
                events.append("decoded")
            # A decode that takes time, as an MP3's does (a WAV's is instant, and on a busy
            # machine the whole file could be read before the analysis thread first runs).
            threading.Event().wait(0.003)
            yield item

    def push(self: DirectionAnalyzer, block: np.ndarray) -> None:
        with lock:
            events.append("direction")
        real_push(self, block)

    monkeypatch.setattr(DecodeStream, "blocks", blocks)
    monkeypatch.setattr(DirectionAnalyzer, "push", push)
    painted: list[int] = []
    opened = open_audio(path, layout="binaural", params=PARAMS, block_frames=2000,
                        on_spectrogram=lambda *_: painted.append(events.count("decoded")))
    n_blocks = events.count("decoded")
    assert n_blocks == 64 and events.count("direction") == n_blocks
    # The direction analysis had its first block long before the decoder read its last one.
    assert events.index("direction") < len(events) - 1 - events[::-1].index("decoded")
    assert events.index("direction") < n_blocks // 2
    assert painted == [n_blocks] and opened.direction is not None


def test_side_by_side_equals_one_thread_and_a_cached_pyramid_is_not_recomputed(tmp_path: Path) -> None:
    path = _foa(tmp_path / "foa.wav", seconds=2.0)
    both = open_audio(path, params=PARAMS, parallel=True, block_frames=3000)
    one = open_audio(path, params=PARAMS, parallel=False, block_frames=3000)
    assert both.timings["parallel"] == 1.0 and one.timings["parallel"] == 0.0
    assert both.direction == one.direction and both.direction is not None
    np.testing.assert_array_equal(both.pyramid.levels[0], one.pyramid.levels[0])
    handed: list[object] = []
    cached = open_audio(path, params=PARAMS, cached=(both.pyramid, both.envelope), block_frames=3000,
                        on_spectrogram=lambda pyramid, _envelope: handed.append(pyramid))
    assert handed == [both.pyramid] and cached.pyramid is both.pyramid and not cached.computed_pyramids
    assert cached.direction == both.direction
    np.testing.assert_array_equal(cached.audio.samples, both.audio.samples)


def test_direction_refusals_are_notes_and_decode_failures_errors(tmp_path: Path) -> None:
    mono = tmp_path / "mono.wav"
    sf.write(mono, np.zeros(RATE, dtype=np.float32), RATE)
    opened = open_audio(mono, params=PARAMS)
    assert opened.direction is None and "mono clips carry no direction information" in opened.direction_note
    assert opened.audio.samples.shape == (RATE, 1) and opened.pyramid.levels[0].shape[1] > 0
    pair = _binaural(tmp_path / "pair.wav", seconds=1.0)
    refused = open_audio(pair, layout="ab", params=PARAMS)
    assert refused.direction is None and "needs the microphone spacing" in refused.direction_note
    with pytest.raises(AudioError, match="absent.wav"):
        open_audio(tmp_path / "absent.wav")
    rate = 16000
    whole = tmp_path / "whole.mp3"
    sf.write(whole, (0.3 * np.sin(np.arange(rate * 6) * 0.17)).astype(np.float32), rate, format="MP3")
    data = whole.read_bytes()
    (tmp_path / "cut.mp3").write_bytes(data[: len(data) // 3])
    with pytest.raises(AudioError, match=r"cut\.mp3: truncated — header promises 6\.0 s"):
        open_audio(tmp_path / "cut.mp3", params=PARAMS)


def test_a_cancelled_open_stops_between_blocks_and_leaves_no_thread(tmp_path: Path) -> None:
    path = _binaural(tmp_path / "pair.wav", seconds=4.0)
    calls = 0

    class Stop(Exception):
        pass

    def cancel_at_the_third_block() -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise Stop()

    before = {thread.name for thread in threading.enumerate()}
    with pytest.raises(Stop):
        open_audio(path, layout="binaural", params=PARAMS, block_frames=2000, check_cancel=cancel_at_the_third_block)
    assert calls == 3
    for thread in threading.enumerate():
        if thread.name not in before and thread.name.startswith("aglw-"):
            thread.join(5.0)
            assert not thread.is_alive(), thread.name


def test_spectrogram_first_lowers_only_the_direction_threads_priority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.audio.opening as opening

    path = _binaural(tmp_path / "pair.wav", seconds=1.0)
    lowered: list[tuple[str, int]] = []
    monkeypatch.setattr(opening.os, "getpriority", lambda which, who: 0, raising=False)
    monkeypatch.setattr(opening.os, "setpriority",
                        lambda which, who, value: lowered.append((threading.current_thread().name, value)), raising=False)
    even = open_audio(path, layout="binaural", params=PARAMS)
    assert lowered == []
    first = open_audio(path, layout="binaural", params=PARAMS, spectrogram_first=True)
    assert lowered == [("aglw-open-direction", 10)]
    assert first.direction == even.direction


def test_direction_after_spectrogram_holds_the_analysis_until_the_spectrogram_is_handed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _binaural(tmp_path / "pair.wav", seconds=4.0)
    events: list[str] = []
    lock = threading.Lock()
    real_push = DirectionAnalyzer.push

    def push(self: DirectionAnalyzer, block: np.ndarray) -> None:
        with lock:
            events.append("direction")
        real_push(self, block)

    def on_screen(*_: object) -> None:
        # The review window's callback returns once the spectrogram is painted: a slow paint
        # here gives a held-back analysis every chance to show that it started early.
        threading.Event().wait(0.2)
        with lock:
            if any(thread.name == "aglw-open-direction" for thread in threading.enumerate()):
                events.append("direction thread running")
            events.append("spectrogram returned")

    monkeypatch.setattr(DirectionAnalyzer, "push", push)
    held = open_audio(path, layout="binaural", params=PARAMS, block_frames=2000,
                      direction_after_spectrogram=True, on_spectrogram=on_screen)
    # Held: its thread does not even exist until the spectrogram is handed over.
    assert events[0] == "spectrogram returned" and events.count("direction") == sum(1 for _ in DecodeStream(path, 2000).blocks())
    # The same analysis as side by side, over the same blocks.
    events.clear()
    beside = open_audio(path, layout="binaural", params=PARAMS, block_frames=2000, on_spectrogram=on_screen)
    assert events.index("direction") < events.index("spectrogram returned")
    assert "direction thread running" in events
    assert held.direction == beside.direction and held.direction is not None


def test_a_cancel_while_the_spectrogram_is_shown_stops_the_held_analysis(tmp_path: Path) -> None:
    path = _binaural(tmp_path / "pair.wav", seconds=2.0)

    class Stop(Exception):
        pass

    def left_the_clip(*_: object) -> None:
        raise Stop()

    before = {thread.name for thread in threading.enumerate()}
    with pytest.raises(Stop):
        open_audio(path, layout="binaural", params=PARAMS, block_frames=2000,
                   direction_after_spectrogram=True, on_spectrogram=left_the_clip)
    for thread in threading.enumerate():
        if thread.name not in before and thread.name.startswith("aglw-"):
            thread.join(5.0)
            assert not thread.is_alive(), thread.name
