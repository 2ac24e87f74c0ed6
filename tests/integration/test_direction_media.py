"""Direction analysis of the real field recordings in ../shared/media (stereo MP3, mono WAV)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from cli.audio_cmds import direction_json
from workbench.audio import direction
from workbench.audio.loader import audio_info, load_audio

pytestmark = pytest.mark.integration


def test_stereo_mp3_as_binaural_and_as_panorama(shared_dir: Path) -> None:
    path = shared_dir / "media" / "agl1k_case4_berlin_blackbird.mp3"
    info = audio_info(path)
    binaural = direction.analyze_file(path, layout="binaural")
    frames = binaural.frames
    # One frame per 100 ms of the whole file, streamed in blocks. This MP3 has no Xing header,
    # so its header only estimates the length (9,633 frames too many): count what decodes.
    decoded_frames = load_audio(path).samples.shape[0]
    assert decoded_frames < info.frames
    assert len(frames.t) == decoded_frames // round(0.1 * info.sample_rate)
    assert frames.t[-1] <= info.duration_s
    lateral = frames.lateral_deg
    assert np.isfinite(lateral).mean() > 0.9
    assert np.nanmax(np.abs(lateral)) <= 90.0
    rows = direction_json(binaural)["frames"]  # what `aglw direction --json` prints
    assert len(rows) == len(frames.t)
    for frame in rows:
        if frame["oclock"] is not None:
            assert frame["oclock"] == direction.oclock(frame["lateral_deg"])
            assert frame["oclock_mirror"] == direction.oclock_mirror(frame["oclock"])
    assert binaural.peaks
    assert all(-90.0 <= peak.lateral_deg <= 90.0 for peak in binaural.peaks)
    assert sum(peak.weight for peak in binaural.peaks) <= 1.0 + 1e-9

    panorama = direction.analyze_file(path)
    assert panorama.layout == "stereo"
    indices = [value for value in panorama.frames.panorama_index.tolist() if math.isfinite(value)]
    assert len(indices) == len(panorama.frames.t)
    assert all(-1.0 <= value <= 1.0 for value in indices)
    assert np.isnan(panorama.frames.lateral_deg).all()  # a level panorama has no angle
    ild = [value for value in panorama.frames.ild_db.tolist() if math.isfinite(value)]
    assert ild and all(math.isfinite(value) for value in ild)


def test_mono_recording_has_no_direction(shared_dir: Path) -> None:
    path = shared_dir / "media" / "efficientat_metro_station_paris.wav"
    with pytest.raises(direction.NoDirectionInformation, match="mono clips carry no direction information"):
        direction.analyze_file(path)
