"""Direction analysis of a whole recording: per-frame directions and dominant directions.

The result is plain data (:class:`DirectionAnalysis`, arrays per frame and a tuple of
:class:`DirectionPeak`); the CLI turns it into its JSON contract and the review window into an
image (:mod:`workbench.audio.direction.view`). :class:`DirectionAnalyzer` takes the audio block
by block, so a clip being opened feeds it the same blocks the decoder hands to the spectrogram
and the playback buffer, as they arrive.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.audio.direction.conventions import (
    DEFAULT_BAND_HZ,
    ArrayRecord,
    FOA_LAYOUTS,
    MONO_EXPLANATION,
    PANORAMA_LAYOUTS,
    SPEED_OF_SOUND_M_S,
    NoDirectionInformation,
    blocks_of,
    fuma_to_ambix,
)
from workbench.audio.direction.foa import FoaFrames, FoaStream, Heatmap
from workbench.audio.direction.pair import PairStream, lateral_from_itd_woodworth, lateral_from_tau_ab
from workbench.audio.direction.peaks import sphere_peaks, value_peaks
from workbench.errors import InputError

# Sphere histogram bin of the FOA peaks (degrees).
_SPHERE_BIN_DEG = 5.0
# Two-channel analysis frame (seconds): one direction per ~100 ms.
_PAIR_FRAME_S = 0.1


@dataclass(frozen=True, eq=False)
class PairFrames(ArrayRecord):
    """Per ~100 ms frame of a two-channel recording (NaN where unknown).

    Attributes
    ----------
    t
        Frame centres in seconds.
    lateral_deg
        Lateral angle (+ = left) from the time difference; NaN for silent frames and for the
        level-panorama layouts (stereo, XY, MS), whose geometry gives no angle.
    ild_db
        Interaural level difference above 1.5 kHz (+ = louder left).
    panorama_index
        Level position (E_L − E_R)/(E_L + E_R) in [−1, 1], + = left.
    energy
        E_L + E_R per frame (0 for silent frames), the weight of the peaks.
    """

    t: np.ndarray
    lateral_deg: np.ndarray
    ild_db: np.ndarray
    panorama_index: np.ndarray
    energy: np.ndarray


@dataclass(frozen=True)
class DirectionPeak:
    """One dominant direction over the whole recording.

    ``weight`` is the peak's share of the direct energy. FOA peaks have ``azimuth_deg`` and
    ``elevation_deg``; binaural/AB peaks ``lateral_deg``; level-panorama peaks
    ``panorama_index``. The other fields are None.
    """

    weight: float
    azimuth_deg: float | None = None
    elevation_deg: float | None = None
    lateral_deg: float | None = None
    panorama_index: float | None = None


@dataclass(frozen=True, eq=False)
class DirectionAnalysis(ArrayRecord):
    """What the direction analysis found in one recording.

    Attributes
    ----------
    layout
        The layout analysed (``ambix``, ``fuma``, ``binaural``, ``ab``, ``xy``, ``ms``, ``stereo``).
    frames
        :class:`~workbench.audio.direction.foa.FoaFrames` for FOA layouts, :class:`PairFrames`
        for two channels.
    peaks
        Dominant directions, strongest first.
    heatmap
        FOA azimuth × time heatmap (same frames), when it was asked for; else None.
    spacing_m
        The microphone spacing an AB pair was analysed with; else None.
    """

    layout: str
    frames: FoaFrames | PairFrames
    peaks: tuple[DirectionPeak, ...]
    heatmap: Heatmap | None = None
    spacing_m: float | None = None

    @property
    def method(self) -> str:
        """``foa``, ``lateral`` (binaural / AB time difference) or ``panorama`` (level index)."""
        if self.layout in FOA_LAYOUTS:
            return "foa"
        return "panorama" if self.layout in PANORAMA_LAYOUTS else "lateral"


def resolve_layout(name: str | Path, n_channels: int, layout: str | None) -> str:
    """The layout to analyse: ``layout`` when given, else detected from the channel count.

    Raises
    ------
    NoDirectionInformation
        Mono (by channel count or override).
    InputError
        Unknown layout, or one that needs more channels than there are.
    """
    from workbench.audio.layout import channels_for_layout, detect_layout

    chosen = detect_layout(n_channels, override=layout)
    if chosen == "mono":
        raise NoDirectionInformation(f"{name}: {MONO_EXPLANATION}")
    needed = channels_for_layout(chosen)
    if n_channels < needed:
        raise InputError(
            f"{name}: layout {chosen!r} needs {needed} channels but the file has {n_channels}; "
            "choose a layout that matches the file"
        )
    return chosen


class DirectionAnalyzer:
    """Streaming direction analysis: :meth:`push` blocks of any length, then :meth:`finish`.

    The result does not depend on how the audio was cut into blocks (leftover samples are
    carried to the next block), so feeding the blocks of a decode gives the same analysis as
    :func:`analyze_file`. Everything that can be refused (mono, a layout the audio cannot
    have, a bad band, AB without spacing) is refused by the constructor, before any audio.

    Parameters
    ----------
    sample_rate
        Sample rate in Hz.
    n_channels
        Channels of the blocks that will be pushed.
    layout
        ``ambix``, ``fuma``, ``binaural``, ``ab``, ``xy``, ``ms`` or ``stereo``; detected from
        the channel count when None (4 → ambix, 2 → stereo).
    band
        Analysis band in Hz (default 200–8000 Hz, clipped to the Nyquist frequency).
    spacing_m
        Microphone spacing in metres, required for ``ab``.
    name
        How error messages name the audio (e.g. its path).
    heatmap_bins
        For FOA layouts, also build the azimuth × time heatmap with this many azimuth bins.

    Raises
    ------
    NoDirectionInformation
        For mono audio (or a mono layout override).
    InputError
        A layout that needs more channels than there are, a bad band, or ``ab`` without a spacing.
    """

    def __init__(
        self,
        sample_rate: int,
        n_channels: int,
        *,
        layout: str | None = None,
        band: tuple[float, float] | None = None,
        spacing_m: float | None = None,
        name: str | Path = "audio",
        heatmap_bins: int | None = None,
    ) -> None:
        if sample_rate <= 0:
            raise ValueError(f"sample rate must be positive, got {sample_rate}")
        self.layout = resolve_layout(name, n_channels, layout)
        if band is None:
            band = (DEFAULT_BAND_HZ[0], min(DEFAULT_BAND_HZ[1], sample_rate / 2.0))
        if self.layout == "ab" and not (spacing_m is not None and spacing_m > 0):
            raise InputError(f"{name}: an AB (spaced pair) layout needs the microphone spacing: pass --spacing METRES")
        self.spacing_m = spacing_m
        self._foa: FoaStream | None = None
        self._pair: PairStream | None = None
        if self.layout in FOA_LAYOUTS:
            self._foa = FoaStream(sample_rate, band=band, sphere_bin_deg=_SPHERE_BIN_DEG, n_azimuth_bins=heatmap_bins)
        else:
            max_tau_s = 0.0009 if self.layout != "ab" else max(0.0009, 1.05 * float(spacing_m) / SPEED_OF_SOUND_M_S)
            self._pair = PairStream(
                sample_rate, frame_s=_PAIR_FRAME_S, band=band, max_tau_s=max_tau_s,
                need_tau=self.layout not in PANORAMA_LAYOUTS,
            )

    def push(self, block: np.ndarray) -> None:
        """Analyse the next samples, shaped (frames, channels); extra channels are ignored."""
        if self._foa is not None:
            block = block[:, :4]
            self._foa.push(fuma_to_ambix(block) if self.layout == "fuma" else block)
            return
        assert self._pair is not None
        block = block[:, :2]
        if self.layout == "ms":
            mid, side = block[:, 0], block[:, 1]
            block = np.stack([mid + side, mid - side], axis=1)
        self._pair.push(block)

    def finish(self) -> DirectionAnalysis:
        """The analysis of everything pushed (an incomplete last FOA frame included)."""
        if self._foa is not None:
            return self._finish_foa(self._foa)
        assert self._pair is not None
        return self._finish_pair(self._pair)

    def _finish_foa(self, stream: FoaStream) -> DirectionAnalysis:
        stream.finish()
        shape = (stream.n_sphere_el, stream.n_sphere_az)
        found = sphere_peaks(stream.sphere_hist.reshape(shape), stream.sphere_vectors.reshape((3, *shape)), _SPHERE_BIN_DEG)
        peaks = tuple(DirectionPeak(p["weight"], azimuth_deg=p["azimuth_deg"], elevation_deg=p["elevation_deg"]) for p in found)
        heatmap = stream.heatmap() if stream.n_azimuth_bins is not None else None
        return DirectionAnalysis(self.layout, stream.frames(), peaks, heatmap)

    def _finish_pair(self, stream: PairStream) -> DirectionAnalysis:
        result = stream.results()
        tau, energy, panorama = result["tau_s"], result["energy"], result["panorama"]
        if self.layout in PANORAMA_LAYOUTS:
            lateral = np.full(tau.shape, np.nan)
            valid = np.isfinite(panorama)
            peaks = tuple(
                DirectionPeak(weight, panorama_index=index)
                for index, weight in value_peaks(panorama[valid], energy[valid], np.linspace(-1.0, 1.0, 41))
            )
        else:
            if self.layout == "binaural":
                lateral = np.degrees(lateral_from_itd_woodworth(-tau))
            else:
                lateral = np.degrees(lateral_from_tau_ab(tau, float(self.spacing_m)))  # type: ignore[arg-type]
            lateral = np.atleast_1d(np.asarray(lateral, dtype=np.float64))
            valid = np.isfinite(lateral)
            peaks = tuple(
                DirectionPeak(weight, lateral_deg=angle)
                for angle, weight in value_peaks(lateral[valid], energy[valid], np.linspace(-90.0, 90.0, 91))
            )
        frames = PairFrames(result["t"], lateral, result["ild_db"], panorama, energy)
        spacing = float(self.spacing_m) if self.layout == "ab" and self.spacing_m is not None else None
        return DirectionAnalysis(self.layout, frames, peaks, spacing_m=spacing)


def _read_blocks(path: Path, block_s: float) -> tuple[int, int, Iterator[np.ndarray]]:
    from workbench.audio.loader import audio_info
    from workbench.audio.streaming import iter_blocks

    info = audio_info(path)
    block_frames = max(1, int(block_s * info.sample_rate))
    return info.sample_rate, info.n_channels, (block for _, block in iter_blocks(path, block_frames))


def _analyze(analyzer: DirectionAnalyzer, blocks: Iterable[np.ndarray]) -> DirectionAnalysis:
    for block in blocks:
        analyzer.push(block)
    return analyzer.finish()


def analyze_file(
    path: str | Path,
    *,
    layout: str | None = None,
    band: tuple[float, float] | None = None,
    spacing_m: float | None = None,
    block_s: float = 20.0,
    heatmap_bins: int | None = None,
) -> DirectionAnalysis:
    """Direction analysis of one audio file, streamed in ``block_s`` blocks.

    Parameters
    ----------
    path
        Audio file; only reduced values are kept.
    layout, band, spacing_m, heatmap_bins
        As in :class:`DirectionAnalyzer`.
    block_s
        Block length in seconds (bounds memory; does not change the result).

    Returns
    -------
    DirectionAnalysis

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
    analyzer = DirectionAnalyzer(
        sample_rate, n_channels, layout=layout, band=band, spacing_m=spacing_m, name=path, heatmap_bins=heatmap_bins
    )
    return _analyze(analyzer, blocks)


