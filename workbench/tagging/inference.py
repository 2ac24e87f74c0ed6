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
  partial second), read from the clip windows above, so the model runs only once per
  window. The network's last feature map has one column per 32 frames (0.32 s; column *j*
  of a window starting at frame *s* is centred on frame ``s + 32 j``). Second *i* takes the
  window whose centre is nearest to the second's centre (the earlier one on a tie), averages
  that window's feature columns centred inside the second (the single nearest column when
  none is), and passes the average through the model's classifier head, exactly as the
  head pools a whole window. Each value thus sees the 10 s context of its window (the
  squeeze-excitation gates are those of the window), at ≈ 1 s resolution.

The convolutional trunk runs once per window and yields the frequency-averaged columns of
its last feature map; the clip logits pool all columns of a window, the timeline pools
the columns of each second. On CPU the trunk is a frozen, oneDNN-optimised TorchScript
graph (same numbers as the eager module up to float rounding), and the log-mel blocks and
the windows of a clip are spread over worker threads that each run single-threaded kernels.
"""

from __future__ import annotations

import copy
import logging
import math
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from workbench.tagging.model import ConvNormActivation, MobileNetAudioTagger
from workbench.tagging.precision import DEFAULT_PRECISION, autocast, check_precision, effective, float32_precision
from workbench.tagging.preprocess import FRAMES_PER_SECOND, MIN_SAMPLES, SAMPLE_RATE, LogMelFrontEnd

log = logging.getLogger(__name__)
_T = TypeVar("_T")
_R = TypeVar("_R")

CLIP_WINDOW_S = 10.0
CLIP_HOP_S = 5.0
TIMELINE_HOP_S = 1.0
COLUMN_FRAMES = 32  # input frames per column of the last feature map (five stride-2 stages)
DEFAULT_BATCH_SIZE = 16
# Windows per pass on a GPU: the network reaches about twice its per-clip rate when windows of
# many clips share a pass (512 measured on an H200; 256 keeps a pass under ~0.5 GB of input).
DEFAULT_GPU_BATCH_SIZE = 256
# On CPU a forward pass holds at most this many log-mel frames (two 10 s windows): bigger
# batches spill the activations out of the cache and run slower per window, not faster.
CPU_FRAMES_PER_PASS = 2_000
# The optimised CPU graph costs about a second to build; a tagger builds it once it has run
# this many windows, so tagging one short file stays quick to start.
OPTIMISE_AFTER_WINDOWS = 4


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


def timeline_pooling(window_starts: Sequence[int], window_frames: int, n_columns: int, duration_s: float) -> np.ndarray:
    """Weights that turn the feature columns of the clip windows into per-second columns.

    Parameters
    ----------
    window_starts
        Frame offset of each clip window (``[0]`` for a clip that is one window).
    window_frames
        Frames per window (all windows are equally long).
    n_columns
        Columns of the last feature map per window.
    duration_s
        Duration of the clip.

    Returns
    -------
    numpy.ndarray
        (n_seconds, len(window_starts) * n_columns) float32; row *i* averages the columns
        that make second *i* (see the module rules), in window-major order.
    """
    if not window_starts or window_frames < 1 or n_columns < 1:
        raise ValueError("the timeline needs at least one window with at least one feature column")
    n_seconds = max(1, math.ceil(duration_s - 1e-9))
    starts = np.asarray(window_starts, dtype=np.float64)
    window_centres = starts + window_frames / 2.0
    offsets = COLUMN_FRAMES * np.arange(n_columns, dtype=np.float64)
    weights = np.zeros((n_seconds, starts.size * n_columns), dtype=np.float32)
    for second in range(n_seconds):
        low = second * TIMELINE_HOP_S * FRAMES_PER_SECOND
        high = min(second + TIMELINE_HOP_S, duration_s) * FRAMES_PER_SECOND
        centre = 0.5 * (low + high)
        window = int(np.argmin(np.abs(window_centres - centre)))  # first minimum: the earlier window
        column_centres = starts[window] + offsets
        inside = np.flatnonzero((column_centres >= low) & (column_centres < high))
        if inside.size == 0:
            inside = np.array([int(np.argmin(np.abs(column_centres - centre)))])
        weights[second, window * n_columns + inside] = 1.0 / inside.size
    return weights


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


class _FeatureColumns(nn.Module):
    """The model's convolutional trunk, averaged over frequency: (n, 1, 128, T) → (n, C, columns)."""

    def __init__(self, model: MobileNetAudioTagger) -> None:
        super().__init__()
        self.features = model.features

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.features(mel).mean(dim=2)


