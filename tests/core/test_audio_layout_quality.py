"""Layout detection rules (spatial.md) and quality metrics/flags (curation-model.md §1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.audio.layout import detect_layout
from workbench.audio.quality import (
    DEFAULT_THRESHOLDS,
    QualityMetrics,
    QualityThresholds,
    aci_percentile,
    quality_flags,
    quality_metrics,
)
from workbench.errors import InputError


@pytest.mark.parametrize(
    ("channels", "description", "expected"),
    [
        (1, None, "mono"),
        (1, "binaural walk", "mono"),
        (2, None, "stereo"),
        (2, "Market at dusk, recorded binaural with in-ear mics", "binaural"),
        (2, "Sennheiser MS setup on a pole", "ms"),
        (2, "M/S stereo", "ms"),
        (2, "XY pair of cardioids", "xy"),
        (2, "AB pair, 40 cm spacing", "ab"),
        (2, "spaced pair of omnis", "ab"),
        (2, "a bird sings at the abbey, xylophone busker", "stereo"),
        (4, None, "ambix"),
        (4, "B-format recording, FuMa order", "fuma"),
        (6, None, "stereo"),
    ],
)
def test_detect_layout(channels: int, description: str | None, expected: str) -> None:
    assert detect_layout(channels, description) == expected


def test_override_always_wins_and_is_validated() -> None:
    assert detect_layout(4, "binaural", override="FuMa") == "fuma"
    assert detect_layout(2, "binaural", override="stereo") == "stereo"
    with pytest.raises(InputError, match="unknown layout override 'quad'"):
        detect_layout(4, override="quad")
    with pytest.raises(InputError, match="0 channels"):
        detect_layout(0)


def test_metrics_of_a_known_sine() -> None:
    rate = 16000
    t = np.arange(rate * 2) / rate
    sine = (0.5 * np.sin(2 * np.pi * 1000 * t)).astype(np.float32)
    metrics = quality_metrics(np.stack([sine, sine], axis=1), rate)
    # RMS of a 0.5-amplitude sine: 0.5/sqrt(2) -> -9.03 dBFS.
    assert metrics.rms_dbfs == pytest.approx(20 * math.log10(0.5 / math.sqrt(2)), abs=0.01)
    assert metrics.clipping_ratio == 0.0
    assert metrics.spectral_flatness < 0.01
    assert metrics.aci > 0


def test_metrics_of_noise_silence_and_clipping() -> None:
    rate = 16000
    noise = np.random.default_rng(3).standard_normal(rate * 2).astype(np.float32) * 0.1
    assert quality_metrics(noise, rate).spectral_flatness > 0.5
    silent = quality_metrics(np.zeros((rate, 2), dtype=np.float32), rate)
    assert silent.rms_dbfs == -math.inf and silent.aci == 0.0 and silent.clipping_ratio == 0.0
    clipped = np.clip(noise * 30, -1.0, 1.0)
    ratio = float(np.mean(np.abs(clipped) >= 0.999))
    assert quality_metrics(clipped, rate).clipping_ratio == pytest.approx(ratio)
    assert ratio > 0.5
    # Opposite channels cancel in the mono mix, which is what the metrics look at.
    cancel = quality_metrics(np.stack([noise, -noise], axis=1), rate)
    assert cancel.rms_dbfs == -math.inf


def test_quality_flags_follow_the_thresholds() -> None:
    good = QualityMetrics(rms_dbfs=-20.0, spectral_flatness=0.1, clipping_ratio=0.0, aci=300.0)
    assert quality_flags(good, aci_p2=150.0) == []
    bad = QualityMetrics(rms_dbfs=-60.0, spectral_flatness=0.7, clipping_ratio=0.01, aci=100.0)
    assert quality_flags(bad, aci_p2=150.0) == ["low_level", "flat_spectrum", "clipping", "low_complexity"]
    assert quality_flags(bad, aci_p2=None) == ["low_level", "flat_spectrum", "clipping"]
    edge = QualityMetrics(rms_dbfs=-50.0, spectral_flatness=0.5, clipping_ratio=0.001, aci=150.0)
    assert quality_flags(edge, aci_p2=150.0) == []
    strict = QualityThresholds(min_rms_dbfs=-10.0)
    assert quality_flags(good, aci_p2=None, thresholds=strict) == ["low_level"]
    assert DEFAULT_THRESHOLDS.max_clipping_ratio == 0.001


def test_aci_percentile() -> None:
    pool = np.arange(1, 101, dtype=float)
    assert aci_percentile(pool) == pytest.approx(np.percentile(pool, 2))
    assert aci_percentile([math.nan, 5.0]) == 5.0
    assert aci_percentile([]) is None
