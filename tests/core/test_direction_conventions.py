"""Direction conventions (spatial.md): o'clock sectors, mirrors, FuMa/N3D conversions, signs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.audio import direction, synth


@pytest.mark.parametrize(
    ("azimuth_deg", "hour"),
    [(0, 12), (90, 9), (-90, 3), (180, 6), (-180, 6), (30, 11), (-30, 1), (120, 8), (-150, 5), (60, 10),
     (-60, 2), (150, 7), (14, 12), (-16, 1), (359, 12), (-14.9, 12), (-15, 1)],
)
def test_oclock_sectors(azimuth_deg: float, hour: int) -> None:
    assert direction.oclock(azimuth_deg) == hour


def test_source_on_the_left_is_nine_oclock() -> None:
    assert direction.oclock(90.0) == 9


@pytest.mark.parametrize(
    ("hour", "mirror"),
    [(12, 6), (6, 12), (1, 5), (5, 1), (2, 4), (4, 2), (11, 7), (7, 11), (10, 8), (8, 10), (3, None), (9, None)],
)
def test_oclock_mirror_table(hour: int, mirror: int | None) -> None:
    assert direction.oclock_mirror(hour) == mirror


def test_oclock_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        direction.oclock_mirror(13)
    with pytest.raises(ValueError):
        direction.oclock(float("nan"))


def test_plane_wave_encoding_matches_the_ambix_equations() -> None:
    signal = np.array([1.0, -2.0, 0.5])
    encoded = synth.encode_plane_wave(signal, 90.0, 0.0)
    # ambiX [W, Y, Z, X]: a source on the left has Y = +s and X = 0.
    np.testing.assert_allclose(encoded[:, 0], signal)
    np.testing.assert_allclose(encoded[:, 1], signal, atol=1e-12)
    np.testing.assert_allclose(encoded[:, 2:], 0.0, atol=1e-12)
    up = synth.encode_plane_wave(signal, 0.0, 90.0)
    np.testing.assert_allclose(up[:, 2], signal, atol=1e-12)


def test_fuma_round_trip_and_scaling() -> None:
    ambix = synth.encode_plane_wave(np.array([1.0, 2.0]), 30.0, 10.0)
    fuma = direction.ambix_to_fuma(ambix)
    np.testing.assert_allclose(fuma[:, 0], ambix[:, 0] / math.sqrt(2))
    np.testing.assert_allclose(fuma[:, 1], ambix[:, 3])  # X
    np.testing.assert_allclose(fuma[:, 2], ambix[:, 1])  # Y
    np.testing.assert_allclose(fuma[:, 3], ambix[:, 2])  # Z
    np.testing.assert_allclose(direction.fuma_to_ambix(fuma), ambix)
    np.testing.assert_allclose(synth.encode_plane_wave(np.array([1.0, 2.0]), 30.0, 10.0, fmt="fuma"), fuma)


def test_n3d_scales_first_order_by_sqrt3() -> None:
    sn3d = np.array([[1.0, 0.5, -0.25, 2.0]])
    np.testing.assert_allclose(direction.n3d_from_sn3d(sn3d), [[1.0, 0.5 * math.sqrt(3), -0.25 * math.sqrt(3), 2.0 * math.sqrt(3)]])


def test_foa_helpers_reject_wrong_shapes() -> None:
    with pytest.raises(ValueError, match=r"\(frames, 4\)"):
        direction.fuma_to_ambix(np.zeros((10, 2)))


def test_woodworth_itd_values_and_inverse() -> None:
    assert direction.woodworth_itd(0.0) == 0.0
    maximum = direction.woodworth_itd(math.pi / 2)
    assert maximum == pytest.approx(0.0875 / 343 * (math.pi / 2 + 1))
    assert 0.00065 < maximum < 0.00066
    lateral = np.radians(np.linspace(-89.0, 89.0, 179))
    np.testing.assert_allclose(direction.lateral_from_itd_woodworth(direction.woodworth_itd(lateral)), lateral, atol=1e-4)
    assert direction.lateral_from_itd_woodworth(0.002) == pytest.approx(math.pi / 2)
    assert direction.woodworth_itd(math.radians(30)) > 0  # left ear first for a source on the left


def test_ab_arcsin_sign_convention() -> None:
    spacing = 0.17
    # Source on the left: it reaches the left microphone first, so tau = t_L - t_R < 0, lambda > 0.
    tau = -spacing * math.sin(math.radians(30.0)) / 343.0
    assert math.degrees(direction.lateral_from_tau_ab(tau, spacing)) == pytest.approx(30.0)
    assert math.degrees(direction.lateral_from_tau_ab(-tau, spacing)) == pytest.approx(-30.0)
    assert math.degrees(direction.lateral_from_tau_ab(-1.0, spacing)) == pytest.approx(90.0)
    with pytest.raises(ValueError):
        direction.lateral_from_tau_ab(0.0, 0.0)
