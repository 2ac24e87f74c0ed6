"""Synthetic spatial scenes with ground truth (spatial-events.md "Test material").

Static and moving sources (white-noise bursts with short fades) encoded in first-order
Ambisonics with the ``spatial.md`` equations, plus diffuse noise at a chosen signal-to-noise
ratio; the same scene rendered binaurally (Woodworth ITD, far-ear attenuation, horizontal
plane). The ground truth is the list of events, written as a STARSS23 metadata CSV beside
the audio. Used by the tests, the benchmarks and the demo project.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workbench.audio.direction import ambix_steering
from workbench.audio.synth import diffuse_noise, moving_woodworth_binaural
from workbench.events.model import FRAME_S, STARSS23_CLASSES, SpatialEventData, frame_span, wrap_azimuth
from workbench.events.starss23 import events_to_rows, format_rows

_FADE_S = 0.01


@dataclass(frozen=True)
class SceneSource:
    """One sound source of a scene: a noise burst from a direction, optionally moving.

    ``degrees_per_second`` turns the azimuth counter-clockwise (negative: clockwise).
    """

    class_index: int
    onset_s: float
    offset_s: float
    azimuth_deg: float
    elevation_deg: float = 0.0
    degrees_per_second: float = 0.0
    source_index: int = 0
    distance_cm: float | None = None
    rms: float = 0.1

    def azimuth_at(self, t_s: np.ndarray | float) -> np.ndarray:
        """True azimuth at absolute times ``t_s`` (wrapped to [−180, 180))."""
        return (self.azimuth_deg + self.degrees_per_second * (np.asarray(t_s) - self.onset_s) + 180.0) % 360.0 - 180.0


@dataclass
class Scene:
    """A rendered scene: FOA (ambiX) and binaural audio of the same sources, and their events."""

    sample_rate: int
    foa: np.ndarray  # (frames, 4) ambiX SN3D
    binaural: np.ndarray  # (frames, 2) [left, right]
    sources: list[SceneSource]
    events: list[SpatialEventData] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return self.foa.shape[0] / self.sample_rate


def _burst(n: int, sample_rate: int, rng: np.random.Generator, rms: float) -> np.ndarray:
    signal = rng.standard_normal(n) * rms
    fade = min(n // 2, int(_FADE_S * sample_rate))
    if fade > 0:
        ramp = np.sin(np.linspace(0, math.pi / 2, fade)) ** 2
        signal[:fade] *= ramp
        signal[-fade:] *= ramp[::-1]
    return signal


def source_event(source: SceneSource, class_names: tuple[str, ...] = STARSS23_CLASSES) -> SpatialEventData:
    """The ground-truth event of a source: its direction at each 100 ms frame's centre, rounded to degrees."""
    first, n = frame_span(source.onset_s, source.offset_s)
    centres = (first + np.arange(n) + 0.5) * FRAME_S
    centres = np.clip(centres, source.onset_s, source.offset_s)
    azimuths = source.azimuth_at(centres)
    track = []
    for az in azimuths:
        entry: tuple[float, ...] = (float(round(wrap_azimuth(float(az)))), float(round(source.elevation_deg)))
        if entry[0] == -180.0:
            entry = (180.0, entry[1])
        if source.distance_cm is not None:
            entry = (*entry, float(round(source.distance_cm)))
        track.append(entry)
    return SpatialEventData(
        onset_s=round(first * FRAME_S, 6),
        offset_s=round((first + n) * FRAME_S, 6),
        class_name=class_names[source.class_index],
        track=tuple(track),
        source_index=source.source_index,
    )


def render_scene(
    sources: list[SceneSource],
    duration_s: float,
    *,
    sample_rate: int = 24_000,
    snr_db: float | None = 20.0,
    seed: int = 0,
) -> Scene:
    """Render ``sources`` to FOA and binaural audio with diffuse noise.

    Parameters
    ----------
    sources
        The sources; onsets and offsets should be multiples of 100 ms for exact ground truth.
    duration_s
        Scene length.
    sample_rate
        Sample rate in Hz (24 kHz as STARSS23).
    snr_db
        Level of each source's RMS over the diffuse noise's W-channel RMS (None: no noise).
    seed
        Random seed of the noise bursts and the diffuse field.

    Returns
    -------
    Scene
        Audio and ground-truth events (one per source).
    """
    rng = np.random.default_rng(seed)
    n_total = int(round(duration_s * sample_rate))
    foa = np.zeros((n_total, 4))
    binaural = np.zeros((n_total, 2))
    for source in sources:
        if not 0 <= source.onset_s < source.offset_s <= duration_s + 1e-9:
            raise ValueError(f"source span {source.onset_s}-{source.offset_s} s is outside the scene (0-{duration_s} s)")
        start = int(round(source.onset_s * sample_rate))
        stop = min(n_total, int(round(source.offset_s * sample_rate)))
        signal = _burst(stop - start, sample_rate, rng, source.rms)
        t = (start + np.arange(stop - start)) / sample_rate
        azimuth = source.azimuth_at(t) if source.degrees_per_second else np.full(t.shape, source.azimuth_deg)
        foa[start:stop] += signal[:, None] * ambix_steering(azimuth, source.elevation_deg)
        binaural[start:stop] += moving_woodworth_binaural(signal, sample_rate, azimuth)
    if snr_db is not None:
        noise_rms = max(s.rms for s in sources) / (10.0 ** (snr_db / 20.0)) if sources else 0.01
        foa += diffuse_noise(n_total, rng, rms=noise_rms)
        binaural += rng.standard_normal((n_total, 2)) * noise_rms
    events = [source_event(s) for s in sources]
    return Scene(sample_rate, foa, binaural, list(sources), events)


def random_static_scene(rng: np.random.Generator, *, duration_s: float = 2.0, snr_db: float = 10.0,
                        sample_rate: int = 24_000, max_elevation_deg: float = 60.0, seed: int = 0) -> Scene:
    """One static source in a random direction (uniform azimuth, |elevation| ≤ ``max_elevation_deg``)."""
    source = SceneSource(
        class_index=int(rng.integers(0, len(STARSS23_CLASSES))),
        onset_s=0.0,
        offset_s=duration_s,
        azimuth_deg=float(rng.uniform(-180.0, 180.0)),
        elevation_deg=float(rng.uniform(-max_elevation_deg, max_elevation_deg)),
    )
    return render_scene([source], duration_s, sample_rate=sample_rate, snr_db=snr_db, seed=seed)


def write_scene(scene: Scene, folder: str | Path, name: str) -> dict[str, Path]:
    """Write ``NAME_foa.wav`` (ambiX, 4 channels), ``NAME_binaural.wav`` and ``NAME.csv`` (STARSS23 ground truth)."""
    import soundfile as sf

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    peak = max(1e-9, float(np.abs(scene.foa).max()), float(np.abs(scene.binaural).max()))
    scale = 0.9 / peak if peak > 0.9 else 1.0
    paths = {
        "foa": folder / f"{name}_foa.wav",
        "binaural": folder / f"{name}_binaural.wav",
        "csv": folder / f"{name}.csv",
    }
    sf.write(paths["foa"], (scene.foa * scale).astype(np.float32), scene.sample_rate, subtype="PCM_16")
    sf.write(paths["binaural"], (scene.binaural * scale).astype(np.float32), scene.sample_rate, subtype="PCM_16")
    rows, has_distance = events_to_rows(scene.events)
    paths["csv"].write_text(format_rows(rows, has_distance), encoding="utf-8")
    return paths
