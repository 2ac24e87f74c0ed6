"""Windows of many clips per pass (the GPU path) give the per-clip results, in order, on CPU."""

from __future__ import annotations

import numpy as np
import pytest

from tests.core.test_tagging_model import calibrated_model
from workbench.tagging.batched import tag_many
from workbench.tagging.inference import AudioTagger

# Lengths in seconds: one window of its own width, exactly 10 s (a full-width single window), long
# clips with odd and even window counts, a clip too short to tag, and NaN audio.
LENGTHS = [3.5, 27.3, 12.0, 10.0, 61.2, 0.01, 44.4, 10.0, None]


def _clips() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    clips = []
    for i, seconds in enumerate(LENGTHS):
        if seconds is None:
            wave = np.full(32_000, np.nan, dtype=np.float32)
        else:
            n = int(seconds * 32_000)
            t = np.arange(n) / 32_000
            wave = (0.05 * rng.standard_normal(n) + np.sin(2 * np.pi * 300 * (i + 1) * t) * (t > seconds / 2)).astype(np.float32)
        clips.append((f"c{i}", wave))
    return clips


def _per_clip(tagger: AudioTagger, clips: list[tuple[str, np.ndarray]]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for key, wave in clips:
        try:
            out.append((key, tagger.tag(wave)))
        except ValueError as exc:
            out.append((key, exc))
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_batched_equals_per_clip_exactly_when_the_passes_are_the_same_size(threads: int) -> None:
    """One window per pass on both sides: every window meets the same kernels, so the numbers are equal
    to the last bit, and what is tested is the scheduling (queues by width, pooling, order, errors)."""
    model = calibrated_model(seed=2)
    clips = _clips()
    expected = _per_clip(AudioTagger(model, batch_size=1, threads=threads, optimise=False), clips)
    got = list(tag_many(AudioTagger(model, batch_size=1, threads=threads, optimise=False), iter(clips)))
    assert [k for k, _ in got] == [k for k, _ in clips]  # input order, errors in place
    for (key, result), (_, reference) in zip(got, expected):
        if isinstance(reference, ValueError):
            assert isinstance(result, ValueError) and str(result) == str(reference), key
            continue
        assert result.n_windows == reference.n_windows and result.duration_s == reference.duration_s
        np.testing.assert_array_equal(result.probabilities, reference.probabilities, err_msg=key)
        np.testing.assert_array_equal(result.timeline, reference.timeline, err_msg=key)


def test_windows_of_several_clips_share_a_pass_and_pool_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """With bigger passes the windows of consecutive clips share them; a window computed in a pass of
    another size may differ in the last float bit (the kernels differ), nothing more."""
    model = calibrated_model(seed=2)
    clips = _clips()
    expected = dict(_per_clip(AudioTagger(model, batch_size=16, threads=1, optimise=False), clips))
    tagger = AudioTagger(model, batch_size=16, threads=1, optimise=False)
    passes: list[int] = []
    run = tagger._run_trunk
    monkeypatch.setattr(tagger, "_run_trunk", lambda batch: passes.append(batch.shape[0]) or run(batch))
    got = dict(tag_many(tagger, clips))
    n_windows = sum(r.n_windows for r in got.values() if not isinstance(r, ValueError))
    assert sum(passes) == n_windows  # every window once
    for key, result in got.items():
        if isinstance(result, ValueError):
            assert str(result) == str(expected[key])
            continue
        assert result.n_windows == expected[key].n_windows
        np.testing.assert_allclose(result.probabilities, expected[key].probabilities, rtol=0, atol=1e-6)
        np.testing.assert_allclose(result.timeline, expected[key].timeline, rtol=0, atol=1e-6)
    # The 27.3 s clip has 5 windows: its fifth shares a pass with the 12 s clip's first.
    assert max(passes) == 2 and passes.count(2) >= (n_windows - 3) // 2
