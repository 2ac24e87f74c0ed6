"""Many clips through one tagger, the windows of several clips sharing each forward pass.

Tagging clip after clip leaves a GPU half idle: a 128 s clip is 25 windows, and every clip pays
its own kernel launches and a synchronisation. Here the 10 s windows of consecutive clips queue
up by width (every window of a long clip is 1 000 frames; a clip of at most 10 s is one window
of its own length) and run in passes of the tagger's :meth:`~AudioTagger.pass_size`; a clip's
result is pooled once all its windows are through, by the same
:meth:`~workbench.tagging.inference.AudioTagger.finish` as the per-clip path (same windows, same
max over windows, same timeline). Results come out in input order.

On CPU the per-clip path is the faster one (its passes are already as large as the caches
allow); this path exists for GPUs and is tested on CPU, where it gives the per-clip rows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np
import torch

from workbench.tagging.inference import (AudioTagger, DeviceResult, TagResult, checked_samples, clip_windows,
                                         results_to_host)

K = TypeVar("K")
# Windows queued (across widths) before the partly filled passes are run anyway: bounds the
# memory held by clips waiting for company, in passes.
_QUEUE_PASSES = 2


@dataclass(eq=False)
class _Clip(Generic[K]):
    key: K
    n_samples: int = 0
    starts: list[int] = field(default_factory=list)
    width: int = 0
    columns: list[torch.Tensor | None] = field(default_factory=list)
    error: ValueError | None = None
    result: DeviceResult | None = None

    @property
    def complete(self) -> bool:
        return self.error is not None or self.result is not None


def tag_many(tagger: AudioTagger, clips: Iterable[tuple[K, np.ndarray]], *,
             timeline: bool = True) -> Iterator[tuple[K, TagResult | ValueError]]:
    """Tag ``(key, mono 32 kHz waveform)`` pairs; yield ``(key, TagResult)`` or ``(key, ValueError)`` in order.

    A waveform that cannot be tagged (too short, not finite) yields its ValueError, as
    :meth:`AudioTagger.tag` would raise it; the others are unaffected.
    """
    with tagger._kernel_scope(), tagger._float32():
        pending: deque[_Clip[K]] = deque()
        queued: dict[int, list[tuple[_Clip[K], int, torch.Tensor]]] = {}
        for key, waveform in clips:
            clip: _Clip[K] = _Clip(key)
            pending.append(clip)
            try:
                samples = checked_samples(waveform)
                clip.n_samples = samples.size
                clip.starts, clip.width, windows = clip_windows(tagger.log_mel(samples), samples.size)
            except ValueError as exc:
                clip.error = exc
            else:
                clip.columns = [None] * len(clip.starts)
                queued.setdefault(clip.width, []).extend((clip, i, windows[i]) for i in range(len(clip.starts)))
                _run_full_passes(tagger, queued, timeline)
                if sum(len(q) for q in queued.values()) > _QUEUE_PASSES * _unit(tagger, max(queued)):
                    _run_all(tagger, queued, timeline)
            yield from _drain(pending)
        _run_all(tagger, queued, timeline)
        yield from _drain(pending)


def _unit(tagger: AudioTagger, width: int) -> int:
    """Windows handed to the tagger at once: a pass per worker thread (CPU), one pass on a GPU."""
    return tagger.pass_size(width) * max(1, tagger.threads)


def _run_full_passes(tagger: AudioTagger, queued: dict, timeline: bool) -> None:
    for width, windows in queued.items():
        unit = _unit(tagger, width)
        while len(windows) >= unit:
            _run(tagger, windows[:unit], timeline)
            del windows[:unit]


def _run_all(tagger: AudioTagger, queued: dict, timeline: bool) -> None:
    for windows in queued.values():
        if windows:
            _run(tagger, windows, timeline)
            windows.clear()


def _run(tagger: AudioTagger, windows: list[tuple[_Clip, int, torch.Tensor]], timeline: bool) -> None:
    """The windows through the network; every clip whose windows are now all through is pooled."""
    columns = tagger.feature_columns(torch.stack([w for _, _, w in windows]))
    done: dict[int, _Clip] = {}
    for (clip, index, _), clip_columns in zip(windows, columns):
        clip.columns[index] = clip_columns
        if all(c is not None for c in clip.columns):
            done[id(clip)] = clip
    for clip in done.values():
        clip.result = tagger.finish(torch.stack(clip.columns), clip.starts, clip.width, clip.n_samples, timeline)
        clip.columns = []  # the columns are pooled; let them go


def _drain(pending: deque) -> Iterator[tuple]:
    """Yield the leading complete clips, copying their results off the device together."""
    ready = []
    while pending and pending[0].complete:
        ready.append(pending.popleft())
    computed = results_to_host([c.result for c in ready if c.error is None])
    for clip in ready:
        yield clip.key, (clip.error if clip.error is not None else computed.pop(0))
