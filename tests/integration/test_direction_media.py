"""Direction analysis of the real field recordings in ../shared/media (stereo MP3, mono WAV)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from workbench.audio import direction
from workbench.audio.loader import audio_info, load_audio

pytestmark = pytest.mark.integration


def test_stereo_mp3_as_binaural_and_as_panorama(shared_dir: Path) -> None:
    path = shared_dir / "media" / "agl1k_case4_berlin_blackbird.mp3"
    info = audio_info(path)
    binaural = direction.analyze_direction(path, layout="binaural")
    frames = binaural["frames"]
    # One frame per 100 ms of the whole file, streamed in blocks. This MP3 has no Xing header,
    # so its header only estimates the length (9,633 frames too many): count what decodes.
    decoded_frames = load_audio(path).samples.shape[0]
    assert decoded_frames < info.frames
    assert len(frames) == decoded_frames // round(0.1 * info.sample_rate)
    assert frames[-1]["t"] <= info.duration_s
    lateral = np.array([np.nan if f["lateral_deg"] is None else f["lateral_deg"] for f in frames])
    assert np.isfinite(lateral).mean() > 0.9
    assert np.nanmax(np.abs(lateral)) <= 90.0
    for frame in frames:
        if frame["oclock"] is not None:
            assert frame["oclock"] == direction.oclock(frame["lateral_deg"])
            assert frame["oclock_mirror"] == direction.oclock_mirror(frame["oclock"])
    assert binaural["peaks"]
    assert sum(peak["weight"] for peak in binaural["peaks"]) <= 1.0 + 1e-9

    panorama = direction.analyze_direction(path)
    assert panorama["layout"] == "stereo"
    indices = [f["panorama_index"] for f in panorama["frames"] if f["panorama_index"] is not None]
    assert len(indices) == len(panorama["frames"])
    assert all(-1.0 <= value <= 1.0 for value in indices)
    ild = [f["ild_db"] for f in panorama["frames"] if f["ild_db"] is not None]
    assert ild and all(math.isfinite(value) for value in ild)


def test_mono_recording_has_no_direction(shared_dir: Path) -> None:
    path = shared_dir / "media" / "efficientat_metro_station_paris.wav"
    with pytest.raises(direction.NoDirectionInformation, match="mono clips carry no direction information"):
        direction.analyze_direction(path)