def _optimised_for_cpu(trunk: _FeatureColumns) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """``trunk`` as a frozen TorchScript graph with oneDNN convolutions, or None when that fails.

    TorchScript is deprecated in favour of ``torch.compile``, which needs a C++ toolchain on
    the user's machine and minutes of compiling; the frozen graph is built in about a second,
    keeps the weights in oneDNN's blocked layout and fuses activations, which makes the trunk
    about twice as fast on CPU. Its deprecation warnings are silenced here only; any failure
    (a future PyTorch without ``torch.jit``, a graph that disagrees with the eager module)
    falls back to the eager module.
    """
    noise = 0.1 * torch.randn(1, SAMPLE_RATE, generator=torch.Generator().manual_seed(0))
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            example = LogMelFrontEnd()(noise).unsqueeze(1)  # a realistic input: 1 s of log-mel
            warnings.filterwarnings("ignore", message=r"`torch\.jit\.\w+` is deprecated", category=DeprecationWarning)
            traced = torch.jit.trace(trunk, example, check_trace=False)
            optimised = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))
            expected = trunk(example)
            got = optimised(example)
        scale = max(1.0, expected.abs().max().item())
        if got.shape != expected.shape or (got - expected).abs().max().item() > 1e-5 * scale:
            raise RuntimeError(f"optimised trunk differs by {(got - expected).abs().max().item():.3g}")
    except Exception as exc:  # noqa: BLE001 - any failure only costs speed
        log.info("running the tagging model eagerly (TorchScript optimisation unavailable: %s)", exc)
        return None
    return optimised


_threads_lock = threading.Lock()
_single_threaded_users = 0
_saved_threads = 1


@contextmanager
def _single_threaded_kernels() -> Iterator[None]:
    """Let torch run each op on one thread while a tagger's own threads share out the work.

    torch's intra-op thread count is process-wide; it is set to 1 while any tagger is inside
    such a scope and restored when the last one leaves.
    """
    global _single_threaded_users, _saved_threads
    with _threads_lock:
        if _single_threaded_users == 0:
            _saved_threads = torch.get_num_threads()
            torch.set_num_threads(1)
        _single_threaded_users += 1
    try:
        yield
    finally:
        with _threads_lock:
            _single_threaded_users -= 1
            if _single_threaded_users == 0:
                torch.set_num_threads(_saved_threads)


