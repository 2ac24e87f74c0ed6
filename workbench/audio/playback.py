"""Playback: a pure :class:`Player` (position, looping, solo/mute, mixing) feeding an output sink.

The Player renders blocks on request; a sink decides when to pull them. :class:`NullSink`
pulls when a test advances its simulated clock, :class:`SounddeviceSink` pulls from the
PortAudio callback thread. All mixing and looping lives in the Player, so both sinks run the
same logic.

Mixing to the output (stereo by default):

- mono: the channel on every output;
- two channels: left to left, right to right;
- first-order Ambisonics (``ambix`` / ``fuma`` layouts): two virtual cardioids at ±90°
  (``L = (W + Y) / 2``, ``R = (W − Y) / 2`` in SN3D ambiX);
- other channel counts: the average of all channels on every output.

``mute(c, True)`` silences input channel ``c`` before that mix. ``solo(c)`` plays input channel
``c`` alone on every output (centred, so a soloed Ambisonic or right channel is audible in both
ears); ``solo(None)`` ends solo.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from enum import Enum
from typing import Any, Protocol

import numpy as np

from workbench.errors import AglwError

RenderCallback = Callable[[int], np.ndarray]


class PlaybackError(AglwError):
    """No usable audio output (missing device, PortAudio error), or invalid playback input."""


class PlayerState(str, Enum):
    """What the player is doing."""

    EMPTY = "empty"
    STOPPED = "stopped"
    PLAYING = "playing"
    PAUSED = "paused"


class OutputSink(Protocol):
    """Where the Player's rendered blocks go; the sink pulls blocks with ``render(n_frames)``."""

    def open(self, render: RenderCallback, sample_rate: int, channels: int) -> None:
        """Prepare output at this rate and channel count; ``render`` returns (n, channels) float32."""

    def start(self) -> None:
        """Begin pulling blocks."""

    def stop(self) -> None:
        """Stop pulling blocks (position holds)."""

    def close(self) -> None:
        """Release the output."""


class NullSink:
    """A sink with a simulated clock: nothing plays until :meth:`advance` is called.

    Attributes
    ----------
    rendered
        Every block pulled while running, in order (for inspection by tests).
    """

    def __init__(self) -> None:
        self._render: RenderCallback | None = None
        self.sample_rate = 0
        self.channels = 0
        self.running = False
        self.rendered: list[np.ndarray] = []

    def open(self, render: RenderCallback, sample_rate: int, channels: int) -> None:
        self._render, self.sample_rate, self.channels = render, sample_rate, channels

    def start(self) -> None:
        self.running = True

    def stop(self) -> None:
        self.running = False

    def close(self) -> None:
        self.running = False
        self._render = None

    def advance(self, seconds: float) -> np.ndarray:
        """Let ``seconds`` of simulated time pass; returns the block played meanwhile.

        Returns an empty (0, channels) block when the sink is stopped or not opened.
        """
        if seconds < 0:
            raise ValueError("simulated time cannot run backwards")
        if not self.running or self._render is None:
            return np.zeros((0, self.channels), dtype=np.float32)
        block = self._render(int(round(seconds * self.sample_rate)))
        self.rendered.append(block)
        return block

    def output(self) -> np.ndarray:
        """All blocks rendered so far, concatenated."""
        if not self.rendered:
            return np.zeros((0, self.channels), dtype=np.float32)
        return np.concatenate(self.rendered)


