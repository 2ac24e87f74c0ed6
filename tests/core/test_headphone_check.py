"""The antiphase headphone check's sound (Woods et al. 2017): levels, phase and timing, decoded back."""

from __future__ import annotations

import io
import math
import struct

import numpy as np
import pytest
import soundfile as sf

from workbench.audio.headphone_check import (
    FREQUENCY_HZ,
    GAP_S,
    RAMP_S,
    TONE_S,
    antiphase_tone,
    tone_starts_s,
    trial_wav,
)


def _decode(data: bytes) -> tuple[np.ndarray, int]:
    samples, rate = sf.read(io.BytesIO(data), dtype="float64", always_2d=True)
    return samples, rate


def _tones(samples: np.ndarray, rate: int) -> list[np.ndarray]:
    return [samples[int(round(s * rate)):int(round(s * rate)) + int(round(TONE_S * rate))] for s in tone_starts_s()]


def _db(ratio: float) -> float:
    return 20 * math.log10(ratio)


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x**2)))


@pytest.mark.parametrize("quiet", [1, 2, 3])
def test_the_quiet_tone_is_6_db_down_and_the_next_one_is_in_antiphase_at_full_level(quiet: int) -> None:
    samples, rate = _decode(trial_wav(quiet))
    assert rate == 44100 and samples.shape[1] == 2
    tones = _tones(samples, rate)
    anti = antiphase_tone(quiet)
    assert anti == quiet % 3 + 1 and anti != quiet
    other = ({1, 2, 3} - {quiet, anti}).pop()
    full = _rms(tones[other - 1][:, 0])
    for index, tone in enumerate(tones, start=1):
        left, right = tone[:, 0], tone[:, 1]
        # per channel: the quiet tone 6 dB below, the antiphase tone as loud as the other loud one
        expected = -6.0 if index == quiet else 0.0
        assert _db(_rms(left) / full) == pytest.approx(expected, abs=0.05)
        assert _db(_rms(right) / full) == pytest.approx(expected, abs=0.05)
        if index == anti:
            # the channels cancel when summed (as loudspeakers sum them in the air)
            assert _rms(left + right) < 1e-3 * full
            assert np.corrcoef(left, right)[0, 1] < -0.999
        else:
            assert np.max(np.abs(left - right)) < 1e-4
    # a loudspeaker listener hears the antiphase tone as the quietest: its mono sum is far below the quiet one
    mono = [_rms(t[:, 0] + t[:, 1]) for t in tones]
    assert min(range(3), key=mono.__getitem__) + 1 == anti


def test_durations_gaps_ramps_and_frequency() -> None:
    samples, rate = _decode(trial_wav(2, sample_rate=48000))
    assert rate == 48000
    assert samples.shape[0] == pytest.approx((3 * TONE_S + 2 * GAP_S) * rate, abs=2)
    envelope = np.abs(samples[:, 1])
    for start in tone_starts_s()[1:]:
        gap = samples[int((start - GAP_S) * rate) + 1:int(start * rate) - 1]
        assert np.max(np.abs(gap)) == 0.0
    tone = _tones(samples, rate)[0][:, 1]
    ramp = int(RAMP_S * rate)
    # a raised-cosine onset: silent at the start, the full level only after the ramp
    assert np.max(np.abs(tone[: ramp // 10])) < 0.05 * np.max(np.abs(tone))
    assert np.max(np.abs(tone[ramp: 2 * ramp])) == pytest.approx(np.max(envelope), rel=0.01)
    spectrum = np.abs(np.fft.rfft(tone))
    assert np.fft.rfftfreq(tone.size, 1 / rate)[int(np.argmax(spectrum))] == pytest.approx(FREQUENCY_HZ, abs=1.0)


def test_the_wav_holds_only_fmt_and_data_and_the_same_trial_is_the_same_bytes() -> None:
    data = trial_wav(3)
    assert data == trial_wav(3) and data != trial_wav(1)
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    chunks, at = [], 12
    while at + 8 <= len(data):
        name, size = data[at:at + 4], struct.unpack_from("<I", data, at + 4)[0]
        chunks.append(name)
        at += 8 + size + (size & 1)
    assert chunks == [b"fmt ", b"data"]


@pytest.mark.parametrize("quiet", [0, 4, -1])
def test_a_trial_other_than_1_to_3_is_refused(quiet: int) -> None:
    with pytest.raises(ValueError, match="quiet must be 1, 2 or 3"):
        trial_wav(quiet)


def test_the_server_side_answers_match_the_sounds() -> None:
    """web_session scores 'which tone is quietest'; the sound of each answer makes that tone the quiet one."""
    for quiet in (1, 2, 3):
        samples, rate = _decode(trial_wav(quiet))
        levels = [_rms(t[:, 1]) for t in _tones(samples, rate)]
        assert min(range(3), key=levels.__getitem__) + 1 == quiet
