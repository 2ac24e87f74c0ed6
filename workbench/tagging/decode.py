"""The tagger's input: a recording decoded to mono at 32 kHz (no torch here: decoding processes import only this)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.audio.loader import load_audio
from workbench.errors import AglwError

SAMPLE_RATE = 32_000  # EfficientAT's input rate; the front end (preprocess.py) takes it from here


def decode_for_tagging(path: str | Path) -> np.ndarray:
    """The recording as mono at 32 kHz (every tagging path decodes through this)."""
    audio = load_audio(path, sample_rate=SAMPLE_RATE, mono=True)
    return audio.samples[:, 0]


def decode_or_error(path: str) -> tuple[np.ndarray | None, str]:
    """``(samples, '')`` or ``(None, why)``: what a decoding process sends back (plain, picklable)."""
    try:
        return np.ascontiguousarray(decode_for_tagging(path)), ""
    except (AglwError, ValueError, OSError) as exc:
        return None, str(exc) or type(exc).__name__
