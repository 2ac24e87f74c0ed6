"""Open one clip for the review window, without Qt: decode once, hand the spectrogram over first,
then playback samples and the direction view (house rule 3: immutable request in, immutable
result out; the caller's thread runs it and drops stale generations).

The file is decoded once: the blocks fill the playback buffer and feed the spectrogram pyramid
and the direction analysis as they arrive. The spectrogram is handed over as soon as it is ready
(stage ``spectrogram``); a cached one before the decode starts. The job then waits until the
caller says it is on screen (``resume``, at most :data:`RESUME_TIMEOUT_S`), so a decode does not
compete with that paint for the CPU. The direction analysis and the cache write start only then.

The file's content hash (the pyramid cache key) comes from the digest index
(:mod:`workbench.audio.digests`), so a clip opened in an earlier session finds its cache entry
without hashing the whole file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.audio.direction.view import (
    HEATMAP_BINS,
    DirectionImage,
    direction_image,
    no_direction_image,
    unavailable_note,
)
from workbench.audio.digests import file_digest, known_digest
from workbench.audio.spectrogram import SpectrogramParams, SpectrogramPyramid, WaveformEnvelope
from workbench.errors import AglwError

if TYPE_CHECKING:
    from workbench.audio.opening import OpenedAudio


class Cancelled(Exception):
    """The job was cancelled before it finished."""


@dataclass(frozen=True)
class AudioRequest:
    generation: int
    clip_id: int
    path: Path
    layout: str | None
    params: SpectrogramParams
    content_hash: str | None = None
    spacing_m: float | None = None


@dataclass(frozen=True)
class AudioResult:
    """A job's result; ``stage`` is ``spectrogram`` (pyramids only, shown at once) or ``complete``."""

    generation: int
    clip_id: int
    samples: Any = None
    sample_rate: int = 0
    pyramid: SpectrogramPyramid | None = None
    envelope: WaveformEnvelope | None = None
    direction: DirectionImage | None = None
    error: str | None = None
    stage: str = "complete"


RESUME_TIMEOUT_S = 0.5
def _direction_view(request: AudioRequest, opened: OpenedAudio) -> DirectionImage:
    """The direction view of an opened clip, or a note saying why there is none."""
    if opened.direction is None:
        n_channels = int(opened.audio.samples.shape[1])
        note = unavailable_note(request.layout, n_channels, request.spacing_m)
        return no_direction_image(note or f"No direction view: {opened.direction_note}")
    try:
        return direction_image(opened.direction)
    except (AglwError, ValueError) as exc:
        # The clip still plays; the direction view says what went wrong.
        return no_direction_image(f"No direction view: {exc}")


def load_clip_audio(
    request: AudioRequest,
    cancelled: threading.Event,
    partial: Callable[[AudioResult], None] | None = None,
    resume: threading.Event | None = None,
) -> AudioResult:
    """Compute what the player shows for one clip; raises Cancelled when asked to stop.

    The file is decoded once (:func:`workbench.audio.opening.open_audio`): its blocks fill
    the playback buffer and feed the spectrogram pyramid and the direction analysis as they
    arrive. The pyramid is handed to ``partial`` as soon as it is ready — at once when it is
    in the disk cache, else right after the last block — before the direction analysis has
    started. With ``resume``, the job then waits for it to be set (the spectrogram is on
    screen; at most :data:`RESUME_TIMEOUT_S`, or until cancelled) before it goes on: neither
    a cached clip's decode nor the direction analysis and the cache write compete with that
    paint, and the rest is never delivered before it.
    """
    from workbench.audio.opening import open_audio
    from workbench.audio.pyramid_cache import cached_pyramids, store_pyramids

    def checkpoint() -> None:
        if cancelled.is_set():
            raise Cancelled()

    try:
        checkpoint()
        digest = request.content_hash or known_digest(request.path)
        cached = cached_pyramids(digest, request.params) if digest is not None else None
        # digest None: never opened here with this size and mtime, so almost surely not cached.
        # The file is hashed for the cache entry once the spectrogram is on screen, not before.

        def spectrogram_ready(pyramid: SpectrogramPyramid, envelope: WaveformEnvelope) -> None:
            checkpoint()
            if partial is not None:
                partial(AudioResult(request.generation, request.clip_id, pyramid=pyramid, envelope=envelope,
                                    stage="spectrogram"))
            if partial is not None and resume is not None:
                # Until the spectrogram is on screen: a cached one's decode has not started yet
                # and waits; a computed one's direction analysis has not started either
                # (direction_after_spectrogram), nor has its cache write (or the hash for it).
                resume.wait(RESUME_TIMEOUT_S)
            if cached is None:  # kept even when the clip was left meanwhile: it was computed
                try:
                    key = digest if digest is not None else file_digest(request.path)
                    store_pyramids(key, pyramid, envelope, write_behind=True)
                except AglwError:
                    pass  # the file went away after it was read: nothing to cache
            checkpoint()

        opened = open_audio(
            request.path, layout=request.layout, spacing_m=request.spacing_m, params=request.params,
            cached=cached, heatmap_bins=HEATMAP_BINS, spectrogram_first=True, on_spectrogram=spectrogram_ready,
            direction_after_spectrogram=True, check_cancel=checkpoint,
        )
        checkpoint()
        direction = _direction_view(request, opened)
        checkpoint()
    except AglwError as exc:
        return AudioResult(request.generation, request.clip_id, error=str(exc))
    audio = opened.audio
    return AudioResult(
        request.generation, request.clip_id, audio.samples, audio.sample_rate, opened.pyramid, opened.envelope,
        direction,
    )
