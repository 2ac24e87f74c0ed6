"""A project of synthetic stereo clips on any store (SQLite file or PostgreSQL URL), with a web study.

For the server's kill and two-process tests and benchmark W1: N clips of noise and a tone with an
inter-aural level difference, spread over continents and speech, imported as AGL1K rows with
their media root, and one web study over all of them.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

COLUMNS = ["key", "short_key", "longitude", "latitude", "altitude", "description", "title", "mp3name", "mp3seconds",
           "city", "country", "continent", "human_sounds", "animal", "music", "natural_sounds",
           "channel_environment_and_background", "sounds_of_things", "source_ambiguous_sounds"]
# As published: "channel_environment_and_background" names two values (channel, environment), so rows have 20.
PLACES = [("Lisbon", "Portugal", "Europe", 38.72, -9.14), ("Nairobi", "Kenya", "Africa", -1.29, 36.82),
          ("Lima", "Peru", "South America", -12.05, -77.04), ("Osaka", "Japan", "Asia", 34.69, 135.50),
          ("Perth", "Australia", "Oceania", -31.95, 115.86), ("Denver", "United States", "North America", 39.74, -104.99),
          ("Tromso", "Norway", "Europe", 69.65, 18.96), ("Dakar", "Senegal", "Africa", 14.72, -17.47)]


def write_clip(path: Path, seed: int, seconds: float, sample_rate: int) -> None:
    """A stereo WAV: low-passed noise and a slowly pulsing tone, louder on the left."""
    import numpy as np
    import soundfile as sf

    rng = np.random.default_rng(seed)
    n = int(seconds * sample_rate)
    t = np.arange(n) / sample_rate
    noise = np.convolve(rng.standard_normal(n), np.ones(8) / 8, mode="same") * 0.05
    tone = 0.1 * np.sin(2 * math.pi * (220 + 40 * seed) * t) * (0.5 + 0.5 * np.sin(2 * math.pi * 0.25 * t))
    left, right = noise + tone, 0.6 * noise + 0.8 * tone + 0.02 * rng.standard_normal(n)
    sf.write(str(path), np.stack([left, right], axis=1).astype("float32"), sample_rate, subtype="PCM_16")


def build(store, folder: Path, study: str, *, n_clips: int, per_participant: int, target_per_clip: int,  # type: ignore[no-untyped-def]
          seconds: float = 5.0, sample_rate: int = 44100, headphone_check: str = "record",
          completion_code: str | None = "DONE") -> None:
    """Import ``n_clips`` synthetic clips into ``store`` (media under ``folder``) and create ``study``."""
    from workbench.importing import import_dataset
    from workbench.media import link_media
    from workbench.studies import web_study

    media = folder / "media"
    media.mkdir(parents=True)
    table = folder / "synthetic.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for i in range(n_clips):
            city, country, continent, lat, lon = PLACES[i % len(PLACES)]
            name = f"syn_{i:02d}.wav"
            write_clip(media / name, i, seconds, sample_rate)
            writer.writerow([f"syn_{i:02d}", str(i), lon + i * 0.01, lat, 10.0, "a synthetic scene",
                             f"{city} scene {i}", name, seconds, city, country, continent, float(i % 2),
                             0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    import_dataset(store, table, format="agl1k", media_root=media)
    link_media(store)
    web_study.create_study(store, study, per_participant=per_participant, target_per_clip=target_per_clip,
                           headphone_check=headphone_check, completion_code=completion_code)
