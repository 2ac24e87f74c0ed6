"""Synthetic scenes, direction pre-fill (FOA and binaural) and FOA → binaural decoding."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import soundfile as sf

from workbench.errors import InputError
from workbench.audio.binaural import (
    SPHERICAL_HEAD_NAME,
    BinauralDecoder,
    load_sofa_hrirs,
    make_decoder,
    rotate_yaw,
    spherical_head_hrirs,
)
from workbench.events.prefill import prefill_binaural, prefill_direction, prefill_foa
from workbench.events.qa import angular_error_deg
from workbench.events.scene import SceneSource, random_static_scene, render_scene, write_scene
from workbench.events.starss23 import read_metadata, rows_to_events


@pytest.mark.parametrize("seed", range(5))
def test_prefill_of_a_static_source_at_10_db_snr_is_within_5_degrees(seed: int) -> None:
    scene = random_static_scene(np.random.default_rng(100 + seed), duration_s=1.5, snr_db=10.0, seed=seed)
    truth = scene.sources[0]
    foa = prefill_foa(scene.foa, scene.sample_rate, 0.0, 1.5)
    assert angular_error_deg(foa.azimuth_deg, foa.elevation_deg, truth.azimuth_deg, truth.elevation_deg) <= 5.0
    pair = prefill_binaural(scene.binaural, scene.sample_rate, 0.0, 1.5)
    lateral = math.degrees(math.asin(math.sin(math.radians(truth.azimuth_deg))))
    assert abs(pair.azimuth_deg - lateral) <= 5.0
    assert len(pair.hours) in (1, 2)  # the front candidate and its back mirror (3 and 9 have none)


def test_prefill_of_a_span_picks_the_source_in_it() -> None:
    scene = render_scene([SceneSource(0, 0.0, 1.0, 70.0, 20.0), SceneSource(8, 1.0, 2.0, -100.0, -10.0)], 2.0,
                         snr_db=15.0, seed=3)
    first = prefill_foa(scene.foa, scene.sample_rate, 0.1, 0.9)
    second = prefill_foa(scene.foa, scene.sample_rate, 1.1, 1.9, band=(500.0, 4000.0))
    assert angular_error_deg(first.azimuth_deg, first.elevation_deg, 70.0, 20.0) < 5.0
    assert angular_error_deg(second.azimuth_deg, second.elevation_deg, -100.0, -10.0) < 5.0


def test_prefill_track_follows_a_moving_source() -> None:
    source = SceneSource(6, 0.0, 3.0, -60.0, 0.0, degrees_per_second=40.0)
    scene = render_scene([source], 3.0, snr_db=20.0, seed=1)
    result = prefill_foa(scene.foa, scene.sample_rate, 0.0, 3.0)
    times = (np.arange(len(result.track)) + 0.5) * 0.1
    errors = [abs((az - float(source.azimuth_at(t)) + 180) % 360 - 180) for (az, _), t in zip(result.track, times)]
    assert np.median(errors) < 6.0


def test_prefill_refuses_what_it_cannot_do() -> None:
    scene = random_static_scene(np.random.default_rng(0), duration_s=1.0)
    with pytest.raises(InputError, match="no direction pre-fill for a stereo clip"):
        prefill_direction(scene.binaural, scene.sample_rate, "stereo", 0.0, 1.0)
    with pytest.raises(InputError, match="shorter than one 100 ms frame"):
        prefill_direction(scene.foa, scene.sample_rate, "ambix", 0.0, 0.05)
    silent = np.zeros((24_000, 4))
    with pytest.raises(InputError, match="silent"):
        prefill_direction(silent, 24_000, "ambix", 0.0, 1.0)


def test_a_written_scene_has_its_ground_truth_beside_it(tmp_path) -> None:
    scene = render_scene([SceneSource(3, 0.2, 0.7, 45.0, 10.0, distance_cm=150.0),
                          SceneSource(5, 0.5, 1.0, -30.0, 0.0, degrees_per_second=-20.0, distance_cm=300.0)], 1.0)
    paths = write_scene(scene, tmp_path, "s1")
    foa, rate = sf.read(paths["foa"])
    assert foa.shape == (24_000, 4) and rate == 24_000
    assert sf.read(paths["binaural"])[0].shape == (24_000, 2)
    events = rows_to_events(read_metadata(paths["csv"]))
    assert events == scene.events
    moving = next(e for e in events if e.class_name == "domestic sounds")
    assert moving.track[0][:2] == (-31.0, 0.0) and moving.track[-1][:2] == (-39.0, 0.0)


def _ild_db(binaural: np.ndarray) -> float:
    return 20 * math.log10(math.sqrt((binaural[:, 0] ** 2).mean() / (binaural[:, 1] ** 2).mean()))


def test_binaural_decode_puts_a_left_source_on_the_left_and_yaw_turns_the_scene() -> None:
    scene = render_scene([SceneSource(0, 0.0, 1.0, 90.0)], 1.0, sample_rate=24_000, snr_db=None)
    decoder = make_decoder(24_000)
    assert decoder.source_name == SPHERICAL_HEAD_NAME
    assert _ild_db(decoder.render(scene.foa)) > 4.0  # left ear louder
    assert abs(_ild_db(decoder.render(scene.foa, yaw_deg=90.0))) < 1.0  # turned toward it: centred
    assert _ild_db(decoder.render(scene.foa, yaw_deg=180.0)) < -4.0  # turned away: on the right


def test_rotation_moves_a_plane_wave_by_minus_yaw() -> None:
    scene = render_scene([SceneSource(0, 0.0, 0.2, 30.0, 10.0)], 0.2, snr_db=None)
    expected = render_scene([SceneSource(0, 0.0, 0.2, -20.0, 10.0)], 0.2, snr_db=None)
    np.testing.assert_allclose(rotate_yaw(scene.foa, 50.0), expected.foa, atol=1e-9)


def test_streamed_blocks_equal_the_whole_signal() -> None:
    rng = np.random.default_rng(0)
    foa = rng.standard_normal((10_000, 4))
    decoder = BinauralDecoder(spherical_head_hrirs(24_000), block=1024)
    whole = decoder.render(foa)
    decoder.reset()
    streamed = np.concatenate([decoder.process(foa[i:i + 700]) for i in range(0, 10_000, 700)])
    np.testing.assert_allclose(streamed, whole, atol=1e-12)


def _sofa(path, *, rate: int = 24_000, convention: str = "SimpleFreeFieldHRIR"):
    sofar = pytest.importorskip("sofar")
    sofa = sofar.Sofa(convention)
    if convention == "SimpleFreeFieldHRIR":
        ir = np.zeros((4, 2, 64))
        ir[:, 0, 5] = ir[:, 1, 5] = 1.0
        ir[1, 1, 5] = 0.1  # +90° (left): the right ear is quieter
        ir[3, 0, 5] = 0.1
        sofa.Data_IR = ir
        sofa.SourcePosition = np.array([[0, 0, 1.5], [90, 0, 1.5], [180, 0, 1.5], [270, 0, 1.5]])
        sofa.Data_SamplingRate = rate
    sofar.write_sofa(str(path), sofa)
    return path


def test_hrirs_from_a_sofa_file(tmp_path) -> None:
    path = _sofa(tmp_path / "head.sofa")
    hrirs = load_sofa_hrirs(path, 24_000)
    assert hrirs.name == "SOFA file head.sofa" and hrirs.left.shape == (4, 64)
    assert hrirs.nearest(-90.0, 0.0) == 3  # 270° read as −90°
    scene = render_scene([SceneSource(0, 0.0, 0.5, 90.0)], 0.5, snr_db=None)
    assert _ild_db(BinauralDecoder(hrirs).render(scene.foa)) > 3.0


def test_a_sofa_file_at_another_rate_or_convention_is_refused(tmp_path) -> None:
    path = _sofa(tmp_path / "h48.sofa", rate=48_000)
    with pytest.raises(InputError, match=r"h48.sofa: Data_SamplingRate is 48000 Hz but the clip is 24000 Hz"):
        load_sofa_hrirs(path, 24_000)
    other = _sofa(tmp_path / "fir.sofa", convention="GeneralFIR")
    with pytest.raises(InputError, match=r"fir.sofa: GLOBAL_SOFAConventions is 'GeneralFIR'"):
        load_sofa_hrirs(other, 24_000)
    (tmp_path / "junk.sofa").write_bytes(b"not hdf5")
    with pytest.raises(InputError, match="junk.sofa: not a readable SOFA file"):
        load_sofa_hrirs(tmp_path / "junk.sofa", 24_000)


def test_without_sofar_the_message_names_the_extra(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "sofar", None)
    with pytest.raises(InputError, match=r"'spatial' extra"):
        load_sofa_hrirs(tmp_path / "any.sofa", 24_000)
