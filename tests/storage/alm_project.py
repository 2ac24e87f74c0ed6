"""A small project with synthetic audio per clip, and an ``alm.toml`` fit for tests (fast time-outs, no waits)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from workbench.config import config_dir

TEST_ALM_TOML = """\
version = 1
[providers.openai]
timeout_s = {timeout}
max_retries = 3
backoff_s = 0
max_inline_audio_mb = 20
batch_discount = 0.5
[providers.openai-compatible]
timeout_s = {timeout}
max_retries = 3
backoff_s = 0
[providers.gemini]
timeout_s = {timeout}
max_retries = 3
backoff_s = 0
max_inline_audio_mb = {gemini_inline_mb}
batch_discount = 0.5
[models."fake-audio-model"]
provider = "openai-compatible"
price_input = 2.0
price_audio_input = 40.0
price_output = 10.0
audio_tokens_per_second = 10
[models."gemini-fake"]
provider = "gemini"
price_input = 0.30
price_audio_input = 1.0
price_output = 2.5
audio_tokens_per_second = 32
structured_output = true
"""


def write_alm_config(*, timeout: float = 1.0, gemini_inline_mb: float = 20) -> Path:
    """Write the test ``alm.toml`` into the (per-test) configuration folder."""
    path = config_dir() / "alm.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEST_ALM_TOML.format(timeout=timeout, gemini_inline_mb=gemini_inline_mb), encoding="utf-8")
    return path


def write_tone(path: Path, index: int, seconds: float = 0.05, rate: int = 8000) -> Path:
    """A short WAV whose bytes differ per ``index`` (the fake servers tell clips apart by audio hash)."""
    t = np.arange(int(seconds * rate)) / rate
    sf.write(path, (0.2 * np.sin(2 * np.pi * (200 + 37 * index) * t)).astype("float32"), rate)
    return path


@dataclass
class AlmProject:
    store: object
    db: Path
    media: Path
    keys: list[str]

    def audio(self, key: str) -> Path:
        return self.media / f"{key}.wav"


def make_project(tmp_path: Path, n: int = 6) -> AlmProject:
    """A project of ``n`` clips (AGL1K CSV shape) whose recordings are linked synthetic tones."""
    from storage import open_store
    from tests.storage.test_import_dataset import clip_row, write_csv
    from workbench.importing.datasets import import_dataset

    media = tmp_path / "media"
    media.mkdir()
    rows = [clip_row(i, latitude=40 + i % 45, longitude=-3 - i % 170, country="Spain" if i % 2 else "France") for i in range(1, n + 1)]
    keys = [row[0] for row in rows]
    for i, key in enumerate(keys):
        write_tone(media / f"{key}.wav", i)
    csv = write_csv(tmp_path / "dataset.csv", rows)
    db = tmp_path / "project.sqlite"
    store = open_store(db)
    import_dataset(store, csv, media_root=media)
    return AlmProject(store, db, media, keys)
