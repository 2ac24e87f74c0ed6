"""Two-channel pairs: GCC-PHAT time difference, Woodworth / AB lateral angle, ILD, level panorama
(shared design doc ``spatial.md``, section Binaural and stereo)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import numpy as np
import scipy.fft
import scipy.signal

from workbench.audio.direction.conventions import (
    HEAD_RADIUS_M,
    SILENCE_MEAN_SQUARE,
    SPEED_OF_SOUND_M_S,
    band_bins,
)

# Two-channel frame path: threads per FFT (parallelism comes from running the direction map
# beside the spectrogram), and frames per batch (bounds the float32 spectra to a few MB).
_FFT_WORKERS = 1
_PAIR_CHUNK_FRAMES = 64

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


def _smooth_length_at_least(n: int) -> int:
    """The smallest even 2^a·3^b·5^c ≥ ``n``: pocketfft's real transforms are fastest on these
    (lengths with factors 7 or 11, which ``next_fast_len`` also offers, run up to 25 % slower)."""
    best = 1 << max(n - 1, 1).bit_length()
    power5 = 1
    while power5 < best:
        power35 = power5
        while power35 < best:
            length = power35
            while length < n or length % 2:
                length *= 2
            best = min(best, length)
            power35 *= 3
        power5 *= 5
    return best


def _lag_window_fft_len(frame_len: int, sample_rate: int, max_tau_s: float) -> int:
    """FFT length of the streaming GCC-PHAT: the frame plus the lag window, not twice the frame.

    A frame zero-padded to n samples gives the circular correlation, which equals the linear one
    at every |lag| ≤ n − frame_len; the search only reads |lag| ≤ max_tau (plus the parabola's
    neighbour), so padding by that much loses nothing it reads. The PHAT weighting then samples
    the cross-spectrum on this grid instead of the 2×frame one of :func:`gcc_phat_frames`: τ moves
    by a few hundredths of a sample (on the P1 recording the lateral angle by 0.03° median, 0.13°
    at the 99th percentile), while the forward FFTs and every per-bin step cost about half.
    """
    guard = int(math.ceil(max_tau_s * sample_rate)) + 2
    return _smooth_length_at_least(frame_len + guard)


def _band_bins_or_all(band: tuple[float, float] | None, sample_rate: int, n_fft: int) -> tuple[int, int]:
    """rfft bins the whitened cross-spectrum keeps: the band's (see :func:`band_bins`) or all."""
    return band_bins(band, sample_rate, n_fft) if band is not None else (0, n_fft // 2 + 1)


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


def _padded_buffer(n_frames: int, n_fft: int) -> np.ndarray:
    """A zeroed float32 buffer shaped (2, n_frames, n_fft) for :func:`_pair_spectra_chunks`."""
    return np.zeros((2, n_frames, n_fft), dtype=np.float32)


def _pair_spectra_chunks(
    left: np.ndarray, right: np.ndarray, window: np.ndarray, n_fft: int, padded: np.ndarray | None = None
) -> Iterator[tuple[slice, np.ndarray]]:
    """float32 rfft spectra of both channels' windowed frames, zero-padded to ``n_fft``.

    Yields ``(frames, spectra)`` per chunk of :data:`_PAIR_CHUNK_FRAMES` frames, ``spectra``
    complex64 shaped (2, chunk frames, n_fft//2+1). One zero-padded buffer is reused for all
    chunks (only its first ``frame_len`` columns are ever written); pass ``padded`` (from
    :func:`_padded_buffer`) to reuse it across calls too: zeroing a new one per call costs as
    much as a tenth of the analysis when a stream is fed in short blocks.
    """
    n_frames, frame_len = left.shape
    if padded is None or padded.shape[1] < min(n_frames, _PAIR_CHUNK_FRAMES):
        padded = _padded_buffer(min(n_frames, _PAIR_CHUNK_FRAMES), n_fft)
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
        silent[chunk] = (_mean_square(left_frames[chunk]) < SILENCE_MEAN_SQUARE) | (
            _mean_square(right_frames[chunk]) < SILENCE_MEAN_SQUARE
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
        index = np.where(total / 2 < SILENCE_MEAN_SQUARE, np.nan, (energy_left - energy_right) / total)
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
    floor = SILENCE_MEAN_SQUARE * n_fft * n_fft
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            (power_left < floor) | (power_right < floor), np.nan, 10.0 * np.log10(power_left / power_right)
        )


class PairStream:
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
        self.n_fft = _lag_window_fft_len(self.frame_len, sample_rate, max_tau_s)
        self.window = scipy.signal.get_window("hann", self.frame_len).astype(np.float32)
        self.bins = _band_bins_or_all(band, sample_rate, self.n_fft)
        self.max_tau_s = max_tau_s
        self.interp = interp
        self.need_tau = need_tau
        self._buffer = np.zeros((0, 2))
        self._padded: np.ndarray | None = None  # the zero-padded frames, reused by every push
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
            if self._padded is None or self._padded.shape[1] < min(n_frames, _PAIR_CHUNK_FRAMES):
                self._padded = _padded_buffer(min(n_frames, _PAIR_CHUNK_FRAMES), self.n_fft)
            for chunk, spectra in _pair_spectra_chunks(left, right, self.window, self.n_fft, self._padded):
                if self.need_tau:
                    tau[chunk] = _gcc_phat_tau(
                        spectra, self.n_fft, self.sample_rate, self.max_tau_s, self.interp, self.bins
                    )
                ild[chunk] = _ild_from_spectra(spectra[0], spectra[1], self.sample_rate, self.n_fft, 1500.0)
                # Mean squares of exact float64 squares, chunk by chunk while the frames are in cache.
                energy_left[chunk] = np.mean(np.square(left[chunk], dtype=np.float64), axis=1)
                energy_right[chunk] = np.mean(np.square(right[chunk], dtype=np.float64), axis=1)
            silent = (energy_left < SILENCE_MEAN_SQUARE) | (energy_right < SILENCE_MEAN_SQUARE)
            tau[silent] = np.nan
            total = energy_left + energy_right
            with np.errstate(invalid="ignore", divide="ignore"):
                panorama = np.where(total / 2 < SILENCE_MEAN_SQUARE, np.nan, (energy_left - energy_right) / total)
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
