"""Direction analysis for first-order Ambisonics (FOA) and two-channel recordings (``spatial.md``).

Split by job: :mod:`.conventions` (angles, o'clock, ambiX/FuMa/N3D), :mod:`.foa` (intensity,
heatmap, SRP, MUSIC), :mod:`.pair` (GCC-PHAT, Woodworth, ILD, panorama), :mod:`.peaks`,
:mod:`.analysis` (a whole recording, streamed: :class:`DirectionAnalyzer` → :class:`DirectionAnalysis`)
and :mod:`.view` (the review window's image). Everything is pure numpy/scipy on plain arrays
and dataclasses; nothing here touches the database or builds the CLI's JSON.

Every public name is importable from this package.
"""

from workbench.audio.direction.analysis import (
    DirectionAnalysis,
    DirectionAnalyzer,
    DirectionPeak,
    PairFrames,
    analyze_file,
    analyze_samples,
    finite_or_none,
    foa_heatmap_file,
    resolve_layout,
)
from workbench.audio.direction.conventions import (
    DEFAULT_BAND_HZ,
    FOA_LAYOUTS,
    HEAD_RADIUS_M,
    MONO_EXPLANATION,
    PANORAMA_LAYOUTS,
    SPEED_OF_SOUND_M_S,
    TWO_CHANNEL_LAYOUTS,
    NoDirectionInformation,
    ambix_steering,
    ambix_to_fuma,
    fuma_to_ambix,
    n3d_from_sn3d,
    oclock,
    oclock_mirror,
)
from workbench.audio.direction.foa import (
    FoaFrames,
    Heatmap,
    SphereMap,
    foa_frames,
    foa_heatmap,
    foa_music,
    foa_sphere_srp,
)
from workbench.audio.direction.pair import (
    gcc_phat_frames,
    ild_db,
    lateral_from_itd_woodworth,
    lateral_from_tau_ab,
    level_panorama,
    woodworth_itd,
)
from workbench.audio.direction.peaks import azimuth_peaks
from workbench.audio.direction.view import DirectionImage, direction_image, no_direction_image, unavailable_note

__all__ = [
    "DEFAULT_BAND_HZ",
    "FOA_LAYOUTS",
    "HEAD_RADIUS_M",
    "MONO_EXPLANATION",
    "PANORAMA_LAYOUTS",
    "SPEED_OF_SOUND_M_S",
    "TWO_CHANNEL_LAYOUTS",
    "DirectionAnalysis",
    "DirectionAnalyzer",
    "DirectionImage",
    "DirectionPeak",
    "FoaFrames",
    "Heatmap",
    "NoDirectionInformation",
    "PairFrames",
    "SphereMap",
    "ambix_steering",
    "ambix_to_fuma",
    "analyze_file",
    "analyze_samples",
    "azimuth_peaks",
    "direction_image",
    "finite_or_none",
    "foa_frames",
    "foa_heatmap",
    "foa_heatmap_file",
    "foa_music",
    "foa_sphere_srp",
    "fuma_to_ambix",
    "gcc_phat_frames",
    "ild_db",
    "lateral_from_itd_woodworth",
    "lateral_from_tau_ab",
    "level_panorama",
    "n3d_from_sn3d",
    "no_direction_image",
    "oclock",
    "oclock_mirror",
    "resolve_layout",
    "unavailable_note",
    "woodworth_itd",
]
