"""`aglw direction` and analyze_direction on WAV files written by the test (JSON contract of cli.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from workbench.audio import direction, synth
from cli.main import main

FOA_FRAME_KEYS = {"t", "azimuth_deg", "elevation_deg", "diffuseness", "oclock"}
PAIR_FRAME_KEYS = {"t", "lateral_deg", "oclock", "oclock_mirror", "ild_db"}


def _write(path: Path, samples: np.ndarray, sample_rate: int) -> Path:
    sf.write(path, samples.astype(np.float32), sample_rate, subtype="FLOAT")
    return path


@pytest.fixture
def foa_wav(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    n = 2 * 16000
    samples = synth.encode_plane_wave(synth.white_noise(n, rng), 60.0, 20.0) + synth.diffuse_noise(n, rng, rms=0.01)
    return _write(tmp_path / "foa.wav", samples, 16000)


@pytest.fixture
def binaural_wav(tmp_path: Path) -> Path:
    samples = synth.woodworth_binaural(synth.white_noise(96000, np.random.default_rng(2)), 48000, 40.0)
    return _write(tmp_path / "binaural.wav", samples, 48000)


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    rc = main(["--json", "direction", *args])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return json.loads(captured.out)


def test_cli_foa_json_contract(foa_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run_json(capsys, str(foa_wav))
    assert set(result) == {"layout", "frames", "peaks"}
    assert result["layout"] == "ambix"
    # 2 s at 16 kHz: 61 STFT frames (hop 512), 3 per ~100 ms frame, the last frame partial.
    assert len(result["frames"]) == 21
    for frame in result["frames"]:
        assert set(frame) == FOA_FRAME_KEYS
        assert frame["azimuth_deg"] == pytest.approx(60.0, abs=2.0)
        assert frame["elevation_deg"] == pytest.approx(20.0, abs=2.0)
        assert frame["diffuseness"] < 0.1
        assert frame["oclock"] == 10
    assert len(result["peaks"]) == 1
    peak = result["peaks"][0]
    assert set(peak) == {"azimuth_deg", "elevation_deg", "weight"}
    assert peak["azimuth_deg"] == pytest.approx(60.0, abs=2.0)
    assert peak["elevation_deg"] == pytest.approx(20.0, abs=2.0)
    assert 0.8 < peak["weight"] <= 1.0


def test_cli_fuma_override_gives_the_same_direction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    samples = synth.encode_plane_wave(synth.white_noise(16000, rng), -100.0, -10.0, fmt="fuma")
    path = _write(tmp_path / "fuma.wav", samples, 16000)
    result = _run_json(capsys, str(path), "--layout", "fuma", "--band", "300", "6000")
    assert result["layout"] == "fuma"
    assert result["peaks"][0]["azimuth_deg"] == pytest.approx(-100.0, abs=2.0)
    assert result["peaks"][0]["elevation_deg"] == pytest.approx(-10.0, abs=2.0)
    # Read as ambiX, the same file points elsewhere: the override matters.
    wrong = _run_json(capsys, str(path))
    assert abs(wrong["peaks"][0]["azimuth_deg"] + 100.0) > 20.0


def test_cli_binaural_json_contract(binaural_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run_json(capsys, str(binaural_wav), "--layout", "binaural")
    assert set(result) == {"layout", "frames", "peaks"}
    assert result["layout"] == "binaural"
    assert len(result["frames"]) == 20
    for frame in result["frames"]:
        assert set(frame) == PAIR_FRAME_KEYS
        assert frame["lateral_deg"] == pytest.approx(40.0, abs=2.0)
        assert (frame["oclock"], frame["oclock_mirror"]) == (11, 7)
        assert frame["ild_db"] == pytest.approx(10.0 * np.sin(np.radians(40.0)), abs=0.5)
    assert result["peaks"] == [{"lateral_deg": pytest.approx(40.0, abs=1.0), "weight": pytest.approx(1.0)}]


def test_cli_ab_needs_a_spacing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    samples = synth.spaced_pair(synth.white_noise(48000, np.random.default_rng(4)), 48000, -30.0, 0.2)
    path = _write(tmp_path / "ab.wav", samples, 48000)
    assert main(["direction", str(path), "--layout", "ab"]) == 1
    assert "--spacing" in capsys.readouterr().err
    result = _run_json(capsys, str(path), "--layout", "ab", "--spacing", "0.2")
    assert result["peaks"][0]["lateral_deg"] == pytest.approx(-30.0, abs=1.0)
    assert result["frames"][0]["oclock"] == 1


def test_cli_stereo_is_a_labelled_panorama(binaural_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = _run_json(capsys, str(binaural_wav))
    assert result["layout"] == "stereo"
    frame = result["frames"][0]
    assert frame["lateral_deg"] is None and frame["oclock"] is None
    # 10·sin 40° dB quieter on the right: (1 - g²)/(1 + g²) with g the right-ear gain.
    gain_squared = 10 ** (-10 * np.sin(np.radians(40.0)) / 10)
    assert frame["panorama_index"] == pytest.approx((1 - gain_squared) / (1 + gain_squared), abs=0.01)


def test_cli_mono_is_explained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "mono.wav", synth.white_noise(16000, np.random.default_rng(5)), 16000)
    assert main(["direction", str(path)]) == 1
    err = capsys.readouterr().err
    assert "aglw: error:" in err
    assert "mono clips carry no direction information" in err
    assert "mono.wav" in err


def test_cli_wrong_layout_for_channel_count(binaural_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["direction", str(binaural_wav), "--layout", "ambix"]) == 1
    assert "needs 4 channels but the file has 2" in capsys.readouterr().err


def test_cli_human_summary(binaural_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["direction", str(binaural_wav), "--layout", "binaural"]) == 0
    captured = capsys.readouterr()
    # The summary is the command's result: stdout (cli.md), so `aglw direction f > out` keeps it.
    assert captured.err == ""
    text = " ".join(captured.out.split())  # rich wraps long lines
    assert "layout binaural" in text
    assert "11 o'clock or its mirror 7 o'clock" in text


def test_heatmap_file_streams_blocks_like_the_array_path(foa_wav: Path) -> None:
    samples, sample_rate = sf.read(foa_wav, dtype="float32")
    from_file = direction.foa_heatmap_file(foa_wav, block_s=0.3)
    from_array = direction.foa_heatmap(samples, sample_rate)
    np.testing.assert_allclose(from_file.times, from_array.times)
    np.testing.assert_allclose(from_file.values, from_array.values, rtol=1e-5, atol=1e-9)


def test_cli_reversed_band_is_refused(foa_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["direction", str(foa_wav), "--band", "8000", "200"]) == 1
    assert "band must be LOW HIGH" in capsys.readouterr().err


def test_cli_file_shorter_than_one_frame_has_no_frames(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "short.wav", np.full((500, 4), 0.1), 16000)
    assert _run_json(capsys, str(path)) == {"layout": "ambix", "frames": [], "peaks": []}
