"""The audio engine on the real recordings in ../shared/media."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.audio.loader import AudioError, audio_info, load_audio
from workbench.audio.streaming import iter_blocks
from workbench.audio.service import analyze_file
from workbench.audio.pyramid_cache import compute_pyramids
from workbench.audio.spectrogram import SpectrogramParams

pytestmark = pytest.mark.integration

ESSAOUIRA = "media/agl1k_case2_essaouira.mp3"


def test_real_mp3_decodes_and_streams_consistently(shared_dir: Path) -> None:
    path = shared_dir / ESSAOUIRA
    info = audio_info(path)
    assert (info.sample_rate, info.n_channels, info.format) == (44100, 2, "MP3")
    head = load_audio(path, max_seconds=5.0)
    assert head.samples.shape == (5 * 44100, 2)
    start, first_block = next(iter_blocks(path, 44100))
    assert start == 0
    np.testing.assert_array_equal(first_block, head.samples[:44100])


@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.9])
def test_truncated_mp3_is_reported(shared_dir: Path, tmp_path: Path, fraction: float) -> None:
    data = (shared_dir / ESSAOUIRA).read_bytes()
    truncated = tmp_path / "essaouira_cut.mp3"
    truncated.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(AudioError, match=r"essaouira_cut\.mp3: truncated .*re-download"):
        load_audio(truncated)


def test_analyze_real_recordings(shared_dir: Path) -> None:
    mono = analyze_file(shared_dir / "media" / "efficientat_metro_station_paris.wav")
    assert mono["layout"] == "mono" and mono["duration_s"] == pytest.approx(10.0, abs=0.01)
    assert -40 < mono["quality"]["rms_dbfs"] < -5 and mono["flags"] == []


def test_pyramids_of_a_real_clip_and_cached_reopen(shared_dir: Path, tmp_path: Path) -> None:
    path = shared_dir / ESSAOUIRA
    params = SpectrogramParams()
    pyramid, envelope = compute_pyramids(path, params, cache_dir=tmp_path)
    duration = audio_info(path).duration_s
    assert pyramid.duration_s == pytest.approx(duration, abs=0.1)
    assert pyramid.levels[0].shape == (513, int(np.ceil(pyramid.duration_s * 44100 / 256)))
    image, start, end = pyramid.view(0.0, duration, 1200)
    assert 1200 <= image.shape[1] <= 2400
    reopened, _ = compute_pyramids(path, params, cache_dir=tmp_path)
    np.testing.assert_array_equal(reopened.levels[3], pyramid.levels[3])
    times, mins, maxs = envelope.view(30.0, 31.0, 500)
    assert times.size >= 500 and float(maxs.max()) > 0.0 > float(mins.min())


def test_truncated_mp3_without_length_header_decodes_what_is_there(shared_dir: Path, tmp_path: Path) -> None:
    # This recording has no Xing/Info header: its length is an estimate, so a short file is not
    # an error; it decodes to the audio present.
    data = (shared_dir / "media" / "agl1k_case4_berlin_blackbird.mp3").read_bytes()
    cut = tmp_path / "blackbird_cut.mp3"
    cut.write_bytes(data[: len(data) // 4])
    audio = load_audio(cut)
    assert 30.0 < audio.samples.shape[0] / audio.sample_rate < 40.0
    whole = load_audio(shared_dir / "media" / "agl1k_case4_berlin_blackbird.mp3", mono=True)
    assert whole.samples.shape[0] / whole.sample_rate == pytest.approx(140.4, abs=0.5)


@pytest.mark.parametrize("name", ["agl1k_case2_essaouira.mp3", "agl1k_case4_berlin_blackbird.mp3"])
def test_opening_a_real_clip_decodes_it_once(shared_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The Berlin MP3 has no Xing header (its header over-estimates the length): the one decode
    must still end where the decoder ends, as the separate decodes did."""
    from tests.support.decodes import count_decodes
    from workbench.audio.direction import analyze_samples
    from workbench.audio.opening import OPEN_BLOCK_FRAMES, open_audio

    path = shared_dir / "media" / name
    decodes = count_decodes(monkeypatch)
    opened = open_audio(path, layout="binaural")
    assert decodes.of(path) == 1
    separate = load_audio(path)
    np.testing.assert_array_equal(opened.audio.samples, separate.samples)
    pyramid, envelope = compute_pyramids(path, SpectrogramParams(), use_cache=False)
    for got, want in zip(opened.pyramid.levels, pyramid.levels):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(opened.envelope.maxs[0], envelope.maxs[0])
    same_blocks = analyze_samples(separate.samples, separate.sample_rate, layout="binaural",
                                  block_s=OPEN_BLOCK_FRAMES / separate.sample_rate)
    assert opened.direction == same_blocks
