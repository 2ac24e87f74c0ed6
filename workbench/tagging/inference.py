"""Clip-level AudioSet tags and a per-second timeline from an EfficientAT model.

Rules (a documented contract, also in the project README):

* **Front end.** The clip is decoded to mono (channel mean) at 32 kHz and turned into one
  log-mel spectrogram (:mod:`workbench.tagging.preprocess`, 100 frames per second).
* **Clip level.** A clip of at most 10 s (320 000 samples) is ONE window: the model sees
  its whole log-mel, exactly as the EfficientAT reference does, with no padding. A longer
  clip is cut into 10 s windows (1 000 frames) every 5 s, the last one aligned to the end of
  the clip so every sample is seen; the clip probability of a class is the **maximum over
  windows** of the window probabilities (sigmoid of the logits). Windows are sliced from
  the clip's log-mel; they differ from re-running the front end on each window only in the
  couple of frames at each window edge.
* **Timeline.** One value per second of audio (``ceil(duration)`` values; the last covers a
  partial second). The value for second *i* is the probability from a 2 s window centred on
  that second (``[i − 0.5 s, i + 1.5 s)``), shifted to stay inside the clip; a clip shorter
  than 2 s uses its whole log-mel for every second. Two seconds is the shortest window on
  which the model's time resolution (32× downsampling) still leaves several frames, and
  the 1 s hop keeps the cost at twice real time of model input.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch

from torch.nn.utils.fusion import fuse_conv_bn_eval

from workbench.tagging.model import ConvNormActivation, MobileNetAudioTagger
from workbench.tagging.preprocess import FRAMES_PER_SECOND, SAMPLE_RATE, LogMelFrontEnd

CLIP_WINDOW_S = 10.0
CLIP_HOP_S = 5.0
TIMELINE_WINDOW_S = 2.0
TIMELINE_HOP_S = 1.0
DEFAULT_BATCH_SIZE = 16


@dataclass(frozen=True)
class TagResult:
    """What tagging one clip yields (plain arrays; no model or storage objects).

    Attributes
    ----------
    probabilities
        (527,) clip probabilities in class-index order.
    duration_s
        Duration of the tagged audio at 32 kHz.
    n_windows
        Number of clip-level windows (1 for clips of at most 10 s).
    timeline
        (n_seconds, 527) per-second probabilities, or None when not computed.
    timeline_hop_s
        Seconds between timeline values (1.0).
    """

    probabilities: np.ndarray
    duration_s: float
    n_windows: int
    timeline: np.ndarray | None
    timeline_hop_s: float = TIMELINE_HOP_S

    def top(self, k: int) -> list[int]:
        """Class indices of the ``k`` highest clip probabilities, highest first (ties by index)."""
        order = np.lexsort((np.arange(self.probabilities.size), -self.probabilities))
        return [int(i) for i in order[: max(0, k)]]


def clip_window_starts(total_frames: int, n_samples: int) -> list[int] | None:
    """Frame offsets of the 10 s clip-level windows; None when the whole clip is one window."""
    if n_samples <= int(CLIP_WINDOW_S * SAMPLE_RATE):
        return None
    width = int(CLIP_WINDOW_S * FRAMES_PER_SECOND)
    hop = int(CLIP_HOP_S * FRAMES_PER_SECOND)
    last = total_frames - width
    starts = list(range(0, last + 1, hop))
    if starts[-1] != last:
        starts.append(last)
    return starts


def timeline_window_starts(total_frames: int, duration_s: float) -> tuple[list[int], int]:
    """Frame offset of each second's timeline window, and the window width in frames."""
    n_seconds = max(1, math.ceil(duration_s - 1e-9))
    width = int(TIMELINE_WINDOW_S * FRAMES_PER_SECOND)
    if total_frames <= width:
        return [0] * n_seconds, total_frames
    half_extra = (TIMELINE_WINDOW_S - TIMELINE_HOP_S) / 2
    starts = []
    for second in range(n_seconds):
        start = int(round((second * TIMELINE_HOP_S - half_extra) * FRAMES_PER_SECOND))
        starts.append(min(max(start, 0), total_frames - width))
    return starts, width


