"""EfficientAT architecture sizes, the Kaldi mel front end, the windowing rules and the tagger's
fast paths (oneDNN graph, worker threads), which must give the eager model's numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from workbench.tagging import inference, preprocess
from workbench.tagging.inference import (
    COLUMN_FRAMES,
    OPTIMISE_AFTER_WINDOWS,
    AudioTagger,
    clip_window_starts,
    timeline_pooling,
)
from workbench.tagging.model import build_model, expected_manifest, make_divisible, parameter_count, width_of_arch
from workbench.tagging.preprocess import MIN_SAMPLES, LogMelFrontEnd, kaldi_mel_banks, log_mel, n_frames


@pytest.mark.parametrize(
    ("width", "params", "entries"),
    [
        (0.1, 123_783, 294),
        (0.2, 324_695, 312),
        (0.4, 983_599, 312),
        (0.5, 1_431_239, 312),
        (1.0, 4_876_831, 312),
        (2.0, 17_909_287, 312),
        (3.0, 39_086_367, 312),
        (4.0, 68_427_303, 312),
    ],
)
def test_width_gives_exact_parameter_count_and_state_dict_size(width: float, params: int, entries: int) -> None:
    assert parameter_count(width) == params
    assert len(expected_manifest(width)) == entries


def test_small_model_built_for_real_matches_meta_count() -> None:
    model = build_model("mn01")
    assert sum(p.numel() for p in model.parameters()) == 123_783
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == expected_manifest("mn01")


def test_make_divisible_and_arch_names() -> None:
    assert make_divisible(6.4) == 8
    assert make_divisible(25.6) == 24
    assert make_divisible(18.4) == 24  # 16 would lose more than 10 %
    assert width_of_arch("mn04") == 0.4 and width_of_arch("MN40") == 4.0
    with pytest.raises(ValueError, match="unknown architecture"):
        width_of_arch("resnet50")


def test_kaldi_mel_banks_shape_and_geometry() -> None:
    banks = kaldi_mel_banks().numpy()
    assert banks.shape == (128, 513)
    assert np.all(banks[:, 512] == 0.0)
    assert banks.min() >= 0.0 and banks.max() <= 1.0
    peaks = banks.argmax(axis=1)
    assert np.all(np.diff(peaks) >= 0)  # centres rise with the band index
    # nothing above 15 kHz: bin 480 is 15 000 Hz at 32 kHz / 1024
    assert np.all(banks[:, 481:] == 0.0)


def test_front_end_frame_count_and_values() -> None:
    assert n_frames(320_000) == 1000
    silence = log_mel(np.zeros(32_000, dtype=np.float32))
    assert silence.shape == (128, 100)
    assert np.allclose(silence, (np.log(1e-5) + 4.5) / 5.0)
    tone = np.sin(2 * np.pi * 1000 * np.arange(32_000) / 32_000).astype(np.float32)
    mel = log_mel(tone)
    # the energy sits in the band with the most weight on FFT bin 32 (1 kHz at 31.25 Hz per bin)
    assert int(mel[:, 50].argmax()) == int(kaldi_mel_banks()[:, 32].argmax())
    assert mel[:, 50].max() > silence.max() + 3.0


def test_clip_windows_rule() -> None:
    assert clip_window_starts(1000, 320_000) is None  # exactly 10 s: one window, whole clip
    # 25 s: windows every 5 s, last aligned to the end
    assert clip_window_starts(n_frames(800_000), 800_000) == [0, 500, 1000, 1500]
    assert clip_window_starts(n_frames(720_000), 720_000) == [0, 500, 1000, 1250]


def _columns_of(weights: np.ndarray, row: int) -> list[int]:
    return np.flatnonzero(weights[row]).tolist()


def test_timeline_pooling_rule_for_one_window() -> None:
    # 5 s: one window of 501 frames -> 16 columns centred on frames 0, 32, ..., 480
    weights = timeline_pooling([0], n_frames(5 * 32_000), 16, 5.0)
    assert weights.shape == (5, 16)
    assert _columns_of(weights, 0) == [0, 1, 2, 3]  # frames 0, 32, 64, 96 lie in [0, 100)
    assert _columns_of(weights, 1) == [4, 5, 6]  # 128, 160, 192
    assert _columns_of(weights, 4) == [13, 14, 15]  # 416, 448, 480
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-6)
    # 3.1 s: the last (partial) second [300, 310) holds no column centre; it takes the nearest (288)
    weights = timeline_pooling([0], 310, 10, 3.1)
    assert weights.shape == (4, 10)
    assert _columns_of(weights, 3) == [9] and weights[3, 9] == 1.0


def test_timeline_pooling_rule_picks_the_most_central_window() -> None:
    starts = [0, 500, 1000, 1500]  # 25 s, four 10 s windows every 5 s
    weights = timeline_pooling(starts, 1000, 32, 25.0)
    assert weights.shape == (25, 4 * 32)
    # second 7 (frames 700-800) is as central in window 0 as in window 1: the earlier one wins
    assert _columns_of(weights, 7) == [22, 23, 24]
    # second 12 (1200-1300): windows 1 and 2 tie, window 1 (start 500) gives columns 22-24
    assert _columns_of(weights, 12) == [32 + 22, 32 + 23, 32 + 24]
    # second 13 (1300-1400) is most central in window 2 (start 1000): columns 10-12
    assert _columns_of(weights, 13) == [64 + 10, 64 + 11, 64 + 12]
    # second 24 (2400-2500) belongs to the last window (start 1500): columns 29-31
    assert _columns_of(weights, 24) == [96 + 29, 96 + 30, 96 + 31]
    for row in range(25):
        window = _columns_of(weights, row)[0] // 32
        centres = starts[window] + COLUMN_FRAMES * (np.array(_columns_of(weights, row)) % 32)
        assert np.all((centres >= 100 * row) & (centres < 100 * (row + 1)))
    with pytest.raises(ValueError, match="at least one window"):
        timeline_pooling([], 1000, 32, 10.0)


def test_blocked_front_end_equals_one_pass_stft(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    wave = (0.3 * rng.standard_normal(2 * 32_000 + 123)).astype(np.float32)
    x = torch.from_numpy(wave)
    emphasized = x[1:] - 0.97 * x[:-1]
    window = torch.hann_window(800, periodic=False)
    spectrum = torch.stft(emphasized, 1024, hop_length=320, win_length=800, window=window, center=True, return_complex=True)
    expected = ((torch.log(kaldi_mel_banks() @ spectrum.abs().square() + 1e-5) + 4.5) / 5.0).numpy()
    monkeypatch.setattr(preprocess, "_BLOCK_FRAMES", 7)  # many blocks, a short last one
    front_end = LogMelFrontEnd()
    with torch.inference_mode():
        blocked = front_end(x[None])[0].numpy()
        threaded = front_end(x[None], block_map=lambda fn, firsts: [fn(f) for f in reversed(list(firsts))])[0].numpy()
    assert blocked.shape == expected.shape == (128, n_frames(wave.size))
    np.testing.assert_allclose(blocked, expected, atol=1e-4, rtol=0)
    np.testing.assert_array_equal(threaded, blocked)  # block order does not matter


def test_front_end_needs_min_samples() -> None:
    assert log_mel(np.ones(MIN_SAMPLES, dtype=np.float32)).shape == (128, n_frames(MIN_SAMPLES))
    with pytest.raises(ValueError, match=f"at least {MIN_SAMPLES} samples"):
        log_mel(np.ones(MIN_SAMPLES - 1, dtype=np.float32))


def calibrated_model(arch: str = "mn01", seed: int = 0) -> torch.nn.Module:
    """A random model whose BatchNorm statistics come from log-mels of noise and tones, so its
    outputs depend on the input as a trained model's do (a fresh model's barely do)."""
    torch.manual_seed(seed)
    model = build_model(arch)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.momentum = None  # cumulative average over the calibration batches
    rng = np.random.default_rng(seed)
    t = np.arange(3 * 32_000) / 32_000
    mels = []
    for k in range(8):
        wave = rng.standard_normal(t.size) * 10 ** rng.uniform(-3, 0) + np.sin(2 * np.pi * 200 * (k + 1) * t)
        mels.append(log_mel(wave.astype(np.float32)))
    model.train()
    with torch.no_grad():
        model(torch.from_numpy(np.stack(mels))[:, None])
    return model.eval()


@pytest.fixture(scope="module")
def tiny_tagger() -> AudioTagger:
    return AudioTagger(calibrated_model(), batch_size=3, threads=2)


def _expected_timeline(model: torch.nn.Module, mel: torch.Tensor, starts: list[int], width: int, seconds: int) -> np.ndarray:
    """The timeline rule written out on the eager model (feature maps, column pooling, head)."""
    with torch.inference_mode():
        maps = [model.features(mel[None, None, :, s : s + width]) for s in starts]
        weights = torch.from_numpy(timeline_pooling(starts, width, maps[0].shape[3], seconds))
        rows = []
        for row in weights:
            pooled = sum(
                (m[0] * row[k * m.shape[3] : (k + 1) * m.shape[3]]).sum(dim=2).mean(dim=1) for k, m in enumerate(maps)
            )
            rows.append(torch.sigmoid(model.classifier[2:](pooled[None]))[0])
        return torch.stack(rows).numpy()


def test_short_clip_is_one_window_of_the_whole_mel(tiny_tagger: AudioTagger) -> None:
    rng = np.random.default_rng(1)
    wave = (0.1 * rng.standard_normal(7 * 32_000)).astype(np.float32)
    result = tiny_tagger.tag(wave)
    assert result.n_windows == 1
    assert result.timeline is not None and result.timeline.shape == (7, 527)
    reference_model = calibrated_model()
    with torch.inference_mode():
        mel = torch.from_numpy(log_mel(wave))
        expected = torch.sigmoid(reference_model(mel[None, None])[0])[0].numpy()
    np.testing.assert_allclose(result.probabilities, expected, atol=1e-6)
    assert result.top(3) == list(np.argsort(-expected)[:3])
    np.testing.assert_allclose(result.timeline, _expected_timeline(reference_model, mel, [0], mel.shape[1], 7), atol=1e-5)
    assert np.abs(result.timeline[0] - result.timeline[3]).max() > 1e-4  # the seconds differ


def test_long_clip_is_max_over_windows(tiny_tagger: AudioTagger) -> None:
    rng = np.random.default_rng(2)
    wave = (0.01 * rng.standard_normal(23 * 32_000)).astype(np.float32)
    wave[15 * 32_000 :] += np.sin(2 * np.pi * 3000 * np.arange(8 * 32_000) / 32_000).astype(np.float32)
    result = tiny_tagger.tag(wave)
    assert result.n_windows == 4
    assert result.timeline.shape == (23, 527)
    mel = torch.from_numpy(log_mel(wave))
    starts = clip_window_starts(mel.shape[1], wave.size)
    assert starts == [0, 500, 1000, 1300]
    windows = torch.stack([mel[:, s : s + 1000] for s in starts])
    reference_model = calibrated_model()
    with torch.inference_mode():
        per_window = torch.sigmoid(reference_model(windows[:, None])[0]).numpy()
    np.testing.assert_allclose(result.probabilities, per_window.max(axis=0), atol=1e-6)
    assert np.abs(per_window[0] - per_window[-1]).max() > 1e-3  # noise-only and tone windows differ
    np.testing.assert_allclose(result.timeline, _expected_timeline(reference_model, mel, starts, 1000, 23), atol=1e-5)
    assert np.abs(result.timeline[0] - result.timeline[-1]).max() > 1e-3


def test_fast_paths_give_the_eager_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    wave = (0.05 * rng.standard_normal(31 * 32_000)).astype(np.float32)
    wave[: 4 * 32_000] += np.sin(2 * np.pi * 700 * np.arange(4 * 32_000) / 32_000).astype(np.float32)
    model = calibrated_model(seed=1)
    threads_before = torch.get_num_threads()
    eager = AudioTagger(model, threads=1, optimise=False).tag(wave)
    fast_tagger = AudioTagger(model, threads=2, batch_size=16)
    assert not fast_tagger.optimised
    fast = fast_tagger.tag(wave)  # six windows: the optimised graph is built on the way
    assert fast_tagger.optimised and fast.n_windows == 6 >= OPTIMISE_AFTER_WINDOWS
    assert torch.get_num_threads() == threads_before  # the thread count is restored after the call
    np.testing.assert_allclose(fast.probabilities, eager.probabilities, atol=1e-5)
    np.testing.assert_allclose(fast.timeline, eager.timeline, atol=1e-5)
    fast_tagger.close()
    # without TorchScript (a future PyTorch) the tagger stays eager and gives the same numbers
    monkeypatch.setattr(torch.jit, "trace", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("no TorchScript")))
    fallback = AudioTagger(model, threads=2)
    np.testing.assert_allclose(fallback.tag(wave).probabilities, eager.probabilities, atol=1e-5)
    assert not fallback.optimised
    fallback.close()


def test_cpu_batches_stay_small(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    tagger = AudioTagger(calibrated_model(), batch_size=16, threads=1, optimise=False)
    original = tagger._run_trunk
    monkeypatch.setattr(tagger, "_run_trunk", lambda batch: seen.append(batch.shape[0]) or original(batch))
    tagger.logits(torch.zeros(5, 128, 1000))
    assert seen == [2, 2, 1] and max(seen) * 1000 <= inference.CPU_FRAMES_PER_PASS
    seen.clear()
    tagger.logits(torch.zeros(5, 128, 100))
    assert seen == [5]  # short windows fill the batch size


def test_rejects_unusable_waveforms(tiny_tagger: AudioTagger) -> None:
    with pytest.raises(ValueError, match="too short"):
        tiny_tagger.tag(np.zeros(1, dtype=np.float32))
    with pytest.raises(ValueError, match=f"too short to tag \\(513 samples; .* at least {MIN_SAMPLES}"):
        tiny_tagger.tag(np.zeros(MIN_SAMPLES - 1, dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        tiny_tagger.tag(np.array([0.0, np.nan] * 1000, dtype=np.float32))
    result = tiny_tagger.tag(np.zeros(MIN_SAMPLES, dtype=np.float32))  # 16 ms: one value
    assert result.timeline.shape == (1, 527) and np.isfinite(result.probabilities).all()
