"""First-order Ambisonics: pseudo-intensity directions, diffuseness, azimuth × time heatmap,
steered response power and MUSIC (shared design doc ``spatial.md``, section FOA).

Long inputs are processed in blocks (the full complex STFT of 180 s of 4-channel 48 kHz audio
would be ~280 MB) and only reduced per-frame values and maps are kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.fft
import scipy.signal

from workbench.audio.direction.conventions import (
    DEFAULT_BAND_HZ,
    SILENCE_MEAN_SQUARE,
    SQRT3,
    ArrayRecord,
    ambix_steering,
    angular_distance_deg,
    band_bins,
    blocks_of,
    n3d_from_sn3d,
    normalised_direction,
    require_foa,
)
from workbench.errors import InputError

@dataclass(frozen=True, eq=False)
class FoaFrames(ArrayRecord):
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


@dataclass(frozen=True, eq=False)
class Heatmap(ArrayRecord):
    """Azimuth × time map: ``values[i, j]`` is the direct energy E·(1−ψ) in azimuth bin i at frame j."""

    times: np.ndarray
    azimuth_edges_deg: np.ndarray
    values: np.ndarray


@dataclass(frozen=True, eq=False)
class SphereMap(ArrayRecord):
    """Steered response power on an azimuth × elevation grid, ``power`` shaped (n_el, n_az)."""

    azimuths: np.ndarray
    elevations: np.ndarray
    power: np.ndarray


class FoaStream:
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
        self.bin_first, self.bin_stop = band_bins(band, sample_rate, n_fft)
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
        silent = mean_square < SILENCE_MEAN_SQUARE

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
    samples_ambix = require_foa(samples_ambix)
    stream = FoaStream(sample_rate, n_fft=n_fft, hop=hop, band=band, frame_s=frame_s)
    for block in blocks_of(samples_ambix, max(1, int(block_s * sample_rate))):
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
    samples = require_foa(samples)
    stream = FoaStream(
        sample_rate,
        n_fft=n_fft,
        hop=hop,
        band=band,
        frame_s=frame_s,
        n_azimuth_bins=n_azimuth_bins,
        dynamic_range_db=dynamic_range_db,
    )
    for block in blocks_of(samples, max(1, int(block_s * sample_rate))):
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
    first, stop = band_bins(band, sample_rate, n_fft)
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
    samples = require_foa(samples)
    window = samples[_window_slice(samples.shape[0], sample_rate, t0, t1)]
    covariance = _band_covariance(window, sample_rate, band, n_fft)
    azimuths, elevations = _sphere_grid(grid_deg)
    steering = ambix_steering(azimuths[None, :], elevations[:, None]) * np.array([1.0, kappa, kappa, kappa])
    power = np.einsum("eai,ij,eaj->ea", steering, covariance, steering)
    return SphereMap(azimuths=azimuths, elevations=elevations, power=power)



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
    # Only MUSIC needs these (SciPy's optimiser alone takes ~0.1 s to import).
    import scipy.ndimage
    import scipy.optimize

    if n_sources not in (1, 2):
        raise ValueError(
            f"MUSIC on first-order Ambisonics locates 1 or 2 simultaneous sources, got n_sources={n_sources}: "
            "with 3 the one-vector noise subspace is orthogonal to a whole circle of directions, so the "
            "covariance cannot place them"
        )
    samples = require_foa(samples)
    window = n3d_from_sn3d(samples[_window_slice(samples.shape[0], sample_rate, t0, t1)])
    covariance = _band_covariance(window, sample_rate, band, n_fft)
    _, eigenvectors = np.linalg.eigh(covariance)  # ascending eigenvalues
    noise_subspace = eigenvectors[:, : 4 - n_sources]
    n3d_scale = np.array([1.0, SQRT3, SQRT3, SQRT3])

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
        if any(angular_distance_deg(*start, az, el) < min_separation for az, el, _ in found):
            continue
        result = scipy.optimize.minimize(
            lambda p: float(noise_projection(p[0], p[1])),
            x0=np.array(start),
            method="Nelder-Mead",
            options={"xatol": 0.01, "fatol": 1e-14, "initial_simplex": np.array(
                [start, (start[0] + grid_deg, start[1]), (start[0], start[1] + grid_deg)]
            )},
        )
        azimuth, elevation = normalised_direction(float(result.x[0]), float(result.x[1]))
        if any(angular_distance_deg(azimuth, elevation, az, el) < min_separation for az, el, _ in found):
            continue
        found.append((azimuth, elevation, float(result.fun)))
        if len(found) == n_sources:
            break
    return [(azimuth, elevation) for azimuth, elevation, _ in found]