def _fold_batch_norm(model: MobileNetAudioTagger) -> MobileNetAudioTagger:
    """An inference copy of ``model`` with each BatchNorm folded into the convolution before it.

    Eval-mode BatchNorm is an affine map, so folding it changes outputs only by float rounding
    (well under 1e-4 on logits, checked against the reference fixture) and saves a pass over
    every feature map. The caller's model is left untouched.
    """
    folded = copy.deepcopy(model).eval()
    for module in folded.modules():
        if isinstance(module, ConvNormActivation):
            module[0] = fuse_conv_bn_eval(module[0], module[1])
            module[1] = torch.nn.Identity()
    return folded


class AudioTagger:
    """Runs a loaded EfficientAT model over waveforms (mono, 32 kHz).

    Parameters
    ----------
    model
        A model with verified weights (see :func:`workbench.tagging.assets.load_checkpoint`).
    device
        Where to run (``cpu`` or ``cuda``); the front end runs there too.
    batch_size
        Windows per forward pass.
    """

    def __init__(self, model: MobileNetAudioTagger, *, device: str | torch.device = "cpu", batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if batch_size < 1:
            raise ValueError(f"batch size must be at least 1, got {batch_size}")
        self.device = torch.device(device)
        # channels-last lets oneDNN / cuDNN run the depthwise convolutions without layout
        # conversions (about 30 % faster on 2 s windows on CPU); results are unchanged.
        self.model = _fold_batch_norm(model.eval()).to(self.device, memory_format=torch.channels_last)
        self.front_end = LogMelFrontEnd().to(self.device)
        self.batch_size = batch_size

    def log_mel(self, waveform: np.ndarray) -> torch.Tensor:
        """(128, frames) log-mel of a mono 32 kHz waveform, on the tagger's device."""
        samples = torch.as_tensor(np.ascontiguousarray(waveform, dtype=np.float32), device=self.device)
        with torch.inference_mode():
            return self.front_end(samples.reshape(1, -1))[0]

    def logits(self, mel_windows: torch.Tensor) -> torch.Tensor:
        """Logits (n, 527) of equally long log-mel windows (n, 128, frames), in batches."""
        outputs = []
        with torch.inference_mode():
            for start in range(0, mel_windows.shape[0], self.batch_size):
                batch = mel_windows[start : start + self.batch_size].unsqueeze(1)
                batch = batch.contiguous(memory_format=torch.channels_last)
                logits, _ = self.model(batch)
                outputs.append(logits.float())
        return torch.cat(outputs)

    def tag(self, waveform: np.ndarray, *, timeline: bool = True) -> TagResult:
        """Clip probabilities (and the per-second timeline) of one waveform; see the module rules.

        Parameters
        ----------
        waveform
            Mono samples at 32 kHz, shaped (n,) or (n, 1).
        timeline
            Also compute the per-second timeline.

        Raises
        ------
        ValueError
            Fewer than 2 samples, or non-finite samples.
        """
        samples = np.asarray(waveform, dtype=np.float32).reshape(-1)
        if samples.size < 2:
            raise ValueError("the audio is too short to tag (fewer than 2 samples at 32 kHz)")
        if not np.isfinite(samples).all():
            raise ValueError("the audio holds NaN or infinite samples")
        mel = self.log_mel(samples)
        total = mel.shape[1]
        starts = clip_window_starts(total, samples.size)
        if starts is None:
            windows = mel.unsqueeze(0)
        else:
            width = int(CLIP_WINDOW_S * FRAMES_PER_SECOND)
            windows = torch.stack([mel[:, s : s + width] for s in starts])
        clip_probabilities = torch.sigmoid(self.logits(windows)).amax(dim=0)
        duration_s = samples.size / SAMPLE_RATE
        per_second = None
        if timeline:
            second_starts, width = timeline_window_starts(total, duration_s)
            unique_starts = sorted(set(second_starts))
            probabilities = torch.sigmoid(self.logits(torch.stack([mel[:, s : s + width] for s in unique_starts])))
            row_of = {s: row for row, s in enumerate(unique_starts)}
            per_second = probabilities[[row_of[s] for s in second_starts]].cpu().numpy()
        return TagResult(
            probabilities=clip_probabilities.cpu().numpy(),
            duration_s=duration_s,
            n_windows=1 if starts is None else len(starts),
            timeline=per_second,
        )
