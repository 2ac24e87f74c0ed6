"""The antiphase headphone screening of Woods, Siegel, Traer & McDermott (2017), synthesized on the spot.

Woods KJP, Siegel MH, Traer J, McDermott JH (2017). Headphone screening to facilitate web-based
auditory experiments. *Attention, Perception, & Psychophysics* 79(7), 2064-2072,
doi:10.3758/s13414-017-1361-2. Each trial plays three 200 Hz pure tones and asks which is the
quietest. One tone is 6 dB quieter than the others; one of the two louder tones is played 180° out
of phase between the left and right channels. Over headphones the antiphase tone sounds as loud as
the other loud tone and the quiet one is easy to pick; over loudspeakers the two channels' sound
cancels in the air (the authors measured more than 20 dB of attenuation at 200 Hz, "substantially
exceeding the −6 dB required"), so the antiphase tone seems the quietest and the listener errs.
200 Hz was chosen because its cancellation holds over a broad region around the head. Six trials;
the study page passes a participant with at least 5 correct (``HEADPHONE_PASS``), as the paper does.

Timing as the study design states it (design/web-study.md): each tone 1000 ms with 100 ms
raised-cosine onset and offset ramps (so no click gives the phase away), 500 ms of silence between
tones. Tones are at -12 dBFS peak (the quiet one at -18 dBFS), leaving room for a browser's
volume. The WAV is 16-bit stereo PCM, with no tag or chunk besides ``fmt`` and ``data``.

Which tone is quiet comes from the server (:func:`workbench.studies.web_session.headphone_trials`);
the antiphase tone is the one after it, cyclically (``quiet % 3 + 1``). The page receives only
the sound, never the answer.
"""

from __future__ import annotations

import functools
import io
import math

import numpy as np

FREQUENCY_HZ = 200.0
TONE_S = 1.0
RAMP_S = 0.1
GAP_S = 0.5
FULL_AMPLITUDE = 10 ** (-12 / 20)  # -12 dBFS peak
QUIET_DB = -6.0
MEDIA_TYPE = "audio/wav"


def antiphase_tone(quiet: int) -> int:
    """Which tone (1-3) is played in antiphase when tone ``quiet`` is the quiet one."""
    return quiet % 3 + 1


def tone_starts_s() -> tuple[float, float, float]:
    """Where each tone starts in the trial's sound, in seconds."""
    return tuple(i * (TONE_S + GAP_S) for i in range(3))  # type: ignore[return-value]


def _tone(sample_rate: int) -> np.ndarray:
    n = int(round(TONE_S * sample_rate))
    t = np.arange(n) / sample_rate
    tone = np.sin(2 * math.pi * FREQUENCY_HZ * t)
    ramp_n = int(round(RAMP_S * sample_rate))
    ramp = 0.5 - 0.5 * np.cos(math.pi * np.arange(ramp_n) / ramp_n)  # raised cosine, 0 -> 1
    tone[:ramp_n] *= ramp
    tone[n - ramp_n:] *= ramp[::-1]
    return tone


@functools.lru_cache(maxsize=16)
@functools.lru_cache(maxsize=8)  # deterministic: three sounds per rate, served to every participant
def trial_wav(quiet: int, sample_rate: int = 44100) -> bytes:
    """One trial's sound: a stereo WAV of three 200 Hz tones; tone ``quiet`` (1-3) is 6 dB quieter.

    Tone ``quiet % 3 + 1`` is at full level with its left channel inverted (antiphase); the other
    loud tone and the quiet one are in phase. Deterministic: the same trial is the same bytes.

    Raises
    ------
    ValueError
        ``quiet`` is not 1, 2 or 3, or the sample rate is below 8 kHz.
    """
    import soundfile as sf

    if quiet not in (1, 2, 3):
        raise ValueError(f"quiet must be 1, 2 or 3, got {quiet!r}")
    if sample_rate < 8000:
        raise ValueError(f"sample rate {sample_rate} Hz is too low for the check (8000 Hz or more)")
    tone = _tone(sample_rate)
    gap = int(round(GAP_S * sample_rate))
    quiet_gain = 10 ** (QUIET_DB / 20)
    parts = []
    for index in (1, 2, 3):
        level = FULL_AMPLITUDE * (quiet_gain if index == quiet else 1.0)
        left_sign = -1.0 if index == antiphase_tone(quiet) else 1.0
        parts.append(np.stack([left_sign * level * tone, level * tone], axis=1))
        if index < 3:
            parts.append(np.zeros((gap, 2)))
    buffer = io.BytesIO()
    sf.write(buffer, np.concatenate(parts), sample_rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()
