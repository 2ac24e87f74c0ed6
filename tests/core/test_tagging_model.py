"""EfficientAT architecture sizes, the Kaldi mel front end and the windowing rules."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from workbench.tagging.inference import AudioTagger, clip_window_starts, timeline_window_starts
from workbench.tagging.model import build_model, expected_manifest, make_divisible, parameter_count, width_of_arch
from workbench.tagging.preprocess import kaldi_mel_banks, log_mel, n_frames


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


def test_timeline_windows_rule() -> None:
    starts, width = timeline_window_starts(n_frames(5 * 32_000), 5.0)
    assert width == 200
    assert starts == [0, 50, 150, 250, 300]
    starts, width = timeline_window_starts(n_frames(48_000), 1.5)
    assert width == 150 and starts == [0, 0]


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
    return AudioTagger(calibrated_model(), batch_size=3)


def test_short_clip_is_one_window_of_the_whole_mel(tiny_tagger: AudioTagger) -> None:
    rng = np.random.default_rng(1)
    wave = (0.1 * rng.standard_normal(7 * 32_000)).astype(np.float32)
    result = tiny_tagger.tag(wave)
    assert result.n_windows == 1
    assert result.timeline is not None and result.timeline.shape == (7, 527)
    reference_model = tiny_tagger.model
    with torch.inference_mode():
        mel = torch.from_numpy(log_mel(wave))[None, None]
        expected = torch.sigmoid(reference_model(mel)[0])[0].numpy()
    np.testing.assert_allclose(result.probabilities, expected, atol=1e-6)
    assert result.top(3) == list(np.argsort(-expected)[:3])


def test_long_clip_is_max_over_windows(tiny_tagger: AudioTagger) -> None:
    rng = np.random.default_rng(2)
    wave = (0.01 * rng.standard_normal(23 * 32_000)).astype(np.float32)
    wave[15 * 32_000 :] += np.sin(2 * np.pi * 3000 * np.arange(8 * 32_000) / 32_000).astype(np.float32)
    result = tiny_tagger.tag(wave)
    assert result.n_windows == 4
    assert result.timeline.shape == (23, 527)
    mel = torch.from_numpy(log_mel(wave))
    starts = clip_window_starts(mel.shape[1], wave.size)
    windows = torch.stack([mel[:, s : s + 1000] for s in starts])
    per_window = torch.sigmoid(tiny_tagger.logits(windows)).numpy()
    np.testing.assert_allclose(result.probabilities, per_window.max(axis=0), atol=1e-6)
    assert np.abs(per_window[0] - per_window[-1]).max() > 1e-3  # noise-only and tone windows differ
    assert np.abs(result.timeline[0] - result.timeline[-1]).max() > 1e-3


def test_rejects_unusable_waveforms(tiny_tagger: AudioTagger) -> None:
    with pytest.raises(ValueError, match="too short"):
        tiny_tagger.tag(np.zeros(1, dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        tiny_tagger.tag(np.array([0.0, np.nan, 0.0], dtype=np.float32))
