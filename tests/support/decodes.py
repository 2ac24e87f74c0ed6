"""A spy on audio decoding: which files were decoded, and how many times.

A decode is a ``soundfile.SoundFile`` handle that frames were read from (probing a header with
``soundfile.info`` reads none), or one call of the loader's librosa/audioread fallback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import soundfile as sf


class DecodeCounter:
    """Counts decodes per file name while installed with :func:`count_decodes`."""

    def __init__(self) -> None:
        # The handles themselves are kept (closed, but alive) so that one cannot be mistaken
        # for a later one that reuses its id().
        self.handles: list[tuple[sf.SoundFile, str]] = []
        self.fallbacks: list[str] = []

    def of(self, path: str | Path) -> int:
        """How many times ``path`` was decoded."""
        name = Path(path).name
        return sum(1 for _, seen in self.handles if Path(seen).name == name) + self.fallbacks.count(name)

    def reset(self) -> None:
        self.handles.clear()
        self.fallbacks.clear()


def count_decodes(monkeypatch: pytest.MonkeyPatch) -> DecodeCounter:
    """Install the spy for the rest of the test."""
    import workbench.audio.loader as loader
    import workbench.audio.streaming as streaming

    counter = DecodeCounter()
    real_read = sf.SoundFile.read
    real_fallback = loader.decode_with_fallback  # the one other decoder

    def read(self: sf.SoundFile, *args: Any, **kwargs: Any) -> Any:
        if not any(handle is self for handle, _ in counter.handles):
            counter.handles.append((self, str(self.name)))
        return real_read(self, *args, **kwargs)

    def fallback(path: Path) -> Any:
        counter.fallbacks.append(Path(path).name)
        return real_fallback(path)

    monkeypatch.setattr(sf.SoundFile, "read", read)
    monkeypatch.setattr(loader, "decode_with_fallback", fallback)
    monkeypatch.setattr(streaming, "decode_with_fallback", fallback)
    return counter
