"""Direction analysis for first-order Ambisonics (FOA) and two-channel recordings.

Implements the shared design doc ``spatial.md``. One set of conventions everywhere:
azimuth φ counter-clockwise from the front (+90° = left), elevation θ up, degrees at the API
boundary; ambiX = ACN order [W, Y, Z, X] with SN3D normalisation; FuMa = [W, X, Y, Z] with W
scaled by 1/√2.

Everything here is pure numpy/scipy on plain arrays and never touches the database. Long
inputs are processed in blocks (the full complex STFT of 180 s of 4-channel 48 kHz audio would
be ~280 MB) and only reduced per-frame values and maps are kept.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.fft
import scipy.ndimage
import scipy.optimize
import scipy.signal

from workbench.errors import InputError

SPEED_OF_SOUND_M_S = 343.0
HEAD_RADIUS_M = 0.0875
DEFAULT_BAND_HZ = (200.0, 8000.0)
FOA_LAYOUTS = ("ambix", "fuma")
TWO_CHANNEL_LAYOUTS = ("stereo", "binaural", "ab", "xy", "ms")
# Layouts whose geometry is unknown or coincident: only a level panorama is meaningful.
PANORAMA_LAYOUTS = ("stereo", "xy", "ms")
MONO_EXPLANATION = (
    "mono clips carry no direction information: a direction view needs two channels "
    "(binaural, AB, XY or MS pair) or four (first-order Ambisonics)"
)

# Frames quieter than this mean square (about -100 dBFS) have no meaningful direction.
_SILENCE_MEAN_SQUARE = 1e-10
_SQRT2 = math.sqrt(2.0)
# Two-channel frame path: threads per FFT (parallelism comes from running the direction map
# beside the spectrogram), and frames per batch (bounds the float32 spectra to a few MB).
_FFT_WORKERS = 1
_PAIR_CHUNK_FRAMES = 64
_SQRT3 = math.sqrt(3.0)


class NoDirectionInformation(InputError):
    """The recording's layout (mono) carries no direction information."""


# ---------------------------------------------------------------------------------------------
# Conventions
# ---------------------------------------------------------------------------------------------


def oclock(azimuth_deg: float) -> int:
    """O'clock sector of an azimuth (12 = front, 3 = right, 6 = back, 9 = left).

    Parameters
    ----------
    azimuth_deg
        Azimuth in degrees, counter-clockwise from the front (+90° = left).

    Returns
    -------
    int
        Hour 1..12, from β = (−φ) mod 360 and hour = ((round(β/30) − 1) mod 12) + 1.
        Halves round up (β = 15° is 1 o'clock) so the result never depends on banker's rounding.
    """
    if not math.isfinite(azimuth_deg):
        raise ValueError(f"azimuth must be finite, got {azimuth_deg!r}")
    beta = (-azimuth_deg) % 360.0
    return (int(math.floor(beta / 30.0 + 0.5)) - 1) % 12 + 1


def oclock_mirror(hour: int) -> int | None:
    """Front/back mirror of an o'clock hour (12↔6, 1↔5, 2↔4, 11↔7, 10↔8; 3 and 9 → None).

    Two-channel recordings cannot tell front from back, so a lateral angle maps to an hour
    and this mirror hour, never to a guess between them.
    """
    if hour not in range(1, 13):
        raise ValueError(f"o'clock hour must be 1..12, got {hour!r}")
    mirrored = (6 - hour) % 12 or 12
    return None if mirrored == hour else mirrored


def fuma_to_ambix(samples: np.ndarray) -> np.ndarray:
    """Convert FuMa B-format [W, X, Y, Z] (W scaled by 1/√2) to ambiX [W, Y, Z, X] SN3D.

    Parameters
    ----------
    samples
        Array shaped (frames, 4).

    Returns
    -------
    numpy.ndarray
        A new array shaped (frames, 4) in ambiX order, same dtype.
    """
    samples = _require_foa(samples)
    w, x, y, z = samples.T
    return np.stack([w * _SQRT2, y, z, x], axis=1).astype(samples.dtype, copy=False)


def ambix_to_fuma(samples: np.ndarray) -> np.ndarray:
    """Convert ambiX [W, Y, Z, X] SN3D to FuMa [W, X, Y, Z] with W scaled by 1/√2."""
    samples = _require_foa(samples)
    w, y, z, x = samples.T
    return np.stack([w / _SQRT2, x, y, z], axis=1).astype(samples.dtype, copy=False)


def n3d_from_sn3d(samples: np.ndarray) -> np.ndarray:
    """Scale the first-order channels of an ambiX SN3D signal by √3 (N3D normalisation).

    In N3D an isotropic diffuse field has an identity covariance, which is what MUSIC's
    noise-subspace model assumes.
    """
    samples = _require_foa(samples)
    scale = np.array([1.0, _SQRT3, _SQRT3, _SQRT3], dtype=samples.dtype)
    return samples * scale


def ambix_steering(azimuth_deg: np.ndarray | float, elevation_deg: np.ndarray | float) -> np.ndarray:
    """SN3D first-order real spherical harmonics [1, sinφcosθ, sinθ, cosφcosθ] (ACN order).

    Broadcasts its inputs; the result has a trailing axis of length 4.
    """
    phi = np.radians(azimuth_deg)
    theta = np.radians(elevation_deg)
    phi, theta = np.broadcast_arrays(phi, theta)
    cos_theta = np.cos(theta)
    return np.stack([np.ones_like(phi), np.sin(phi) * cos_theta, np.sin(theta), np.cos(phi) * cos_theta], axis=-1)


def _require_foa(samples: np.ndarray) -> np.ndarray:
    samples = np.asarray(samples)
    if samples.ndim != 2 or samples.shape[1] != 4:
        raise ValueError(f"FOA samples must be shaped (frames, 4), got {samples.shape}")
    if not np.issubdtype(samples.dtype, np.floating):
        samples = samples.astype(np.float32)
    return samples