def analyze_samples(
    samples: np.ndarray,
    sample_rate: int,
    *,
    layout: str | None = None,
    band: tuple[float, float] | None = None,
    spacing_m: float | None = None,
    block_s: float = 20.0,
    name: str = "audio",
    heatmap_bins: int | None = None,
) -> DirectionAnalysis:
    """:func:`analyze_file` of audio already decoded; the same result for the same samples.

    Parameters
    ----------
    samples
        Samples shaped (frames, channels), e.g. :attr:`workbench.audio.loader.AudioData.samples`.
    sample_rate
        Sample rate in Hz.
    layout, band, spacing_m, block_s, heatmap_bins
        As in :func:`analyze_file`.
    name
        How error messages name the audio (e.g. its path).

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
    analyzer = DirectionAnalyzer(
        sample_rate, samples.shape[1], layout=layout, band=band, spacing_m=spacing_m, name=name, heatmap_bins=heatmap_bins
    )
    return _analyze(analyzer, blocks_of(samples, max(1, int(block_s * sample_rate))))


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
    chosen = resolve_layout(path, n_channels, layout)
    if chosen not in FOA_LAYOUTS:
        raise InputError(f"{path}: the FOA heatmap needs an ambix or fuma layout, not {chosen!r}")
    stream = FoaStream(sample_rate, band=band, n_azimuth_bins=n_azimuth_bins, dynamic_range_db=dynamic_range_db)
    for block in blocks:
        block = block[:, :4]
        stream.push(fuma_to_ambix(block) if chosen == "fuma" else block)
    stream.finish()
    return stream.heatmap()


def finite_or_none(value: float) -> float | None:
    """``value`` as a float, or None when it is NaN or infinite (an unknown value)."""
    value = float(value)
    return value if math.isfinite(value) else None