class AudioTagger:
    """Runs a loaded EfficientAT model over waveforms (mono, 32 kHz).

    Parameters
    ----------
    model
        A model with verified weights (see :func:`workbench.tagging.assets.load_checkpoint`).
    device
        Where to run (``cpu`` or ``cuda``); the front end runs there too.
    batch_size
        At most this many windows per forward pass (on CPU also at most
        :data:`CPU_FRAMES_PER_PASS` frames per pass).
    threads
        CPU only: worker threads for one clip (default: ``torch.get_num_threads()`` when the
        tagger is made). With more than one, the blocks of the log-mel and the forward passes
        of the windows run in parallel on these threads, and torch's (process-wide) intra-op
        thread count is 1 while a clip is tagged, then restored: many small parallel ops
        wait on each other and crawl when other processes share the cores, whole passes do
        not. With 1, everything runs in the calling thread with torch's own setting.
    optimise
        CPU only: switch to the frozen oneDNN graph of the network once the tagger has run
        :data:`OPTIMISE_AFTER_WINDOWS` windows (same outputs up to float rounding).
    precision
        ``full`` (default: IEEE float32 on every device, whatever PyTorch's process-wide TF32
        settings are) or ``fast`` (TF32 and bf16 autocast on CUDA); see
        :mod:`workbench.tagging.precision`.
    """

    def __init__(
        self,
        model: MobileNetAudioTagger,
        *,
        device: str | torch.device = "cpu",
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
        optimise: bool = True,
        precision: str = DEFAULT_PRECISION,
    ) -> None:
        check_precision(precision)
        if batch_size < 1:
            raise ValueError(f"batch size must be at least 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.device = torch.device(device)
        self.precision = precision
        self._effective_precision = effective(self.device, precision)
        # channels-last lets oneDNN / cuDNN run the depthwise convolutions without layout
        # conversions; results are unchanged.
        self.model = _fold_batch_norm(model.eval()).to(self.device, memory_format=torch.channels_last)
        self.front_end = LogMelFrontEnd().to(self.device)
        self.batch_size = batch_size
        self._eager_trunk = _FeatureColumns(self.model).eval()
        self._trunk: Callable[[torch.Tensor], torch.Tensor] = self._eager_trunk
        self._head = self.model.classifier[2:]  # after the global pooling: linear, hardswish, dropout, linear
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._windows_run = 0
        on_cpu = self.device.type == "cpu"
        self._optimise_pending = on_cpu and optimise
        self.threads = (torch.get_num_threads() if threads is None else threads) if on_cpu else 1

    @property
    def optimised(self) -> bool:
        """Whether the network now runs as the frozen oneDNN graph (CPU)."""
        return self._trunk is not self._eager_trunk

    def _maybe_optimise(self, n_windows: int) -> None:
        with self._lock:
            self._windows_run += n_windows
            if self._optimise_pending and self._windows_run >= OPTIMISE_AFTER_WINDOWS:
                self._optimise_pending = False
                self._trunk = _optimised_for_cpu(self._eager_trunk) or self._eager_trunk

    def log_mel(self, waveform: np.ndarray) -> torch.Tensor:
        """(128, frames) log-mel of a mono 32 kHz waveform, on the tagger's device."""
        samples = self._to_device(np.ascontiguousarray(waveform, dtype=np.float32))
        with torch.inference_mode(), self._float32():
            return self.front_end(samples.reshape(1, -1), block_map=self._map)[0]

    def _to_device(self, samples: np.ndarray) -> torch.Tensor:
        """The samples on the tagger's device; to a GPU from pinned memory without blocking the host."""
        tensor = torch.from_numpy(samples)
        if self.device.type != "cuda":
            return tensor
        # A pinned copy is DMA'd while the host goes on (the network's work already queued on
        # the stream keeps the GPU busy meanwhile); the stream orders the copy before its use.
        return tensor.pin_memory().to(self.device, non_blocking=True)

    def _float32(self) -> AbstractContextManager[None]:
        """PyTorch's float32 precision for this tagger (process-wide while inside)."""
        return float32_precision(self._effective_precision)

    def feature_columns(self, mel_windows: torch.Tensor) -> torch.Tensor:
        """Frequency-averaged last feature maps (n, C, columns) of equally long log-mel windows (n, 128, frames)."""
        self._maybe_optimise(mel_windows.shape[0])
        per_pass = self.pass_size(mel_windows.shape[-1])
        batches = [mel_windows[start : start + per_pass] for start in range(0, mel_windows.shape[0], per_pass)]
        return torch.cat(list(self._map(self._run_trunk, batches)))

    def _run_trunk(self, batch: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode(), self._float32(), autocast(self.device, self.precision):
            mel = batch.unsqueeze(1)
            if not self.optimised:
                mel = mel.contiguous(memory_format=torch.channels_last)
            return self._trunk(mel).float()

    def _map(self, fn: Callable[[_T], _R], items: Iterable[_T]) -> list[_R]:
        """``[fn(item) for item in items]``, spread over the tagger's threads on CPU (in order)."""
        items = list(items)
        if min(self.threads, len(items)) <= 1:
            return [fn(item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="aglw-tagger")

        def call(item: _T) -> _R:
            with torch.inference_mode():  # thread-local: each worker enters it itself
                return fn(item)

        with self._kernel_scope():
            return list(self._pool.map(call, items))

    def _kernel_scope(self) -> AbstractContextManager[None]:
        """Single-threaded kernels for a whole call when the tagger spreads work over its threads.

        Switching torch's thread count costs time, so :meth:`tag` switches once per clip
        (nested scopes only count); with ``threads == 1`` torch's own setting is left alone.
        """
        return _single_threaded_kernels() if self.threads > 1 else nullcontext()

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        """Logits (n, 527) of pooled feature vectors (n, C), through the model's classifier head."""
        with torch.inference_mode(), self._float32(), autocast(self.device, self.precision):
            return self._head(pooled.to(self.device)).float()

    def logits(self, mel_windows: torch.Tensor) -> torch.Tensor:
        """Logits (n, 527) of equally long log-mel windows (n, 128, frames), in batches."""
        return self.head(self.feature_columns(mel_windows).mean(dim=2))

    def close(self) -> None:
        """Stop the worker threads (a later :meth:`tag` starts them again)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

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
            Fewer than :data:`~workbench.tagging.preprocess.MIN_SAMPLES` samples (16 ms), or
            non-finite samples.
        """
        samples = checked_samples(waveform)
        with self._kernel_scope():
            return self.tag_log_mel(self.log_mel(samples), samples.size, timeline=timeline)

    def tag_log_mel(self, mel: torch.Tensor, n_samples: int, *, timeline: bool = True) -> TagResult:
        """Like :meth:`tag`, from the clip's log-mel (:meth:`log_mel`) and its length in samples."""
        with self._kernel_scope(), self._float32():
            starts, width, windows = clip_windows(mel, n_samples)
            columns = self.feature_columns(windows)  # (n_windows, C, n_columns)
            return results_to_host([self.finish(columns, starts, width, n_samples, timeline)])[0]

    def pass_size(self, frames: int) -> int:
        """Windows of ``frames`` frames per forward pass (on CPU also ≤ :data:`CPU_FRAMES_PER_PASS` frames)."""
        if self.device.type == "cpu":
            return max(1, min(self.batch_size, CPU_FRAMES_PER_PASS // max(1, frames)))
        return self.batch_size

    def finish(self, columns: torch.Tensor, starts: Sequence[int], width: int, n_samples: int,
               timeline: bool) -> DeviceResult:
        """A clip's result from the feature columns of its windows, still on the device (no sync).

        The clip probabilities are the maximum over windows; the timeline pools the columns of
        each second (module rules). Both paths — one clip at a time and windows of many clips
        batched — end here, so they pool identically.
        """
        duration_s = n_samples / SAMPLE_RATE
        per_second = None
        with torch.inference_mode(), self._float32():
            clip_probabilities = torch.sigmoid(self.head(columns.mean(dim=2))).amax(dim=0)
            if timeline:
                weights = torch.from_numpy(timeline_pooling(starts, width, columns.shape[2], duration_s)).to(columns.device)
                flat = columns.permute(0, 2, 1).reshape(-1, columns.shape[1])  # (n_windows * n_columns, C)
                per_second = torch.sigmoid(self.head(weights @ flat))
        return DeviceResult(clip_probabilities, duration_s, len(starts), per_second)


@dataclass(frozen=True)
class DeviceResult:
    """A :class:`TagResult` whose arrays are still tensors on the tagger's device."""

    probabilities: torch.Tensor
    duration_s: float
    n_windows: int
    timeline: torch.Tensor | None


def results_to_host(results: Sequence[DeviceResult]) -> list[TagResult]:
    """Copy results off the device: all copies queued first, so a GPU waits once, not once per array."""
    tensors = [t for r in results for t in (r.probabilities, r.timeline) if t is not None]
    on_host = iter([t.to("cpu", non_blocking=True) if t.is_cuda else t for t in tensors])
    if any(t.is_cuda for t in tensors):
        torch.cuda.synchronize(tensors[0].device)  # non-blocking copies to pageable memory: wait before reading
    out = []
    for r in results:
        probabilities = next(on_host).numpy()
        timeline = next(on_host).numpy() if r.timeline is not None else None
        out.append(TagResult(probabilities=probabilities, duration_s=r.duration_s, n_windows=r.n_windows,
                             timeline=timeline))
    return out


def checked_samples(waveform: np.ndarray) -> np.ndarray:
    """The waveform as contiguous float32 (n,); ValueError when it is too short or not finite."""
    samples = np.ascontiguousarray(np.asarray(waveform, dtype=np.float32).reshape(-1))
    if samples.size < MIN_SAMPLES:
        raise ValueError(
            f"the audio is too short to tag ({samples.size} samples; the front end needs at least "
            f"{MIN_SAMPLES}, 16 ms at 32 kHz)"
        )
    if not np.isfinite(samples).all():
        raise ValueError("the audio holds NaN or infinite samples")
    return samples


def clip_windows(mel: torch.Tensor, n_samples: int) -> tuple[list[int], int, torch.Tensor]:
    """(window starts, window width in frames, windows (n, 128, width)) of a clip's log-mel."""
    starts = clip_window_starts(mel.shape[1], n_samples)
    if starts is None:
        return [0], mel.shape[1], mel.unsqueeze(0)
    width = int(CLIP_WINDOW_S * FRAMES_PER_SECOND)
    return starts, width, torch.stack([mel[:, s : s + width] for s in starts])
