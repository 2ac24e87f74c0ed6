"""Fuzzing the loader: 1,000 mutated small files each give audio or an AudioError, promptly."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from workbench.audio.loader import AudioData, AudioError, load_audio

PER_FILE_LIMIT_S = 10.0
N_MUTANTS = 1000


def _seeds(tmp_path: Path) -> list[bytes]:
    rate = 8000
    t = np.arange(rate // 4) / rate
    tone = (0.4 * np.sin(2 * np.pi * 300 * t)).astype(np.float32)
    wav = tmp_path / "seed.wav"
    sf.write(wav, np.stack([tone, -tone], axis=1), rate, subtype="PCM_16")
    mp3 = tmp_path / "seed.mp3"
    sf.write(mp3, tone, rate, format="MP3")
    return [wav.read_bytes(), mp3.read_bytes()]


def _mutate(seed: bytes, rng: np.random.Generator) -> bytes:
    data = bytearray(seed)
    kind = rng.integers(0, 4)
    if kind == 0:  # bit flips anywhere
        for position in rng.integers(0, len(data), size=rng.integers(1, 24)):
            data[position] ^= 1 << int(rng.integers(0, 8))
    elif kind == 1:  # truncation
        data = data[: int(rng.integers(1, len(data)))]
    elif kind == 2:  # header damage: the first 64 bytes are where decoders trust numbers
        for position in rng.integers(0, min(64, len(data)), size=rng.integers(1, 8)):
            data[position] = int(rng.integers(0, 256))
    else:  # a random run of bytes overwritten, then truncated
        start = int(rng.integers(0, len(data)))
        length = int(rng.integers(1, 200))
        data[start : start + length] = bytes(rng.integers(0, 256, size=length, dtype=np.uint8))
        data = data[: int(rng.integers(len(data) // 2, len(data) + 1))]
    return bytes(data)


def _load_with_deadline(path: Path) -> tuple[str, object, float]:
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["result"] = load_audio(path)
        except BaseException as exc:  # noqa: BLE001 - the test classifies every outcome
            outcome["result"] = exc

    started = time.perf_counter()
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(PER_FILE_LIMIT_S)
    elapsed = time.perf_counter() - started
    if worker.is_alive():
        return "hang", None, elapsed
    return "done", outcome["result"], elapsed


@pytest.mark.timeout(240)
def test_mutated_files_give_audio_or_audio_error(tmp_path: Path) -> None:
    seeds = _seeds(tmp_path)
    rng = np.random.default_rng(20240601)
    decoded = errors = 0
    for index in range(N_MUTANTS):
        seed = seeds[index % len(seeds)]
        path = tmp_path / f"mutant_{index:04d}{('.wav', '.mp3')[index % 2]}"
        path.write_bytes(_mutate(seed, rng))
        status, result, elapsed = _load_with_deadline(path)
        assert status == "done", f"{path.name}: loading hung for more than {PER_FILE_LIMIT_S} s"
        if isinstance(result, AudioError):
            assert path.name in str(result), f"error does not name the file: {result}"
            errors += 1
        else:
            assert isinstance(result, AudioData), f"{path.name}: unexpected {type(result).__name__}: {result}"
            assert result.samples.dtype == np.float32 and result.samples.ndim == 2
            assert np.isfinite(result.samples).all()
            decoded += 1
        path.unlink()
    # Both outcomes must occur, or the mutations are not exercising the loader.
    assert decoded > 50 and errors > 50, (decoded, errors)