class SounddeviceSink:
    """Plays through PortAudio (sounddevice) with a callback stream.

    Any PortAudio failure (no device, device busy, library missing) raises
    :class:`PlaybackError` with a message saying what to check; it never crashes the program.
    """

    def __init__(self, device: int | str | None = None, blocksize: int = 1024, latency: str = "low") -> None:
        self.device = device
        self.blocksize = blocksize
        self.latency = latency
        self._stream: Any = None
        self.status_messages: list[str] = []

    def open(self, render: RenderCallback, sample_rate: int, channels: int) -> None:
        self.close()
        try:
            import sounddevice
        except (ImportError, OSError) as exc:
            raise PlaybackError(
                f"audio output unavailable: the PortAudio library could not be loaded ({exc}); "
                "install PortAudio (e.g. libportaudio2) to listen"
            ) from exc

        def callback(outdata: np.ndarray, frames: int, _time: Any, status: Any) -> None:
            if status:
                self.status_messages.append(str(status))
            outdata[:] = render(frames)

        try:
            self._stream = sounddevice.OutputStream(
                samplerate=sample_rate,
                channels=channels,
                dtype="float32",
                blocksize=self.blocksize,
                latency=self.latency,
                device=self.device,
                callback=callback,
            )
        except (sounddevice.PortAudioError, ValueError) as exc:
            raise PlaybackError(
                f"no usable audio output device ({exc}); connect or enable an output device, "
                "or choose another one in the settings"
            ) from exc

    def _call(self, method: str) -> None:
        if self._stream is None:
            return
        import sounddevice

        try:
            getattr(self._stream, method)()
        except sounddevice.PortAudioError as exc:
            raise PlaybackError(f"audio output failed on {method} ({exc}); check the output device") from exc

    def start(self) -> None:
        self._call("start")

    def stop(self) -> None:
        self._call("stop")

    def close(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            import sounddevice

            try:
                stream.close()
            except sounddevice.PortAudioError:
                pass


_FINITE_CHECK_FRAMES = 1 << 18


def _finite_samples(samples: np.ndarray) -> np.ndarray:
    """C-contiguous float32 samples without NaN/Inf: the input itself when it already is (no copy)."""
    samples = np.ascontiguousarray(samples, dtype=np.float32)
    for start in range(0, samples.shape[0], _FINITE_CHECK_FRAMES):
        if not np.isfinite(samples[start : start + _FINITE_CHECK_FRAMES]).all():
            return np.nan_to_num(samples, nan=0.0, posinf=0.0, neginf=0.0)
    return samples


def _mix_matrix(n_channels: int, output_channels: int, layout: str | None) -> np.ndarray:
    """(n_channels, output_channels) gains from input channels to outputs."""
    if n_channels == 1:
        return np.ones((1, output_channels), dtype=np.float32)
    if output_channels == 1:
        return np.full((n_channels, 1), 1.0 / n_channels, dtype=np.float32)
    matrix = np.zeros((n_channels, output_channels), dtype=np.float32)
    if n_channels == 4 and layout in ("ambix", "fuma"):
        # Virtual cardioids at ±90°: W ± Y, in SN3D ambiX terms.
        w, y, w_gain = (0, 1, 1.0) if layout == "ambix" else (0, 2, math.sqrt(2.0))
        matrix[w, 0] = matrix[w, 1] = 0.5 * w_gain
        matrix[y, 0], matrix[y, 1] = 0.5, -0.5
        return matrix
    if n_channels == 2:
        matrix[0, 0] = matrix[1, 1] = 1.0
        return matrix
    return np.full((n_channels, output_channels), 1.0 / n_channels, dtype=np.float32)


class Player:
    """Transport and mixing for one clip.

    Parameters
    ----------
    sink
        Where audio goes; :class:`NullSink` when omitted.
    output_channels
        Channels of the output device (1 or 2).

    Notes
    -----
    ``position`` is the position of the next frame handed to the sink, so with a real device
    it runs ahead of what is heard by the output latency (a few milliseconds at ``latency="low"``).
    Every method is thread-safe: the GUI thread controls, the audio thread renders.
    """

    def __init__(self, sink: OutputSink | None = None, output_channels: int = 2) -> None:
        if output_channels not in (1, 2):
            raise PlaybackError("output_channels must be 1 or 2")
        self.sink: OutputSink = sink if sink is not None else NullSink()
        self.output_channels = output_channels
        self._lock = threading.RLock()
        self._samples = np.zeros((0, 1), dtype=np.float32)
        self._sample_rate = 0
        self._frame = 0
        self._loop: tuple[int, int] | None = None
        self._solo: int | None = None
        self._muted: set[int] = set()
        self._matrix = np.ones((1, output_channels), dtype=np.float32)
        self._state = PlayerState.EMPTY
        self._output_problem: str | None = None
        # Replaces the mix when set (e.g. FOA decoded to binaural with a yaw): block -> (frames, outputs).
        self._processor: Callable[[np.ndarray], np.ndarray] | None = None

    # ------------------------------------------------------------------ loading
    def load(self, samples: np.ndarray, sample_rate: int, layout: str | None = None) -> None:
        """Load a clip (float samples shaped (frames, channels) or 1-D); stops playback.

        Finite, C-contiguous float32 samples are used as they are, not copied (a decoded
        3-minute 4-channel clip is ~140 MB); anything else is converted, NaN/Inf set to 0.

        When the sink cannot open the output, the clip stays loaded (position, seek and loop
        work) but :meth:`play` refuses until a later ``load`` opens it: see :attr:`output_problem`.

        Raises
        ------
        PlaybackError
            Bad shape or rate, or the sink cannot open the output.
        """
        samples = np.asarray(samples, dtype=np.float32)
        if samples.ndim == 1:
            samples = samples[:, None]
        if samples.ndim != 2 or samples.shape[1] < 1:
            raise PlaybackError(f"samples must be shaped (frames, channels), got {samples.shape}")
        if sample_rate <= 0:
            raise PlaybackError(f"sample rate must be positive, got {sample_rate}")
        self.sink.stop()
        with self._lock:
            self._samples = _finite_samples(samples)
            self._sample_rate = int(sample_rate)
            self._frame = 0
            self._loop = None
            self._solo = None
            self._muted = set()
            self._matrix = _mix_matrix(samples.shape[1], self.output_channels, layout)
            self._state = PlayerState.STOPPED
        try:
            self.sink.open(self.render, self._sample_rate, self.output_channels)
        except PlaybackError as exc:
            self._output_problem = str(exc)
            raise
        self._output_problem = None

    # ------------------------------------------------------------------ properties
    @property
    def state(self) -> PlayerState:
        """EMPTY, STOPPED (at the start or the end), PLAYING or PAUSED."""
        return self._state

    @property
    def output_problem(self) -> str | None:
        """Why the last :meth:`load` could not open the output (e.g. no audio device), else None."""
        return self._output_problem

    @property
    def sample_rate(self) -> int:
        return self._sample_rate

    @property
    def n_channels(self) -> int:
        return self._samples.shape[1]

    @property
    def duration(self) -> float:
        """Clip duration in seconds (0 when empty)."""
        return self._samples.shape[0] / self._sample_rate if self._sample_rate else 0.0

    @property
    def position(self) -> float:
        """Current position in seconds (pollable from any thread)."""
        return self._frame / self._sample_rate if self._sample_rate else 0.0

    @property
    def loop(self) -> tuple[float, float] | None:
        """The loop span in seconds, or None."""
        loop = self._loop
        return None if loop is None else (loop[0] / self._sample_rate, loop[1] / self._sample_rate)

    @property
    def soloed(self) -> int | None:
        return self._solo

    @property
    def muted(self) -> frozenset[int]:
        return frozenset(self._muted)

    # ------------------------------------------------------------------ transport
    def _require_clip(self) -> None:
        if self._state is PlayerState.EMPTY:
            raise PlaybackError("no clip loaded: load audio before playing")

    def play(self) -> None:
        """Start or resume; from the start (or loop start) when at the end.

        Raises
        ------
        PlaybackError
            No clip is loaded, or the output could not be opened (the state stays as it was:
            nothing would be heard, so nothing claims to play).
        """
        with self._lock:
            self._require_clip()
            if self._output_problem is not None:
                raise PlaybackError(f"no audio output device — playback unavailable ({self._output_problem})")
            if self._frame >= self._samples.shape[0]:
                self._frame = self._loop[0] if self._loop else 0
            self._state = PlayerState.PLAYING
        self.sink.start()

    def pause(self) -> None:
        """Hold the position."""
        with self._lock:
            if self._state is PlayerState.PLAYING:
                self._state = PlayerState.PAUSED
        self.sink.stop()

    def stop(self) -> None:
        """Stop and go back to the start."""
        with self._lock:
            if self._state is not PlayerState.EMPTY:
                self._state = PlayerState.STOPPED
                self._frame = 0
        self.sink.stop()

    def seek(self, t: float) -> None:
        """Jump to ``t`` seconds (clamped to the clip)."""
        with self._lock:
            self._require_clip()
            if not math.isfinite(t):
                raise PlaybackError(f"cannot seek to {t!r}")
            self._frame = int(round(min(max(t, 0.0), self.duration) * self._sample_rate))

    def set_loop(self, t0: float, t1: float) -> None:
        """Loop over [t0, t1) seconds; a position outside the loop moves to its start.

        Raises
        ------
        PlaybackError
            If the span is empty after clamping to the clip.
        """
        with self._lock:
            self._require_clip()
            start = int(round(min(max(t0, 0.0), self.duration) * self._sample_rate))
            end = int(round(min(max(t1, 0.0), self.duration) * self._sample_rate))
            if end <= start:
                raise PlaybackError(f"loop [{t0}, {t1}] s is empty within the clip (0–{self.duration:.3f} s)")
            self._loop = (start, end)
            if not start <= self._frame < end:
                self._frame = start

    def clear_loop(self) -> None:
        """Play on to the end again."""
        with self._lock:
            self._loop = None

    def solo(self, channel: int | None) -> None:
        """Play only ``channel`` (on every output), or end solo with None."""
        with self._lock:
            if channel is not None:
                self._check_channel(channel)
            self._solo = channel

    def mute(self, channel: int, muted: bool = True) -> None:
        """Silence or restore one input channel."""
        with self._lock:
            self._check_channel(channel)
            if muted:
                self._muted.add(channel)
            else:
                self._muted.discard(channel)

    def _check_channel(self, channel: int) -> None:
        if not 0 <= channel < self._samples.shape[1]:
            raise PlaybackError(f"channel {channel} does not exist (the clip has {self._samples.shape[1]})")

    def set_processor(self, processor: Callable[[np.ndarray], np.ndarray] | None) -> None:
        """Render blocks through ``processor`` instead of the channel mix (None: back to the mix).

        Called on the audio thread with each block of the clip (frames, channels); it must
        return float samples shaped (frames, output channels). Solo and mute still bypass it.
        """
        with self._lock:
            self._processor = processor

    # ------------------------------------------------------------------ rendering
    def _mix(self, block: np.ndarray) -> np.ndarray:
        if self._processor is not None and self._solo is None and not self._muted:
            return np.asarray(self._processor(block), dtype=np.float32)
        if self._solo is not None:
            return np.repeat(block[:, self._solo : self._solo + 1], self.output_channels, axis=1)
        if self._muted:
            gains = np.ones(block.shape[1], dtype=np.float32)
            gains[list(self._muted)] = 0.0
            return (block * gains) @ self._matrix
        return block @ self._matrix

    def render(self, n_frames: int) -> np.ndarray:
        """The next ``n_frames`` of output, shaped (n_frames, output_channels), float32.

        Silence when not playing; wraps at the loop end; stops (state STOPPED, position at the
        end) when the clip ends, padding with silence.
        """
        out = np.zeros((n_frames, self.output_channels), dtype=np.float32)
        with self._lock:
            filled = 0
            while filled < n_frames and self._state is PlayerState.PLAYING:
                end = self._loop[1] if self._loop and self._frame < self._loop[1] else self._samples.shape[0]
                take = min(n_frames - filled, end - self._frame)
                if take > 0:
                    out[filled : filled + take] = self._mix(self._samples[self._frame : self._frame + take])
                    filled += take
                    self._frame += take
                if self._frame >= end:
                    if self._loop and end == self._loop[1]:
                        self._frame = self._loop[0]
                    else:
                        self._state = PlayerState.STOPPED
        return out

    def close(self) -> None:
        """Release the output."""
        self.sink.stop()
        self.sink.close()
