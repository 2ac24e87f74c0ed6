"""EfficientAT's log-mel front end, without torchaudio.

waveform (32 kHz mono) → pre-emphasis y[n] = x[n+1] − 0.97 x[n] (one sample shorter) →
centered STFT (n_fft 1024, symmetric 800-sample Hann window, hop 320, reflect padding) →
power → Kaldi-style triangular mel banks (128 bins, 0–15 000 Hz, the 513th FFT bin gets
weight 0) → log(x + 1e-5) → (x + 4.5) / 5.

A signal of N samples gives 1 + (N − 1) // 320 frames (1 000 frames for 10 s). The reflect
padding of the centred STFT needs at least :data:`MIN_SAMPLES` samples (16 ms).

The STFT, power, mel and log run over blocks of frames, so that a long clip's spectrum is
never held whole (each frame is computed from the same padded samples as in one pass, so the
values are those of the one-pass computation).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import torch
from torch import nn

from workbench.tagging.decode import SAMPLE_RATE
N_FFT = 1024
WIN_LENGTH = 800
HOP = 320
N_MELS = 128
F_MIN = 0.0
F_MAX = 15_000.0
PREEMPHASIS = 0.97
LOG_OFFSET = 1e-5
FRAMES_PER_SECOND = SAMPLE_RATE / HOP  # 100
MIN_SAMPLES = N_FFT // 2 + 2  # the pre-emphasised signal must be longer than the reflect padding
_BLOCK_FRAMES = 512  # frames per block: the block's complex spectrum (≈ 2 MB) stays in cache


def _mel(freq_hz: torch.Tensor | float) -> torch.Tensor | float:
    if isinstance(freq_hz, torch.Tensor):
        return 1127.0 * torch.log1p(freq_hz / 700.0)
    return 1127.0 * math.log1p(freq_hz / 700.0)


def kaldi_mel_banks(
    n_mels: int = N_MELS,
    n_fft: int = N_FFT,
    sample_rate: int = SAMPLE_RATE,
    f_min: float = F_MIN,
    f_max: float = F_MAX,
) -> torch.Tensor:
    """Triangular mel filters as Kaldi defines them (no VTLN), shaped (n_mels, n_fft // 2 + 1).

    The triangles are linear in the mel domain (mel = 1127 ln(1 + f / 700)) over the first
    ``n_fft // 2`` FFT bins; the Nyquist bin gets weight 0, as in the reference front end.

    Parameters
    ----------
    n_mels, n_fft, sample_rate, f_min, f_max
        Filter-bank geometry; ``f_max <= 0`` counts down from the Nyquist frequency.

    Returns
    -------
    torch.Tensor
        float32 weights.
    """
    nyquist = 0.5 * sample_rate
    if f_max <= 0.0:
        f_max += nyquist
    if not 0.0 <= f_min < f_max <= nyquist:
        raise ValueError(f"mel bank range must satisfy 0 <= f_min < f_max <= {nyquist}, got {f_min}, {f_max}")
    bin_width_hz = sample_rate / n_fft
    mel_low = _mel(f_min)
    mel_high = _mel(f_max)
    mel_step = (mel_high - mel_low) / (n_mels + 1)
    band = torch.arange(n_mels, dtype=torch.float32).unsqueeze(1)
    left = mel_low + band * mel_step
    center = mel_low + (band + 1.0) * mel_step
    right = mel_low + (band + 2.0) * mel_step
    bin_mel = _mel(bin_width_hz * torch.arange(n_fft // 2, dtype=torch.float32)).unsqueeze(0)
    rising = (bin_mel - left) / (center - left)
    falling = (right - bin_mel) / (right - center)
    weights = torch.clamp(torch.minimum(rising, falling), min=0.0)
    return nn.functional.pad(weights, (0, 1))


class LogMelFrontEnd(nn.Module):
    """Waveform (batch, samples) at 32 kHz → normalised log-mel (batch, 128, frames).

    Holds no parameters (only non-persistent buffers), so it never appears in a state dict.
    """

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("window", torch.hann_window(WIN_LENGTH, periodic=False), persistent=False)
        self.register_buffer("mel_banks", kaldi_mel_banks(), persistent=False)

    def forward(
        self, waveform: torch.Tensor, *, block_map: Callable[[Callable[[int], None], Iterable[int]], Iterable[object]] = map
    ) -> torch.Tensor:
        """Log-mel of ``waveform`` (batch, samples).

        ``block_map(fn, firsts)`` calls ``fn`` on the first frame of every block of frames; pass
        a thread pool's ``map`` to compute the blocks in parallel (each writes its own frames).
        """
        padded = self.padded_signal(waveform)
        total = 1 + (padded.shape[1] - N_FFT) // HOP
        out = torch.empty(waveform.shape[0], N_MELS, total, dtype=self.mel_banks.dtype, device=waveform.device)

        def fill(first: int) -> None:
            count = min(_BLOCK_FRAMES, total - first)
            out[:, :, first : first + count] = self.frames(padded, first, count)

        for _ in block_map(fill, range(0, total, _BLOCK_FRAMES)):
            pass
        return out

    def padded_signal(self, waveform: torch.Tensor) -> torch.Tensor:
        """The pre-emphasised signal with the centred STFT's reflect padding, (batch, samples − 1 + 1024)."""
        if waveform.ndim != 2:
            raise ValueError(f"expected a waveform shaped (batch, samples), got {tuple(waveform.shape)}")
        if waveform.shape[1] < MIN_SAMPLES:
            raise ValueError(
                f"the waveform must hold at least {MIN_SAMPLES} samples ({1000 * MIN_SAMPLES / SAMPLE_RATE:.0f} ms "
                f"at 32 kHz), got {waveform.shape[1]}"
            )
        length = waveform.shape[1] - 1
        half = N_FFT // 2
        padded = torch.empty(waveform.shape[0], length + 2 * half, dtype=waveform.dtype, device=waveform.device)
        signal = padded[:, half : half + length]
        torch.mul(waveform[:, :-1], PREEMPHASIS, out=signal)
        torch.sub(waveform[:, 1:], signal, out=signal)  # the reference's rounding: x[n+1] − (0.97 x[n])
        padded[:, :half] = padded[:, half + 1 : 2 * half + 1].flip(-1)  # mirror around the first sample
        padded[:, half + length :] = padded[:, length - 1 : length - 1 + half].flip(-1)  # and the last
        return padded

    def frames(self, padded: torch.Tensor, first: int, count: int) -> torch.Tensor:
        """Normalised log-mel (batch, 128, count) of frames ``first …`` of a :meth:`padded_signal`."""
        block = padded[:, first * HOP : (first + count - 1) * HOP + N_FFT]
        spectrum = torch.stft(
            block,
            N_FFT,
            hop_length=HOP,
            win_length=WIN_LENGTH,
            window=self.window,
            center=False,
            normalized=False,
            return_complex=True,
        )
        parts = torch.view_as_real(spectrum)
        power = parts[..., 0].square().add_(parts[..., 1].square())
        return torch.matmul(self.mel_banks, power).add_(LOG_OFFSET).log_().add_(4.5).div_(5.0)


def n_frames(n_samples: int) -> int:
    """Number of mel frames the front end makes of ``n_samples`` samples."""
    return 1 + (n_samples - 1) // HOP


def log_mel(waveform: np.ndarray) -> np.ndarray:
    """Normalised log-mel of one mono 32 kHz waveform, shaped (128, frames) (float32)."""
    with torch.inference_mode():
        tensor = torch.as_tensor(np.ascontiguousarray(waveform, dtype=np.float32)).reshape(1, -1)
        return LogMelFrontEnd()(tensor)[0].numpy()
