"""FOA on headphones: binaural decoding with virtual loudspeakers, max-rE weights and HRIRs.

The scene is first rotated by the listener's yaw (so the expert can turn toward a sound),
then decoded to virtual loudspeakers spread evenly over the sphere with max-rE weights, and
each loudspeaker is convolved with the head-related impulse responses of its direction.
Decoding and convolution are linear, so the loudspeakers fold into eight filters (two ears ×
four ambiX channels) computed once: the cost per block is four FFTs forward and two back,
whatever the number of loudspeakers.

Head-related responses come from a SOFA file the user chooses (``SimpleFreeFieldHRIR``,
read with ``sofar``, the ``[spatial]`` extra) or, offline by default, from a spherical-head
model (Brown & Duda 1998), named as such wherever it is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.errors import InputError

SPHERICAL_HEAD_NAME = "spherical-head model (Brown & Duda 1998)"
_HEAD_RADIUS_M = 0.0875
_SPEED_OF_SOUND = 343.0
# Max-rE weight of the first order in 3-D: P1(cos(137.9° / (N + 1.51))) with N = 1.
MAX_RE_G1 = math.cos(math.radians(137.9 / 2.51))


@dataclass(frozen=True)
class HrirSet:
    """Head-related impulse responses: one (left, right) pair per measured direction."""

    name: str
    sample_rate: int
    directions_deg: np.ndarray  # (M, 2): azimuth (+ = left), elevation
    left: np.ndarray  # (M, taps)
    right: np.ndarray  # (M, taps)

    def nearest(self, azimuth_deg: float, elevation_deg: float) -> int:
        """Index of the measured direction closest to the given one."""
        u = _unit(np.array([azimuth_deg]), np.array([elevation_deg]))[0]
        grid = _unit(self.directions_deg[:, 0], self.directions_deg[:, 1])
        return int(np.argmax(grid @ u))


def _unit(azimuth_deg: np.ndarray, elevation_deg: np.ndarray) -> np.ndarray:
    az, el = np.radians(azimuth_deg), np.radians(elevation_deg)
    return np.stack([np.cos(az) * np.cos(el), np.sin(az) * np.cos(el), np.sin(el)], axis=-1)


def fibonacci_directions(n: int) -> np.ndarray:
    """``n`` nearly uniform directions on the sphere as (azimuth, elevation) in degrees."""
    i = np.arange(n) + 0.5
    z = 1.0 - 2.0 * i / n
    azimuth = np.degrees((math.pi * (1.0 + math.sqrt(5.0)) * i) % (2 * math.pi))
    azimuth = (azimuth + 180.0) % 360.0 - 180.0
    return np.stack([azimuth, np.degrees(np.arcsin(z))], axis=-1)


def spherical_head_hrirs(sample_rate: int, directions_deg: np.ndarray | None = None, *, taps: int = 256) -> HrirSet:
    """HRIRs of a rigid spherical head (Brown & Duda 1998): head shadow filter and Woodworth-type delay.

    For each ear the angle θ between the source and the ear's axis sets a one-pole/one-zero
    shadow filter H(ω, θ) = (1 + jα(θ)ω/2ω₀)/(1 + jω/2ω₀), ω₀ = c/a,
    α(θ) = 1.05 + 0.95·cos(θ·180°/150°), and a delay −(a/c)cos θ (θ < 90°) or (a/c)(θ − π/2).
    """
    if directions_deg is None:
        directions_deg = fibonacci_directions(512)
    directions_deg = np.asarray(directions_deg, dtype=float)
    a, c = _HEAD_RADIUS_M, _SPEED_OF_SOUND
    w0 = c / a
    omega = 2 * math.pi * np.fft.rfftfreq(taps, 1.0 / sample_rate)
    sources = _unit(directions_deg[:, 0], directions_deg[:, 1])
    base_delay = 16 / sample_rate + a / c  # keeps every response causal
    out = []
    for ear_azimuth in (90.0, -90.0):
        ear = _unit(np.array([ear_azimuth]), np.array([0.0]))[0]
        theta = np.arccos(np.clip(sources @ ear, -1.0, 1.0))
        alpha = (1 + 0.1 / 2) + (1 - 0.1 / 2) * np.cos(theta * 180.0 / 150.0)
        delay = np.where(theta < math.pi / 2, -(a / c) * np.cos(theta), (a / c) * (theta - math.pi / 2)) + base_delay
        shadow = (1 + 1j * alpha[:, None] * omega[None, :] / (2 * w0)) / (1 + 1j * omega[None, :] / (2 * w0))
        spectrum = shadow * np.exp(-1j * omega[None, :] * delay[:, None])
        impulse = np.fft.irfft(spectrum, n=taps, axis=-1)
        fade = np.ones(taps)
        fade[-taps // 4:] = np.cos(np.linspace(0, math.pi / 2, taps // 4)) ** 2
        out.append(impulse * fade)
    return HrirSet(SPHERICAL_HEAD_NAME, int(sample_rate), directions_deg, out[0], out[1])


def load_sofa_hrirs(path: str | Path, sample_rate: int) -> HrirSet:
    """HRIRs from a SOFA file (``SimpleFreeFieldHRIR``) at the clip's sample rate.

    Raises
    ------
    InputError
        ``sofar`` is missing (names the ``[spatial]`` extra), the file cannot be read, its
        convention is not SimpleFreeFieldHRIR, it has not two receivers, or its sample rate
        differs from ``sample_rate`` (one line naming the file and field).
    """
    from workbench.extras import has, missing_extra_message

    if not has("sofar"):
        raise InputError(missing_extra_message("sofar"))
    import sofar

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such SOFA file")
    try:
        sofa = sofar.read_sofa(str(p), verify=False, verbose=False)
    except Exception as exc:  # sofar raises many kinds on a broken file
        raise InputError(f"{p}: not a readable SOFA file ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
    convention = str(getattr(sofa, "GLOBAL_SOFAConventions", ""))
    if convention != "SimpleFreeFieldHRIR":
        raise InputError(
            f"{p}: GLOBAL_SOFAConventions is {convention!r}; head-related responses must be SimpleFreeFieldHRIR"
        )
    rate = float(np.atleast_1d(np.asarray(sofa.Data_SamplingRate, dtype=float))[0])
    if int(round(rate)) != int(sample_rate):
        raise InputError(
            f"{p}: Data_SamplingRate is {rate:g} Hz but the clip is {sample_rate} Hz; choose a SOFA file at "
            f"{sample_rate} Hz (or resample it)"
        )
    ir = np.asarray(sofa.Data_IR, dtype=float)
    if ir.ndim != 3 or ir.shape[1] != 2:
        raise InputError(f"{p}: Data_IR has shape {ir.shape}; need (measurements, 2 receivers, samples)")
    positions = np.atleast_2d(np.asarray(sofa.SourcePosition, dtype=float))
    if positions.shape[0] == 1 and ir.shape[0] > 1:
        positions = np.repeat(positions, ir.shape[0], axis=0)
    kind = str(getattr(sofa, "SourcePosition_Type", "spherical")).lower()
    if kind == "cartesian":
        x, y, z = positions[:, 0], positions[:, 1], positions[:, 2]
        directions = np.stack([np.degrees(np.arctan2(y, x)), np.degrees(np.arctan2(z, np.hypot(x, y)))], axis=-1)
    else:
        directions = positions[:, :2].copy()
        directions[:, 0] = (directions[:, 0] + 180.0) % 360.0 - 180.0
    # SOFA receiver 0 is the left ear (ReceiverPosition +y), as the project's +azimuth is left.
    return HrirSet(f"SOFA file {p.name}", int(sample_rate), directions, ir[:, 0, :], ir[:, 1, :])


def decoder_matrix(speakers_deg: np.ndarray) -> np.ndarray:
    """Max-rE sampling decoder from ambiX SN3D [W, Y, Z, X] to ``speakers_deg``, shaped (S, 4)."""
    u = _unit(speakers_deg[:, 0], speakers_deg[:, 1])
    s = u.shape[0]
    return np.stack([np.ones(s), 3 * MAX_RE_G1 * u[:, 1], 3 * MAX_RE_G1 * u[:, 2], 3 * MAX_RE_G1 * u[:, 0]], axis=-1) / s


def rotate_yaw(foa_ambix: np.ndarray, yaw_deg: float) -> np.ndarray:
    """The scene as heard after turning the head ``yaw_deg`` to the left (a source at φ moves to φ − yaw)."""
    if yaw_deg == 0:
        return foa_ambix
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    out = foa_ambix.copy()
    y, x = foa_ambix[:, 1], foa_ambix[:, 3]
    out[:, 3] = x * c + y * s
    out[:, 1] = -x * s + y * c
    return out


class BinauralDecoder:
    """FOA → binaural with a yaw control; streams blocks (overlap-add keeps the tails).

    Parameters
    ----------
    hrirs
        Head-related responses at the clip's sample rate.
    n_speakers
        Virtual loudspeakers per hemisphere side (nearly uniform on the sphere and mirrored left/right;
        each uses the nearest measured HRIR).
    block
        Samples per processed block.
    """

    def __init__(self, hrirs: HrirSet, *, n_speakers: int = 26, block: int = 4096) -> None:
        self.hrirs = hrirs
        self.sample_rate = hrirs.sample_rate
        # A left/right symmetric layout, so a frontal source stays centred.
        half = fibonacci_directions(n_speakers)
        speakers = np.concatenate([half, half * np.array([-1.0, 1.0])])
        decode = decoder_matrix(speakers)  # (S, 4)
        nearest = [hrirs.nearest(az, el) for az, el in speakers]
        left = hrirs.left[nearest]  # (S, taps)
        right = hrirs.right[nearest]
        # Fold the loudspeakers: filter[ear, channel] = Σ_s decode[s, channel] · hrir[ear, s]
        self.filters = np.stack([decode.T @ left, decode.T @ right])  # (2, 4, taps)
        self.taps = self.filters.shape[-1]
        self.block = block
        self.n_fft = 1 << int(math.ceil(math.log2(block + self.taps - 1)))
        self._spectra = np.fft.rfft(self.filters, n=self.n_fft, axis=-1)  # (2, 4, bins)
        self._tail = np.zeros((self.taps - 1, 2))

    @property
    def source_name(self) -> str:
        """What the listener hears through (shown in the UI)."""
        return self.hrirs.name

    def reset(self) -> None:
        """Forget the tail of the previous block (after a seek)."""
        self._tail[:] = 0.0

    def process(self, foa_ambix: np.ndarray, yaw_deg: float = 0.0) -> np.ndarray:
        """Decode one block (any length ≤ ``block``) to binaural (frames, 2), continuing the previous block."""
        n = foa_ambix.shape[0]
        if n > self.block:
            return np.concatenate([self.process(foa_ambix[i:i + self.block], yaw_deg) for i in range(0, n, self.block)])
        rotated = rotate_yaw(np.asarray(foa_ambix, dtype=float), yaw_deg)
        spectrum = np.fft.rfft(rotated.T, n=self.n_fft, axis=-1)  # (4, bins)
        ears = np.einsum("ecb,cb->eb", self._spectra, spectrum)
        full = np.fft.irfft(ears, n=self.n_fft, axis=-1)[:, : n + self.taps - 1].T  # (n + taps - 1, 2)
        full[: self.taps - 1] += self._tail  # the previous block's ringing
        out = full[:n].copy()
        self._tail = full[n:].copy()  # always taps − 1 rows
        return out

    def render(self, foa_ambix: np.ndarray, yaw_deg: float = 0.0) -> np.ndarray:
        """Decode a whole signal from the start (resets the stream)."""
        self.reset()
        return self.process(foa_ambix, yaw_deg)


def make_decoder(sample_rate: int, sofa_path: str | Path | None = None) -> BinauralDecoder:
    """A decoder through the user's SOFA file, else through the spherical-head model."""
    hrirs = load_sofa_hrirs(sofa_path, sample_rate) if sofa_path else spherical_head_hrirs(sample_rate)
    return BinauralDecoder(hrirs)