def _band_bins(band: tuple[float, float], sample_rate: int, n_fft: int) -> tuple[int, int]:
    """First and one-past-last rfft bin inside ``band`` (clipped to 1 .. Nyquist)."""
    low, high = float(band[0]), float(band[1])
    if not (math.isfinite(low) and math.isfinite(high)) or low < 0 or high <= low:
        raise InputError(f"band must be LOW HIGH in Hz with 0 <= LOW < HIGH, got {band!r}")
    nyquist = sample_rate / 2.0
    if low >= nyquist:
        raise InputError(f"band starts at {low:g} Hz, above the Nyquist frequency {nyquist:g} Hz of this audio")
    first = max(1, int(math.ceil(low * n_fft / sample_rate)))
    last = min(n_fft // 2, int(math.floor(min(high, nyquist) * n_fft / sample_rate)))
    if last < first:
        raise InputError(f"band {low:g}–{high:g} Hz contains no frequency bin at n_fft={n_fft}; widen it")
    return first, last + 1


def _blocks_of(samples: np.ndarray, block_frames: int) -> Iterator[np.ndarray]:
    for start in range(0, samples.shape[0], block_frames):
        yield samples[start : start + block_frames]


# ---------------------------------------------------------------------------------------------
# FOA
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FoaFrames:
    """Per analysis frame (~100 ms) FOA direction estimates.

    ``azimuth_deg``/``elevation_deg`` are the direction of the band-summed pseudo-intensity
    vector, ``diffuseness`` is ψ = 1 − ‖⟨I⟩‖/⟨E⟩, ``energy`` is ⟨E⟩ summed over the band
    (a weight). Silent frames hold NaN.
    """

    t: np.ndarray
    azimuth_deg: np.ndarray
    elevation_deg: np.ndarray
    diffuseness: np.ndarray
    energy: np.ndarray


@dataclass(frozen=True)
class Heatmap:
    """Azimuth × time map: ``values[i, j]`` is the direct energy E·(1−ψ) in azimuth bin i at frame j."""

    times: np.ndarray
    azimuth_edges_deg: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class SphereMap:
    """Steered response power on an azimuth × elevation grid, ``power`` shaped (n_el, n_az)."""

    azimuths: np.ndarray
    elevations: np.ndarray
    power: np.ndarray


class _FoaStream:
    """Streaming FOA analysis: feed ambiX blocks of any length, collect reduced results.

    STFT frames start at multiples of ``hop`` from the first sample, so the result does not
    depend on how the input was cut into blocks; leftover samples are carried to the next block.
    """

    def __init__(
        self,
        sample_rate: int,
        *,
        n_fft: int = 1024,
        hop: int = 512,
        band: tuple[float, float] = DEFAULT_BAND_HZ,
        frame_s: float = 0.1,
        n_azimuth_bins: int | None = None,
        dynamic_range_db: float = 40.0,
        sphere_bin_deg: float | None = None,
    ) -> None:
        if sample_rate <= 0:
            raise ValueError(f"sample rate must be positive, got {sample_rate}")
        if n_fft < 2 or hop < 1 or hop > n_fft:
            raise ValueError(f"need n_fft >= 2 and 1 <= hop <= n_fft, got n_fft={n_fft}, hop={hop}")
        if frame_s <= 0:
            raise ValueError(f"frame_s must be positive, got {frame_s}")
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.hop = hop
        self.bin_first, self.bin_stop = _band_bins(band, sample_rate, n_fft)
        # The frequency-domain window needs both neighbours of every band bin (no Nyquist bin).
        self.bin_stop = min(self.bin_stop, n_fft // 2)
        if self.bin_stop <= self.bin_first:
            raise InputError(f"band {band[0]:g}–{band[1]:g} Hz holds no frequency bin below Nyquist; widen it")
        self.stft_per_frame = max(1, round(frame_s * sample_rate / hop))
        self.window = scipy.signal.get_window("hann", n_fft).astype(np.float32)
        self.n_azimuth_bins = n_azimuth_bins
        self.keep_fraction = 10.0 ** (-dynamic_range_db / 10.0)
        self.sphere_bin_deg = sphere_bin_deg
        self._buffer = np.zeros((0, 4), dtype=np.float32)
        self._buffer_start = 0
        self._t: list[np.ndarray] = []
        self._az: list[np.ndarray] = []
        self._el: list[np.ndarray] = []
        self._psi: list[np.ndarray] = []
        self._energy: list[np.ndarray] = []
        self._heat: list[np.ndarray] = []
        if sphere_bin_deg is not None:
            self.n_sphere_az = int(round(360.0 / sphere_bin_deg))
            self.n_sphere_el = int(round(180.0 / sphere_bin_deg))
            self.sphere_hist = np.zeros(self.n_sphere_el * self.n_sphere_az, dtype=np.float64)
            # Weighted sums of unit intensity vectors per bin, to place peaks below the bin size.
            self.sphere_vectors = np.zeros((3, self.sphere_hist.size), dtype=np.float64)

    def push(self, block: np.ndarray) -> None:
        block = np.asarray(block, dtype=np.float32)
        if block.ndim != 2 or block.shape[1] != 4:
            raise ValueError(f"FOA blocks must be shaped (frames, 4), got {block.shape}")
        buffer = np.concatenate([self._buffer, block]) if self._buffer.size else block
        advance = self.stft_per_frame * self.hop
        needed = (self.stft_per_frame - 1) * self.hop + self.n_fft
        n_complete = 0 if buffer.shape[0] < needed else (buffer.shape[0] - needed) // advance + 1
        if n_complete:
            self._process(buffer[: (n_complete - 1) * advance + needed], n_complete * self.stft_per_frame)
            self._buffer_start += n_complete * advance
            buffer = buffer[n_complete * advance :]
        self._buffer = np.array(buffer, dtype=np.float32, copy=True)

    def finish(self) -> None:
        """Analyse the incomplete last frame (fewer STFT frames) if it holds at least one."""
        remaining = self._buffer.shape[0]
        if remaining >= self.n_fft:
            n_stft = (remaining - self.n_fft) // self.hop + 1
            self._process(self._buffer, n_stft)
        self._buffer = np.zeros((0, 4), dtype=np.float32)

    def _process(self, segment: np.ndarray, n_stft: int) -> None:
        frames = np.lib.stride_tricks.sliding_window_view(segment, self.n_fft, axis=0)[: n_stft * self.hop : self.hop]
        # The periodic Hann window is applied in the frequency domain (X_w[k] = ½X[k] − ¼X[k−1] −
        # ¼X[k+1]) on the band bins only: windowing every sample in the time domain costs more
        # than the FFT itself.
        raw = scipy.fft.rfft(frames, axis=-1, workers=-1)[..., self.bin_first - 1 : self.bin_stop + 1]
        spectrum = 0.5 * raw[..., 1:-1] - 0.25 * (raw[..., :-2] + raw[..., 2:])
        w, y, z, x = spectrum[:, 0], spectrum[:, 1], spectrum[:, 2], spectrum[:, 3]
        # Pseudo-intensity Re{W*·[X, Y, Z]} points toward the source for ambiX SN3D.
        intensity_x = w.real * x.real + w.imag * x.imag
        intensity_y = w.real * y.real + w.imag * y.imag
        intensity_z = w.real * z.real + w.imag * z.imag
        energy = 0.5 * (
            w.real**2 + w.imag**2 + x.real**2 + x.imag**2 + y.real**2 + y.imag**2 + z.real**2 + z.imag**2
        )

        per_frame = self.stft_per_frame
        n_groups = -(-n_stft // per_frame)
        group_of_stft = np.arange(n_stft) // per_frame
        sums = np.zeros((4, n_groups), dtype=np.float64)
        for row, values in enumerate((intensity_x, intensity_y, intensity_z, energy)):
            sums[row] = np.bincount(group_of_stft, weights=values.sum(axis=1, dtype=np.float64), minlength=n_groups)
        sum_x, sum_y, sum_z, sum_e = sums
        stft_counts = np.bincount(group_of_stft, minlength=n_groups)
        n_bins = self.bin_stop - self.bin_first
        # Parseval: a white signal of mean square m gives about m·Σw² of E per one-sided bin.
        window_power = float(np.sum(self.window**2))
        mean_square = sum_e / (stft_counts * n_bins * window_power)
        silent = mean_square < _SILENCE_MEAN_SQUARE

        with np.errstate(invalid="ignore", divide="ignore"):
            norm = np.sqrt(sum_x**2 + sum_y**2 + sum_z**2)
            psi = np.clip(1.0 - norm / sum_e, 0.0, 1.0)
            azimuth = np.degrees(np.arctan2(sum_y, sum_x))
            elevation = np.degrees(np.arctan2(sum_z, np.hypot(sum_x, sum_y)))
        psi[silent] = np.nan
        azimuth[silent] = np.nan
        elevation[silent] = np.nan

        first_stft = (self._buffer_start // self.hop) + np.arange(n_groups) * per_frame
        last_stft = first_stft + stft_counts - 1
        centre_samples = (first_stft * self.hop + last_stft * self.hop + self.n_fft) / 2.0
        self._t.append(centre_samples / self.sample_rate)
        self._az.append(azimuth)
        self._el.append(elevation)
        self._psi.append(psi)
        self._energy.append(np.where(silent, 0.0, sum_e))

        if self.n_azimuth_bins is None and self.sphere_bin_deg is None:
            return
        direct_weight = energy * np.nan_to_num(1.0 - psi, nan=0.0)[group_of_stft, None]
        bin_azimuth = np.degrees(np.arctan2(intensity_y, intensity_x))
        if self.n_azimuth_bins is not None:
            self._heat.append(self._heat_columns(bin_azimuth, direct_weight, group_of_stft, n_groups))
        if self.sphere_bin_deg is not None:
            bin_elevation = np.degrees(np.arctan2(intensity_z, np.hypot(intensity_x, intensity_y)))
            az_index = np.floor((bin_azimuth + 180.0) / self.sphere_bin_deg).astype(np.int64) % self.n_sphere_az
            el_index = np.clip(
                np.floor((bin_elevation + 90.0) / self.sphere_bin_deg).astype(np.int64), 0, self.n_sphere_el - 1
            )
            flat_index = (el_index * self.n_sphere_az + az_index).ravel()
            self.sphere_hist += np.bincount(flat_index, weights=direct_weight.ravel(), minlength=self.sphere_hist.size)
            with np.errstate(invalid="ignore", divide="ignore"):
                scale = np.nan_to_num(direct_weight / np.sqrt(intensity_x**2 + intensity_y**2 + intensity_z**2))
            for row, component in enumerate((intensity_x, intensity_y, intensity_z)):
                self.sphere_vectors[row] += np.bincount(
                    flat_index, weights=(component * scale).ravel(), minlength=self.sphere_hist.size
                )

    def _heat_columns(
        self, bin_azimuth: np.ndarray, weight: np.ndarray, group_of_stft: np.ndarray, n_groups: int
    ) -> np.ndarray:
        n_az = self.n_azimuth_bins
        assert n_az is not None
        az_index = np.floor((bin_azimuth + 180.0) * (n_az / 360.0)).astype(np.int64) % n_az
        flat = (group_of_stft[:, None] * n_az + az_index).ravel()
        columns = np.bincount(flat, weights=weight.ravel(), minlength=n_groups * n_az).reshape(n_groups, n_az)
        frame_max = columns.max(axis=1, keepdims=True)
        columns[columns < frame_max * self.keep_fraction] = 0.0
        return columns.T.astype(np.float32)

    def frames(self) -> FoaFrames:
        def joined(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0)

        return FoaFrames(
            t=joined(self._t),
            azimuth_deg=joined(self._az),
            elevation_deg=joined(self._el),
            diffuseness=joined(self._psi),
            energy=joined(self._energy),
        )

    def heatmap(self) -> Heatmap:
        n_az = self.n_azimuth_bins
        assert n_az is not None
        values = np.concatenate(self._heat, axis=1) if self._heat else np.zeros((n_az, 0), dtype=np.float32)
        times = np.concatenate(self._t) if self._t else np.zeros(0)
        return Heatmap(times=times, azimuth_edges_deg=np.linspace(-180.0, 180.0, n_az + 1), values=values)


def foa_frames(
    samples_ambix: np.ndarray,
    sample_rate: int,
    *,
    n_fft: int = 1024,
    hop: int = 512,
    band: tuple[float, float] = DEFAULT_BAND_HZ,
    frame_s: float = 0.1,
    block_s: float = 20.0,
) -> FoaFrames:
    """Direction and diffuseness of an ambiX signal per ~100 ms analysis frame.

    Parameters
    ----------
    samples_ambix
        ambiX SN3D samples shaped (frames, 4) in ACN order [W, Y, Z, X].
    sample_rate
        Sample rate in Hz.
    n_fft, hop
        STFT size and hop (Hann window, no padding: STFT frame k starts at sample k·hop).
    band
        Analysis band in Hz; bins outside it are ignored.
    frame_s
        Analysis frame length; it is rounded to a whole number of hops.
    block_s
        Processing block length in seconds (bounds memory; does not change the result).

    Returns
    -------
    FoaFrames
        ``t`` is each analysis frame's centre in seconds.
    """
    samples_ambix = _require_foa(samples_ambix)
    stream = _FoaStream(sample_rate, n_fft=n_fft, hop=hop, band=band, frame_s=frame_s)
    for block in _blocks_of(samples_ambix, max(1, int(block_s * sample_rate))):
        stream.push(block)
    stream.finish()
    return stream.frames()


def foa_heatmap(
    samples: np.ndarray,
    sample_rate: int,
    *,
    n_azimuth_bins: int = 72,
    band: tuple[float, float] = DEFAULT_BAND_HZ,
    dynamic_range_db: float = 40.0,
    block_s: float = 20.0,
    n_fft: int = 1024,
    hop: int = 512,
    frame_s: float = 0.1,
) -> Heatmap:
    """Azimuth × time heatmap of an ambiX signal.

    Per analysis frame, the energy E·(1 − ψ) of every in-band STFT bin is added to the azimuth
    bin of that bin's pseudo-intensity direction; bins more than ``dynamic_range_db`` below the
    frame's strongest bin are set to 0.

    Parameters
    ----------
    samples
        ambiX SN3D samples shaped (frames, 4).
    sample_rate
        Sample rate in Hz.
    n_azimuth_bins
        Number of equal azimuth bins over [−180°, 180°).
    band
        Analysis band in Hz.
    dynamic_range_db
        Energy range kept per frame.
    block_s
        Processing block length in seconds (bounds memory).
    n_fft, hop, frame_s
        As in :func:`foa_frames`; the heatmap's columns are the same frames.

    Returns
    -------
    Heatmap
        ``values`` float32 shaped (n_azimuth_bins, n_frames).
    """
    samples = _require_foa(samples)
    stream = _FoaStream(
        sample_rate,
        n_fft=n_fft,
        hop=hop,
        band=band,
        frame_s=frame_s,
        n_azimuth_bins=n_azimuth_bins,
        dynamic_range_db=dynamic_range_db,
    )
    for block in _blocks_of(samples, max(1, int(block_s * sample_rate))):
        stream.push(block)
    stream.finish()
    return stream.heatmap()


def _window_slice(n_samples: int, sample_rate: int, t0: float, t1: float) -> slice:
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
        raise ValueError(f"need a time window t0 < t1, got t0={t0}, t1={t1}")
    start = max(0, int(round(t0 * sample_rate)))
    stop = min(n_samples, int(round(t1 * sample_rate)))
    if stop - start < 2:
        raise ValueError(
            f"time window {t0:g}–{t1:g} s holds no audio (signal is {n_samples / sample_rate:g} s long)"
        )
    return slice(start, stop)


def _band_covariance(
    samples_ambix: np.ndarray, sample_rate: int, band: tuple[float, float], n_fft: int, block_s: float = 20.0
) -> np.ndarray:
    """Real part of the 4×4 spatial covariance summed over in-band STFT bins.

    FOA steering vectors are real and frequency independent, so one broadband covariance is
    a valid model for every bin.
    """
    n_fft = min(n_fft, samples_ambix.shape[0])
    hop = max(1, n_fft // 2)
    first, stop = _band_bins(band, sample_rate, n_fft)
    window = scipy.signal.get_window("hann", n_fft).astype(np.float32)
    covariance = np.zeros((4, 4), dtype=np.float64)
    block_frames = max(n_fft, int(block_s * sample_rate)) // hop * hop
    for start in range(0, max(1, samples_ambix.shape[0] - n_fft + 1), block_frames):
        segment = samples_ambix[start : start + block_frames + n_fft - hop]
        if segment.shape[0] < n_fft:
            break
        frames = np.lib.stride_tricks.sliding_window_view(segment, n_fft, axis=0)[::hop]
        spectrum = scipy.fft.rfft(frames * window, axis=-1)[..., first:stop]
        stacked = np.moveaxis(spectrum, 1, 0).reshape(4, -1)
        covariance += (stacked @ stacked.conj().T).real
    return covariance


def _sphere_grid(grid_deg: float) -> tuple[np.ndarray, np.ndarray]:
    if not 0 < grid_deg <= 90:
        raise ValueError(f"grid_deg must be in (0, 90], got {grid_deg}")
    n_az = int(round(360.0 / grid_deg))
    azimuths = -180.0 + np.arange(n_az) * (360.0 / n_az)
    n_el = int(round(180.0 / grid_deg)) + 1
    elevations = np.linspace(-90.0, 90.0, n_el)
    return azimuths, elevations


def foa_sphere_srp(
    samples: np.ndarray,
    sample_rate: int,
    t0: float,
    t1: float,
    *,
    grid_deg: float = 5.0,
    kappa: float = 1.73,
    band: tuple[float, float] = DEFAULT_BAND_HZ,
    n_fft: int = 1024,
) -> SphereMap:
    """Whole-sphere steered response power of an ambiX signal over a time window.

    P(Ω) = wᵀ Re{R} w with w = diag(1, κ, κ, κ)·y(Ω), R the in-band covariance.

    Parameters
    ----------
    samples
        ambiX SN3D samples shaped (frames, 4).
    sample_rate
        Sample rate in Hz.
    t0, t1
        Window in seconds from the first sample.
    grid_deg
        Grid step in azimuth and elevation.
    kappa
        First-order weight (1.73 ≈ max-rE).
    band
        Analysis band in Hz.
    n_fft
        STFT size for the covariance.

    Returns
    -------
    SphereMap
        ``azimuths`` from −180° (step ``grid_deg``), ``elevations`` from −90° to 90° inclusive,
        ``power`` shaped (n_el, n_az).
    """
    samples = _require_foa(samples)
    window = samples[_window_slice(samples.shape[0], sample_rate, t0, t1)]
    covariance = _band_covariance(window, sample_rate, band, n_fft)
    azimuths, elevations = _sphere_grid(grid_deg)
    steering = ambix_steering(azimuths[None, :], elevations[:, None]) * np.array([1.0, kappa, kappa, kappa])
    power = np.einsum("eai,ij,eaj->ea", steering, covariance, steering)
    return SphereMap(azimuths=azimuths, elevations=elevations, power=power)


def _angular_distance_deg(az1: float, el1: float, az2: float, el2: float) -> float:
    u = ambix_steering(az1, el1)[1:]
    v = ambix_steering(az2, el2)[1:]
    return float(np.degrees(np.arccos(np.clip(np.dot(u, v), -1.0, 1.0))))


def foa_music(
    samples: np.ndarray,
    sample_rate: int,
    t0: float,
    t1: float,
    *,
    n_sources: int,
    grid_deg: float = 2.0,
    band: tuple[float, float] = DEFAULT_BAND_HZ,
    n_fft: int = 1024,
) -> list[tuple[float, float]]:
    """Directions of one or two simultaneous sources with MUSIC on the N3D covariance.

    The pseudospectrum 1/‖Eₙᵀa(Ω)‖² (Eₙ the noise subspace, a the unit N3D steering vector)
    is searched on a ``grid_deg`` grid; each of the ``n_sources`` strongest distinct peaks is
    then refined continuously (Nelder–Mead), which reaches well below the grid step.

    Parameters
    ----------
    samples
        ambiX SN3D samples shaped (frames, 4).
    sample_rate
        Sample rate in Hz.
    t0, t1
        Window in seconds.
    n_sources
        Number of sources K, 1 or 2. The design allows K ≤ 3, but for K = 3 the noise
        subspace is a single vector whose null set {Ω : vᵀa(Ω) = 0} is a whole circle on the
        sphere (any three directions lie on one), and the broadband covariance has one degree of
        freedom too few to place three sources on it; K = 3 is therefore refused.
    grid_deg
        Coarse search step.
    band
        Analysis band in Hz.
    n_fft
        STFT size for the covariance.

    Returns
    -------
    list[tuple[float, float]]
        ``(azimuth_deg, elevation_deg)`` per source, strongest pseudospectrum peak first.
    """
    if n_sources not in (1, 2):
        raise ValueError(
            f"MUSIC on first-order Ambisonics locates 1 or 2 simultaneous sources, got n_sources={n_sources}: "
            "with 3 the one-vector noise subspace is orthogonal to a whole circle of directions, so the "
            "covariance cannot place them"
        )
    samples = _require_foa(samples)
    window = n3d_from_sn3d(samples[_window_slice(samples.shape[0], sample_rate, t0, t1)])
    covariance = _band_covariance(window, sample_rate, band, n_fft)
    _, eigenvectors = np.linalg.eigh(covariance)  # ascending eigenvalues
    noise_subspace = eigenvectors[:, : 4 - n_sources]
    n3d_scale = np.array([1.0, _SQRT3, _SQRT3, _SQRT3])

    def noise_projection(azimuth_deg: np.ndarray | float, elevation_deg: np.ndarray | float) -> np.ndarray:
        steering = ambix_steering(azimuth_deg, elevation_deg) * n3d_scale
        steering = steering / np.linalg.norm(steering, axis=-1, keepdims=True)
        return np.sum((steering @ noise_subspace) ** 2, axis=-1)

    azimuths, elevations = _sphere_grid(grid_deg)
    projection = noise_projection(azimuths[None, :], elevations[:, None])
    spectrum = 1.0 / np.maximum(projection, 1e-15)
    is_peak = spectrum == scipy.ndimage.maximum_filter(spectrum, size=3, mode=("nearest", "wrap"))
    el_index, az_index = np.nonzero(is_peak)
    order = np.argsort(spectrum[el_index, az_index])[::-1]

    found: list[tuple[float, float, float]] = []
    min_separation = 3.0 * grid_deg
    for index in order:
        start = (float(azimuths[az_index[index]]), float(elevations[el_index[index]]))
        if any(_angular_distance_deg(*start, az, el) < min_separation for az, el, _ in found):
            continue
        result = scipy.optimize.minimize(
            lambda p: float(noise_projection(p[0], p[1])),
            x0=np.array(start),
            method="Nelder-Mead",
            options={"xatol": 0.01, "fatol": 1e-14, "initial_simplex": np.array(
                [start, (start[0] + grid_deg, start[1]), (start[0], start[1] + grid_deg)]
            )},
        )
        azimuth, elevation = _normalised_direction(float(result.x[0]), float(result.x[1]))
        if any(_angular_distance_deg(azimuth, elevation, az, el) < min_separation for az, el, _ in found):
            continue
        found.append((azimuth, elevation, float(result.fun)))
        if len(found) == n_sources:
            break
    return [(azimuth, elevation) for azimuth, elevation, _ in found]


def _normalised_direction(azimuth_deg: float, elevation_deg: float) -> tuple[float, float]:
    """Map any (φ, θ) to φ ∈ [−180, 180), θ ∈ [−90, 90] via the unit vector."""
    x, y, z = ambix_steering(azimuth_deg, elevation_deg)[[3, 1, 2]]
    azimuth = math.degrees(math.atan2(y, x))
    elevation = math.degrees(math.atan2(z, math.hypot(x, y)))
    if azimuth >= 180.0:
        azimuth -= 360.0
    return azimuth, elevation


# ---------------------------------------------------------------------------------------------
# Peaks of reduced maps
# ---------------------------------------------------------------------------------------------


def azimuth_peaks(
    profile: np.ndarray,
    edges_deg: np.ndarray,
    *,
    max_peaks: int = 3,
    min_relative: float = 0.1,
    circular: bool = True,
) -> list[tuple[float, float]]:
    """Dominant directions of a 1-D energy histogram over angle.

    Parameters
    ----------
    profile
        Non-negative energy per bin (e.g. a heatmap summed over time).
    edges_deg
        Bin edges in degrees (``len(profile) + 1``).
    max_peaks
        At most this many peaks, strongest first.
    min_relative
        Local maxima lower than this fraction of the highest bin are ignored.
    circular
        Whether the first and last bins are neighbours (azimuth) or not (lateral angle).

    Returns
    -------
    list[tuple[float, float]]
        ``(angle_deg, weight)``: the angle is the energy-weighted mean over the peak bin and its
        two neighbours (sub-bin accuracy), the weight is that neighbourhood's share of all energy.
    """
    profile = np.asarray(profile, dtype=np.float64)
    edges_deg = np.asarray(edges_deg, dtype=np.float64)
    if profile.ndim != 1 or edges_deg.shape != (profile.size + 1,):
        raise ValueError("profile must be 1-D and edges_deg one longer than it")
    total = float(profile.sum())
    if profile.size == 0 or total <= 0:
        return []
    centres = (edges_deg[:-1] + edges_deg[1:]) / 2.0
    n = profile.size
    if circular:
        left, right = np.roll(profile, 1), np.roll(profile, -1)
    else:
        left = np.concatenate([[-np.inf], profile[:-1]])
        right = np.concatenate([profile[1:], [-np.inf]])
    # Ties on a plateau: count only its first bin, so one flat peak is not reported twice.
    is_peak = (profile > left) & (profile >= right) & (profile >= min_relative * profile.max())
    candidates = np.nonzero(is_peak)[0]
    candidates = candidates[np.argsort(profile[candidates])[::-1]][:max_peaks]
    span = edges_deg[-1] - edges_deg[0]
    peaks = []
    for index in candidates:
        neighbours = np.array([index - 1, index, index + 1])
        if circular:
            neighbours %= n
        else:
            neighbours = neighbours[(neighbours >= 0) & (neighbours < n)]
        weights = profile[neighbours]
        angles = centres[neighbours]
        if circular:
            # Unwrap neighbours around the peak so the mean across ±180° is right.
            angles = centres[index] + (angles - centres[index] + span / 2) % span - span / 2
        angle = float(np.sum(weights * angles) / np.sum(weights))
        if circular:
            angle = (angle - edges_deg[0]) % span + edges_deg[0]
        peaks.append((angle, float(np.sum(weights) / total)))
    return peaks


def _sphere_peaks(
    histogram: np.ndarray, vector_sums: np.ndarray, bin_deg: float, *, max_peaks: int = 3, min_relative: float = 0.1
) -> list[dict[str, float]]:
    """Peaks of an (n_el, n_az) direction histogram.

    Each peak points along the summed weighted unit vectors (``vector_sums``, shaped
    (3, n_el, n_az) as x, y, z) of its 3×3 neighbourhood, so it is not limited to bin centres.
    """
    total = float(histogram.sum())
    if total <= 0:
        return []
    n_el, n_az = histogram.shape
    neighbourhood_max = scipy.ndimage.maximum_filter(histogram, size=3, mode=("nearest", "wrap"))
    is_peak = (histogram == neighbourhood_max) & (histogram >= min_relative * histogram.max()) & (histogram > 0)
    el_index, az_index = np.nonzero(is_peak)
    order = np.argsort(histogram[el_index, az_index])[::-1]
    peaks: list[dict[str, float]] = []
    for index in order:
        e, a = el_index[index], az_index[index]
        rows = np.clip(np.arange(e - 1, e + 2), 0, n_el - 1)
        cols = np.arange(a - 1, a + 2) % n_az
        block = histogram[np.ix_(rows, cols)]
        mean_vector = vector_sums[:, rows][:, :, cols].sum(axis=(1, 2))
        azimuth = math.degrees(math.atan2(mean_vector[1], mean_vector[0]))
        elevation = math.degrees(math.atan2(mean_vector[2], math.hypot(mean_vector[0], mean_vector[1])))
        if any(_angular_distance_deg(azimuth, elevation, p["azimuth_deg"], p["elevation_deg"]) < 2 * bin_deg
               for p in peaks):
            continue
        peaks.append({"azimuth_deg": azimuth, "elevation_deg": elevation, "weight": float(block.sum() / total)})
        if len(peaks) == max_peaks:
            break
    return peaks


def _value_peaks(values: np.ndarray, weights: np.ndarray, edges: np.ndarray) -> list[tuple[float, float]]:
    """Peaks of weighted per-frame values (non-circular), each placed at the weighted mean of
    the frames within its histogram neighbourhood rather than at a bin centre."""
    histogram, _ = np.histogram(values, bins=edges, weights=weights)
    bin_width = float(edges[1] - edges[0])
    peaks = []
    for centre, weight in azimuth_peaks(histogram, edges, circular=False):
        near = np.abs(values - centre) <= 1.5 * bin_width
        if np.sum(weights[near]) > 0:
            centre = float(np.average(values[near], weights=weights[near]))
        peaks.append((centre, weight))
    return peaks


# ---------------------------------------------------------------------------------------------
# Two-channel
# ---------------------------------------------------------------------------------------------


def _frames_2ch(
    left: np.ndarray, right: np.ndarray, sample_rate: int, frame_s: float, *, keep_float32: bool = False
) -> tuple[np.ndarray, np.ndarray, int]:
    """Non-overlapping frames (views where possible) of both channels, float64 unless
    ``keep_float32`` and the input already is float32."""
    left, right = np.asarray(left), np.asarray(right)
    dtype = np.float32 if keep_float32 and left.dtype == right.dtype == np.float32 else np.float64
    left = left.astype(dtype, copy=False)
    right = right.astype(dtype, copy=False)
    if left.ndim != 1 or left.shape != right.shape:
        raise ValueError(f"left and right must be 1-D of equal length, got {left.shape} and {right.shape}")
    frame_len = max(2, int(round(frame_s * sample_rate)))
    n_frames = left.size // frame_len
    return (
        left[: n_frames * frame_len].reshape(n_frames, frame_len),
        right[: n_frames * frame_len].reshape(n_frames, frame_len),
        frame_len,
    )


def _band_bins_or_all(band: tuple[float, float] | None, sample_rate: int, n_fft: int) -> tuple[int, int]:
    """rfft bins the whitened cross-spectrum keeps: the band's (see :func:`_band_bins`) or all."""
    return _band_bins(band, sample_rate, n_fft) if band is not None else (0, n_fft // 2 + 1)


@functools.lru_cache(maxsize=8)
def _lag_chirps(
    n_fft: int, interp: int, first: int, stop: int, max_lag: int
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Chirp-z (Bluestein) factors that evaluate the zero-padded inverse rfft at the lag window only.

    With n = interp·n_fft, W = e^{2πi/n} and c_k the rfft bins ``first``..``stop − 1`` weighted as
    ``irfft`` weights them (2/n; 1/n for DC and a true Nyquist bin), ``irfft(c, n)`` at lag
    j = m − L (m = 0..2L, L = ``max_lag``) is Re Σ_q c_{first+q} W^{(first+q)·j}. Writing
    q·m = (q² + m² − (m − q)²)/2 turns the sum into a convolution:
    W^{first·j + m²/2} · Σ_q [c_{first+q} W^{q²/2 − qL}] · W^{−(m−q)²/2}, done with one FFT pair
    of length ``n_chirp`` ≥ (stop − first) + 2L per frame instead of one inverse FFT of length n.

    Returns
    -------
    tuple
        ``n_chirp``; ``pre`` (per bin, weights included), ``kernel`` (FFT of the chirp
        W^{−r²/2}, r = −(K−1)..2L, placed for a linear convolution) and ``post`` (per lag), all
        complex64 and read-only.
    """
    n_interp = interp * n_fft
    n_bins = stop - first
    n_lags = 2 * max_lag + 1
    n_chirp = scipy.fft.next_fast_len(n_bins + n_lags - 1)

    def w_power(doubled: np.ndarray) -> np.ndarray:
        # W^(doubled/2), with the integer exponent reduced first so the angle stays exact.
        return np.exp(1j * math.pi * np.mod(doubled, 2 * n_interp) / n_interp)

    q = np.arange(n_bins, dtype=np.int64)
    bins = first + q
    weight = np.full(n_bins, 2.0 / n_interp)
    weight[bins == 0] = 1.0 / n_interp
    if n_interp % 2 == 0:
        weight[bins == n_interp // 2] = 1.0 / n_interp
    pre = weight * w_power(q * q - 2 * q * max_lag)
    r = np.arange(-(n_bins - 1), n_lags, dtype=np.int64)
    chirp = np.zeros(n_chirp, dtype=np.complex128)
    chirp[r % n_chirp] = w_power(-r * r)
    kernel = scipy.fft.fft(chirp)
    m = np.arange(n_lags, dtype=np.int64)
    post = w_power(2 * first * (m - max_lag) + m * m)
    factors = tuple(np.asarray(f, dtype=np.complex64) for f in (pre, kernel, post))
    for f in factors:
        f.flags.writeable = False
    return (n_chirp, *factors)


def _correlation_at_lags(spectrum: np.ndarray, n_fft: int, interp: int, first: int, max_lag: int) -> np.ndarray:
    """``irfft(X, n=interp·n_fft)`` at lags −max_lag..max_lag, per row, from rfft bins ``first``.. only.

    ``spectrum`` holds bins ``first`` .. ``first + width − 1`` (complex64, rows = frames; the
    other bins count as 0) and is overwritten. Returns float32 shaped (rows, 2·max_lag + 1).
    """
    n_chirp, pre, kernel, post = _lag_chirps(n_fft, interp, first, first + spectrum.shape[-1], max_lag)
    spectrum *= pre
    convolved = scipy.fft.fft(spectrum, n=n_chirp, axis=-1, workers=_FFT_WORKERS)
    convolved *= kernel
    lags = scipy.fft.ifft(convolved, axis=-1, overwrite_x=True, workers=_FFT_WORKERS)[:, : 2 * max_lag + 1]
    lags *= post
    return lags.real


def _pair_spectra_chunks(
    left: np.ndarray, right: np.ndarray, window: np.ndarray, n_fft: int
) -> Iterator[tuple[slice, np.ndarray]]:
    """float32 rfft spectra of both channels' windowed frames, zero-padded to ``n_fft``.

    Yields ``(frames, spectra)`` per chunk of :data:`_PAIR_CHUNK_FRAMES` frames, ``spectra``
    complex64 shaped (2, chunk frames, n_fft//2+1). One zero-padded buffer is reused for all
    chunks (only its first ``frame_len`` columns are ever written).
    """
    n_frames, frame_len = left.shape
    padded = np.zeros((2, min(n_frames, _PAIR_CHUNK_FRAMES), n_fft), dtype=np.float32)
    for start in range(0, n_frames, _PAIR_CHUNK_FRAMES):
        stop = min(start + _PAIR_CHUNK_FRAMES, n_frames)
        chunk = slice(start, stop)
        np.multiply(left[chunk], window, out=padded[0, : stop - start, :frame_len])
        np.multiply(right[chunk], window, out=padded[1, : stop - start, :frame_len])
        yield chunk, scipy.fft.rfft(padded[:, : stop - start], axis=-1, workers=_FFT_WORKERS)


def _gcc_phat_tau(
    spectra: np.ndarray,
    n_fft: int,
    sample_rate: int,
    max_tau_s: float,
    interp: int,
    bins: tuple[int, int],
) -> np.ndarray:
    """τ = t_L − t_R per frame from the (2, frames, bins) rfft spectra of :func:`_pair_spectra_chunks`.

    The PHAT-whitened cross-spectrum of the ``bins`` range is transformed back only at the lags
    the search needs (|lag| ≤ ``max_tau_s`` on the ×``interp`` zero-padded grid) with a chirp-z
    transform (:func:`_lag_chirps`), which equals the ×``interp`` zero-padded inverse FFT there
    at a fraction of its cost; the peak is then refined by a parabola through its neighbours.
    """
    first, stop = bins
    n_interp = interp * n_fft
    max_lag = max(min(int(math.ceil(max_tau_s * sample_rate * interp)), n_interp // 2 - 1), 0)
    cross = np.conjugate(spectra[1, :, first:stop])
    cross *= spectra[0, :, first:stop]
    magnitude = np.abs(cross)
    # Numerically empty bins (far below the strongest one) stay 0 instead of getting a random phase.
    inverse = np.zeros_like(magnitude)
    np.divide(1.0, magnitude, out=inverse, where=magnitude > 1e-20 * magnitude.max(initial=0.0))
    cross *= inverse
    # Lags −max_lag..max_lag: with r(k) = Σ l[n+k]·r[n] the peak sits at k = t_L − t_R.
    window = _correlation_at_lags(cross, n_fft, interp, first, max_lag).astype(np.float64)
    peak = np.argmax(window, axis=1)
    refined = peak.astype(np.float64)
    inner = (peak > 0) & (peak < window.shape[1] - 1)
    rows = np.nonzero(inner)[0]
    before, centre, after = window[rows, peak[rows] - 1], window[rows, peak[rows]], window[rows, peak[rows] + 1]
    curvature = before - 2 * centre + after
    with np.errstate(invalid="ignore", divide="ignore"):
        offset = np.where(curvature < 0, 0.5 * (before - after) / curvature, 0.0)
    refined[rows] += np.clip(offset, -0.5, 0.5)
    return (refined - max_lag) / (interp * sample_rate)


def _mean_square(frames: np.ndarray) -> np.ndarray:
    """Mean square per row in float64 (exact squares of float32 samples)."""
    frames64 = np.asarray(frames, dtype=np.float64)
    return np.einsum("ij,ij->i", frames64, frames64) / frames.shape[1]


def gcc_phat_frames(
    left: np.ndarray,
    right: np.ndarray,
    sample_rate: int,
    *,
    frame_s: float = 0.1,
    max_tau_s: float = 0.0009,
    interp: int = 4,
    band: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Time difference of arrival per frame with GCC-PHAT.

    Parameters
    ----------
    left, right
        1-D channel signals of equal length.
    sample_rate
        Sample rate in Hz.
    frame_s
        Non-overlapping frame length; a trailing partial frame is dropped.
    max_tau_s
        Largest |τ| searched.
    interp
        Zero-padding factor of the inverse FFT (lag resolution 1/(interp·fs) before the
        parabolic refinement).
    band
        Optional band in Hz; the whitened cross-spectrum is zero outside it.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        Frame centres in seconds and τ = t_L − t_R in seconds (a source on the left arrives at
        the left channel first: τ < 0; ITD = −τ). Silent frames hold NaN.

    Notes
    -----
    All frames are analysed at once: one float32 rfft per channel over the framed signal, and
    the correlation is evaluated only inside the lag window (see :func:`_gcc_phat_tau`).
    """
    if interp < 1:
        raise ValueError(f"interp must be >= 1, got {interp}")
    left_frames, right_frames, frame_len = _frames_2ch(left, right, sample_rate, frame_s, keep_float32=True)
    n_fft = scipy.fft.next_fast_len(2 * frame_len, real=True)
    window = scipy.signal.get_window("hann", frame_len).astype(np.float32)
    bins = _band_bins_or_all(band, sample_rate, n_fft)
    tau = np.zeros(left_frames.shape[0])
    silent = np.zeros(left_frames.shape[0], dtype=bool)
    # Chunks of frames bound the temporary spectra and keep them in cache.
    for chunk, spectra in _pair_spectra_chunks(left_frames, right_frames, window, n_fft):
        tau[chunk] = _gcc_phat_tau(spectra, n_fft, sample_rate, max_tau_s, interp, bins)
        silent[chunk] = (_mean_square(left_frames[chunk]) < _SILENCE_MEAN_SQUARE) | (
            _mean_square(right_frames[chunk]) < _SILENCE_MEAN_SQUARE
        )
    tau[silent] = np.nan
    times = (np.arange(left_frames.shape[0]) + 0.5) * frame_len / sample_rate
    return times, tau


def woodworth_itd(lateral_rad: np.ndarray | float, a: float = HEAD_RADIUS_M, c: float = SPEED_OF_SOUND_M_S) -> np.ndarray | float:
    """Woodworth interaural time difference ITD = (a/c)(λ + sin λ) in seconds.

    A positive lateral angle (left) gives a positive ITD (the left ear hears it first).
    ``lateral_rad`` is clipped to [−π/2, π/2], where the model is defined.
    """
    lateral = np.clip(lateral_rad, -math.pi / 2, math.pi / 2)
    return (a / c) * (lateral + np.sin(lateral))


_WOODWORTH_LATERAL = np.linspace(-math.pi / 2, math.pi / 2, 18001)
_WOODWORTH_ITD = np.asarray(woodworth_itd(_WOODWORTH_LATERAL))


def lateral_from_itd_woodworth(itd_s: np.ndarray | float) -> np.ndarray | float:
    """Lateral angle λ in radians (+ = left) from an ITD in seconds, inverting Woodworth by table lookup.

    ITDs beyond the model's maximum (≈ 0.66 ms) map to ±π/2; NaN stays NaN.
    """
    result = np.interp(itd_s, _WOODWORTH_ITD, _WOODWORTH_LATERAL)
    result = np.where(np.isnan(itd_s), np.nan, result)
    return float(result) if np.ndim(result) == 0 else result


def lateral_from_tau_ab(tau_s: np.ndarray | float, spacing_m: float, c: float = SPEED_OF_SOUND_M_S) -> np.ndarray | float:
    """Lateral angle λ = arcsin(c·(−τ)/d) in radians for a spaced (AB) pair, + = left.

    ``tau_s`` is t_L − t_R (negative for a source on the left); arguments beyond ±1 (noise or
    a τ larger than the spacing allows) are clipped to ±90°.
    """
    if not spacing_m > 0:
        raise ValueError(f"AB spacing must be positive metres, got {spacing_m!r}")
    result = np.arcsin(np.clip(-np.asarray(tau_s, dtype=np.float64) * c / spacing_m, -1.0, 1.0))
    return float(result) if np.ndim(result) == 0 else result


def level_panorama(
    left: np.ndarray, right: np.ndarray, sample_rate: int, *, frame_s: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """Level panorama index per frame for coincident pairs (XY, decoded MS) or unknown stereo.

    The index is (E_L − E_R)/(E_L + E_R) in [−1, 1]: +1 only left, 0 centre, −1 only right.
    It is a position in the stereo image, not an angle. Silent frames hold NaN.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        Frame centres in seconds and the panorama index.
    """
    left_frames, right_frames, frame_len = _frames_2ch(left, right, sample_rate, frame_s, keep_float32=True)
    # float64 squares (exact for float32 samples) without a float64 copy of the signal.
    energy_left = np.mean(np.square(left_frames, dtype=np.float64), axis=1)
    energy_right = np.mean(np.square(right_frames, dtype=np.float64), axis=1)
    total = energy_left + energy_right
    with np.errstate(invalid="ignore", divide="ignore"):
        index = np.where(total / 2 < _SILENCE_MEAN_SQUARE, np.nan, (energy_left - energy_right) / total)
    times = (np.arange(left_frames.shape[0]) + 0.5) * frame_len / sample_rate
    return times, index


def ild_db(
    left: np.ndarray, right: np.ndarray, sample_rate: int, frame_s: float = 0.1, min_freq: float = 1500.0
) -> tuple[np.ndarray, np.ndarray]:
    """Interaural level difference 10·log10(ΣP_L/ΣP_R) over bins above ``min_freq`` per frame.

    Positive means louder on the left. Frames silent in either channel hold NaN.

    Returns
    -------
    tuple[numpy.ndarray, numpy.ndarray]
        Frame centres in seconds and the ILD in dB.
    """
    left_frames, right_frames, frame_len = _frames_2ch(left, right, sample_rate, frame_s)
    spectrum_left = scipy.fft.rfft(left_frames, axis=-1)
    spectrum_right = scipy.fft.rfft(right_frames, axis=-1)
    times = (np.arange(left_frames.shape[0]) + 0.5) * frame_len / sample_rate
    return times, _ild_from_spectra(spectrum_left, spectrum_right, sample_rate, frame_len, min_freq)


def _row_power(spectrum: np.ndarray) -> np.ndarray:
    """Σ|X|² per row, float64."""
    if spectrum.dtype == np.complex64:
        # Squares of the float32 real and imaginary parts, summed pairwise (relative error ~1e-7)
        # without the hypot of np.abs.
        return np.square(spectrum.view(np.float32)).sum(axis=1).astype(np.float64)
    return np.sum(np.abs(spectrum) ** 2, axis=1)


def _ild_from_spectra(
    spectrum_left: np.ndarray, spectrum_right: np.ndarray, sample_rate: int, n_fft: int, min_freq: float
) -> np.ndarray:
    first = int(math.ceil(min_freq * n_fft / sample_rate))
    power_left = _row_power(spectrum_left[:, first:])
    power_right = _row_power(spectrum_right[:, first:])
    floor = _SILENCE_MEAN_SQUARE * n_fft * n_fft
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            (power_left < floor) | (power_right < floor), np.nan, 10.0 * np.log10(power_left / power_right)
        )


class _PairStream:
    """Streaming two-channel analysis in non-overlapping frames; carries leftover samples.

    ``need_tau`` False skips GCC-PHAT (level-panorama layouts never use the time difference);
    ``tau_s`` then holds NaN.
    """

    def __init__(
        self,
        sample_rate: int,
        *,
        frame_s: float,
        band: tuple[float, float] | None,
        max_tau_s: float,
        interp: int = 4,
        need_tau: bool = True,
    ) -> None:
        self.sample_rate = sample_rate
        self.frame_len = max(2, int(round(frame_s * sample_rate)))
        self.n_fft = scipy.fft.next_fast_len(2 * self.frame_len, real=True)
        self.window = scipy.signal.get_window("hann", self.frame_len).astype(np.float32)
        self.bins = _band_bins_or_all(band, sample_rate, self.n_fft)
        self.max_tau_s = max_tau_s
        self.interp = interp
        self.need_tau = need_tau
        self._buffer = np.zeros((0, 2))
        self._n_done = 0
        self._tau: list[np.ndarray] = []
        self._ild: list[np.ndarray] = []
        self._panorama: list[np.ndarray] = []
        self._energy: list[np.ndarray] = []

    def push(self, block: np.ndarray) -> None:
        block = np.asarray(block)[:, :2]
        # Decoded audio is float32: keep it (the spectra are float32 anyway); energies below are
        # still float64 sums of exact squares.
        dtype = np.float32 if block.dtype == np.float32 else np.float64
        block = block.astype(dtype, copy=False)
        # Blocks of whole frames (e.g. 20 s at 44.1 or 48 kHz) leave nothing over: no copy then.
        buffer = np.concatenate([self._buffer.astype(dtype, copy=False), block]) if self._buffer.size else block
        n_frames = buffer.shape[0] // self.frame_len
        if n_frames:
            framed = buffer[: n_frames * self.frame_len].reshape(n_frames, self.frame_len, 2)
            left, right = framed[..., 0], framed[..., 1]
            tau = np.full(n_frames, np.nan)
            ild = np.empty(n_frames)
            energy_left = np.empty(n_frames)
            energy_right = np.empty(n_frames)
            for chunk, spectra in _pair_spectra_chunks(left, right, self.window, self.n_fft):
                if self.need_tau:
                    tau[chunk] = _gcc_phat_tau(
                        spectra, self.n_fft, self.sample_rate, self.max_tau_s, self.interp, self.bins
                    )
                ild[chunk] = _ild_from_spectra(spectra[0], spectra[1], self.sample_rate, self.n_fft, 1500.0)
                # Mean squares of exact float64 squares, chunk by chunk while the frames are in cache.
                energy_left[chunk] = np.mean(np.square(left[chunk], dtype=np.float64), axis=1)
                energy_right[chunk] = np.mean(np.square(right[chunk], dtype=np.float64), axis=1)
            silent = (energy_left < _SILENCE_MEAN_SQUARE) | (energy_right < _SILENCE_MEAN_SQUARE)
            tau[silent] = np.nan
            total = energy_left + energy_right
            with np.errstate(invalid="ignore", divide="ignore"):
                panorama = np.where(total / 2 < _SILENCE_MEAN_SQUARE, np.nan, (energy_left - energy_right) / total)
            self._tau.append(tau)
            self._panorama.append(panorama)
            self._ild.append(ild)
            self._energy.append(np.where(silent, 0.0, total))
            self._n_done += n_frames
        self._buffer = buffer[n_frames * self.frame_len :].copy()

    def results(self) -> dict[str, np.ndarray]:
        def joined(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0)

        return {
            "t": (np.arange(self._n_done) + 0.5) * self.frame_len / self.sample_rate,
            "tau_s": joined(self._tau),
            "ild_db": joined(self._ild),
            "panorama": joined(self._panorama),
            "energy": joined(self._energy),
        }


# ---------------------------------------------------------------------------------------------
# File level
# ---------------------------------------------------------------------------------------------


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _read_blocks(path: Path, block_s: float) -> tuple[int, int, Iterator[np.ndarray]]:
    from workbench.audio.loader import audio_info, iter_blocks

    info = audio_info(path)
    block_frames = max(1, int(block_s * info.sample_rate))
    return info.sample_rate, info.n_channels, (block for _, block in iter_blocks(path, block_frames))


def _resolve_layout(path: str | Path, n_channels: int, layout: str | None) -> str:
    from workbench.audio.layout import channels_for_layout, detect_layout

    chosen = detect_layout(n_channels, override=layout)
    if chosen == "mono":
        raise NoDirectionInformation(f"{path}: {MONO_EXPLANATION}")
    needed = channels_for_layout(chosen)
    if n_channels < needed:
        raise InputError(
            f"{path}: layout {chosen!r} needs {needed} channels but the file has {n_channels}; "
            "choose a layout that matches the file"
        )
    return chosen


def foa_heatmap_file(
    path: str | Path,
    *,
    layout: str | None = None,
    n_azimuth_bins: int = 72,
    band: tuple[float, float] = DEFAULT_BAND_HZ,
    dynamic_range_db: float = 40.0,
    block_s: float = 20.0,
) -> Heatmap:
    """Azimuth × time heatmap of a 4-channel file, streamed in ``block_s`` blocks.

    ``layout`` is ``ambix`` (default for 4 channels) or ``fuma``.
    """
    path = Path(path)
    sample_rate, n_channels, blocks = _read_blocks(path, block_s)
    chosen = _resolve_layout(path, n_channels, layout)
    if chosen not in FOA_LAYOUTS:
        raise InputError(f"{path}: the FOA heatmap needs an ambix or fuma layout, not {chosen!r}")
    stream = _FoaStream(
        sample_rate, band=band, n_azimuth_bins=n_azimuth_bins, dynamic_range_db=dynamic_range_db
    )
    for block in blocks:
        block = block[:, :4]
        stream.push(fuma_to_ambix(block) if chosen == "fuma" else block)
    stream.finish()
    return stream.heatmap()


def analyze_direction(
    path: str | Path,
    *,
    layout: str | None = None,
    band: tuple[float, float] | None = None,
    spacing_m: float | None = None,
    block_s: float = 20.0,
) -> dict[str, Any]:
    """Direction analysis of one audio file (JSON contract of ``aglw direction --json``).

    Parameters
    ----------
    path
        Audio file; streamed in ``block_s`` blocks, only reduced values are kept.
    layout
        ``ambix``, ``fuma``, ``binaural``, ``ab``, ``xy``, ``ms`` or ``stereo``; detected from the
        channel count when None (4 → ambix, 2 → stereo).
    band
        Analysis band in Hz (default 200–8000 Hz, clipped to the Nyquist frequency).
    spacing_m
        Microphone spacing in metres, required for ``ab``.
    block_s
        Block length in seconds.

    Returns
    -------
    dict
        ``layout``; ``frames``, one per ~100 ms: ``{t, azimuth_deg, elevation_deg, diffuseness,
        oclock}`` for FOA, ``{t, lateral_deg, oclock, oclock_mirror, ild_db}`` for two channels
        (for ``stereo``/``xy``/``ms`` the lateral angle is unknown (None) and each frame also
        carries ``panorama_index``, a level position in [−1, 1], + = left); ``peaks``, the dominant
        directions over the whole file, ``{azimuth_deg, elevation_deg, weight}`` or
        ``{lateral_deg, weight}`` (plus ``panorama_index`` for panorama layouts), weight being the
        peak's share of the direct energy. Unknown values (silent frames) are None.

    Raises
    ------
    NoDirectionInformation
        For a mono file (or a mono layout override).
    InputError
        Unreadable file, a layout that needs more channels than the file has, a bad band, or
        ``ab`` without a spacing.
    """
    path = Path(path)
    sample_rate, n_channels, blocks = _read_blocks(path, block_s)
    return _analyze_blocks(path, blocks, sample_rate, n_channels, layout, band, spacing_m)


def analyze_direction_samples(
    samples: np.ndarray,
    sample_rate: int,
    *,
    layout: str | None = None,
    band: tuple[float, float] | None = None,
    spacing_m: float | None = None,
    block_s: float = 20.0,
    name: str = "audio",
) -> dict[str, Any]:
    """:func:`analyze_direction` of audio already decoded, so a clip being opened is decoded once.

    Parameters
    ----------
    samples
        Samples shaped (frames, channels), e.g. :attr:`workbench.audio.loader.AudioData.samples`.
    sample_rate
        Sample rate in Hz.
    layout, band, spacing_m, block_s
        As in :func:`analyze_direction`; blocks of the same length give the same result as
        streaming the file.
    name
        How error messages name the audio (e.g. its path).

    Returns
    -------
    dict
        The same keys and values as :func:`analyze_direction`.

    Raises
    ------
    NoDirectionInformation
        For mono audio (or a mono layout override).
    InputError
        A layout that needs more channels than there are, a bad band, or ``ab`` without a spacing.
    """
    samples = np.asarray(samples)
    if samples.ndim != 2:
        raise ValueError(f"samples must be shaped (frames, channels), got {samples.shape}")
    if sample_rate <= 0:
        raise ValueError(f"sample rate must be positive, got {sample_rate}")
    blocks = _blocks_of(samples, max(1, int(block_s * sample_rate)))
    return _analyze_blocks(name, blocks, sample_rate, samples.shape[1], layout, band, spacing_m)


def _analyze_blocks(
    name: str | Path,
    blocks: Iterable[np.ndarray],
    sample_rate: int,
    n_channels: int,
    layout: str | None,
    band: tuple[float, float] | None,
    spacing_m: float | None,
) -> dict[str, Any]:
    chosen = _resolve_layout(name, n_channels, layout)
    if band is None:
        band = (DEFAULT_BAND_HZ[0], min(DEFAULT_BAND_HZ[1], sample_rate / 2.0))
    if chosen == "ab" and not (spacing_m is not None and spacing_m > 0):
        raise InputError(f"{name}: an AB (spaced pair) layout needs the microphone spacing: pass --spacing METRES")
    if chosen in FOA_LAYOUTS:
        return _analyze_foa(blocks, sample_rate, chosen, band)
    return _analyze_pair(blocks, sample_rate, chosen, band, spacing_m)


def _analyze_foa(blocks: Iterable[np.ndarray], sample_rate: int, layout: str, band: tuple[float, float]) -> dict[str, Any]:
    sphere_bin_deg = 5.0
    stream = _FoaStream(sample_rate, band=band, sphere_bin_deg=sphere_bin_deg)
    for block in blocks:
        block = block[:, :4]
        stream.push(fuma_to_ambix(block) if layout == "fuma" else block)
    stream.finish()
    frames = stream.frames()
    frame_rows = [
        {
            "t": float(t),
            "azimuth_deg": _finite_or_none(azimuth),
            "elevation_deg": _finite_or_none(elevation),
            "diffuseness": _finite_or_none(psi),
            "oclock": oclock(float(azimuth)) if np.isfinite(azimuth) else None,
        }
        for t, azimuth, elevation, psi in zip(frames.t, frames.azimuth_deg, frames.elevation_deg, frames.diffuseness)
    ]
    shape = (stream.n_sphere_el, stream.n_sphere_az)
    peaks = _sphere_peaks(stream.sphere_hist.reshape(shape), stream.sphere_vectors.reshape((3, *shape)), sphere_bin_deg)
    return {"layout": layout, "frames": frame_rows, "peaks": peaks}


def _analyze_pair(
    blocks: Iterable[np.ndarray], sample_rate: int, layout: str, band: tuple[float, float], spacing_m: float | None
) -> dict[str, Any]:
    max_tau_s = 0.0009 if layout != "ab" else max(0.0009, 1.05 * float(spacing_m) / SPEED_OF_SOUND_M_S)
    stream = _PairStream(
        sample_rate, frame_s=0.1, band=band, max_tau_s=max_tau_s, need_tau=layout not in PANORAMA_LAYOUTS
    )
    for block in blocks:
        block = block[:, :2]
        if layout == "ms":
            mid, side = block[:, 0], block[:, 1]
            block = np.stack([mid + side, mid - side], axis=1)
        stream.push(block)
    result = stream.results()
    tau, energy = result["tau_s"], result["energy"]

    if layout in PANORAMA_LAYOUTS:
        panorama = result["panorama"]
        frame_rows = [
            {
                "t": float(t),
                "lateral_deg": None,
                "oclock": None,
                "oclock_mirror": None,
                "ild_db": _finite_or_none(ild),
                "panorama_index": _finite_or_none(index),
            }
            for t, ild, index in zip(result["t"].tolist(), result["ild_db"].tolist(), panorama.tolist())
        ]
        valid = np.isfinite(panorama)
        edges = np.linspace(-1.0, 1.0, 41)
        peaks = [
            {"lateral_deg": None, "panorama_index": index, "weight": weight}
            for index, weight in _value_peaks(panorama[valid], energy[valid], edges)
        ]
        return {"layout": layout, "frames": frame_rows, "peaks": peaks}

    if layout == "binaural":
        lateral = np.degrees(lateral_from_itd_woodworth(-tau))
    else:
        lateral = np.degrees(lateral_from_tau_ab(tau, float(spacing_m)))
    lateral = np.atleast_1d(lateral)
    frame_rows = []
    # Python floats (tolist) make this per-frame loop several times faster than numpy scalars.
    for t, angle, ild in zip(result["t"].tolist(), lateral.tolist(), result["ild_db"].tolist()):
        hour = oclock(angle) if math.isfinite(angle) else None
        frame_rows.append(
            {
                "t": t,
                "lateral_deg": _finite_or_none(angle),
                "oclock": hour,
                "oclock_mirror": oclock_mirror(hour) if hour is not None else None,
                "ild_db": _finite_or_none(ild),
            }
        )
    valid = np.isfinite(lateral)
    edges = np.linspace(-90.0, 90.0, 91)
    peaks = [{"lateral_deg": angle, "weight": weight} for angle, weight in _value_peaks(lateral[valid], energy[valid], edges)]
    return {"layout": layout, "frames": frame_rows, "peaks": peaks}
