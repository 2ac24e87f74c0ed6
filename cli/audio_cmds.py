"""`aglw` commands: analyze, direction, fetch-audio.

Each command is its own function registered in :func:`register`, so further audio commands
(``direction``) are added beside them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from cli.context import app_context, emit_json, run_task, show
from workbench.errors import AglwError

if TYPE_CHECKING:
    from workbench.audio.direction import DirectionAnalysis


def analyze_command(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="Audio file (WAV, FLAC, OGG, MP3; format detected from content)."),
    layout: Optional[str] = typer.Option(
        None, "--layout", help="Override the detected layout: mono|stereo|binaural|ab|xy|ms|ambix|fuma."
    ),
    description: Optional[str] = typer.Option(
        None, "--description", help="Metadata text used to detect the layout (e.g. 'binaural')."
    ),
) -> None:
    """Decode one audio file: duration, rate, channels, detected layout, quality metrics."""
    from cli.context import check_choice
    from workbench.audio.layout import LAYOUTS
    from workbench.audio.service import analyze_file

    if layout is not None:
        check_choice(layout.strip().lower(), LAYOUTS, "--layout")
    result = analyze_file(file, layout=layout, description=description)
    if app_context(ctx).json:
        emit_json(result)
        return
    quality = result["quality"]
    rms = quality["rms_dbfs"]
    show(f"{result['path']}")
    from workbench.formatting import count, db, ratio, score

    show(
        f"  {score(result['duration_s'])} s, {count(result['sample_rate'])} Hz, {result['n_channels']} ch, "
        f"layout {result['layout']}, {result['format']} {result['subtype'] or ''}".rstrip()
    )
    show(
        f"  RMS {'-inf dBFS' if not math.isfinite(rms) else db(rms)}, flatness {ratio(quality['spectral_flatness'])}, "
        f"clipping {ratio(quality['clipping_ratio'])}, ACI {score(quality['aci'])}"
    )
    if result["non_finite_samples"]:
        show(f"  {result['non_finite_samples']} NaN/Inf samples were replaced by 0")
    show(f"  flags: {', '.join(result['flags']) if result['flags'] else 'none'}")


def _parse_clip_keys(values: list[str] | None) -> list[str] | None:
    keys = [part.strip() for value in values or [] for part in value.split(",") if part.strip()]
    if not keys or keys == ["all"]:
        return None
    if "all" in keys:
        from cli.context import usage_error

        raise usage_error("takes either 'all' or clip keys, not both", "--clips")
    return keys


def fetch_audio_command(
    ctx: typer.Context,
    clips: Optional[list[str]] = typer.Option(
        None, "--clips", help="'all' (default) or clip keys; repeat the option or separate keys with commas."
    ),
    to: Path = typer.Option(Path("media"), "--to", help="Download directory (becomes a media root of the dataset)."),
    workers: int = typer.Option(4, "--workers", min=1, max=32, help="Parallel downloads."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds without data before a connection counts as lost."),
    url_template: Optional[str] = typer.Option(
        None, "--url-template",
        help="Source URL with {key} and {mp3name} placeholders, e.g. a mirror (default: the Internet Archive's, "
        "above).",
    ),
) -> None:
    """Download a dataset's recordings from their public source (resumable; rerun to resume).

    The default source: https://archive.org/download/{key}/{mp3name}
    """
    from workbench.audio.fetch import AGL1K_URL, fetch_dataset_audio

    url_template = url_template or AGL1K_URL

    context = app_context(ctx)
    keys = _parse_clip_keys(clips)
    store = context.store()
    summary = run_task(
        "fetching audio",
        lambda task: fetch_dataset_audio(store, keys, to, workers, url_template=url_template, task=task, timeout=timeout),
    ).value
    report = summary.as_dict()
    report["to"] = str(to.expanduser().resolve())
    if context.json:
        emit_json(report)
    else:
        show(f"downloaded {report['downloaded']}, already present {report['present']}, failed {report['failed']}")
        for key, reason in summary.failed.items():
            show(f"  {key}: {reason}")
    if summary.failed:
        raise AglwError(f"{len(summary.failed)} recordings could not be fetched (listed above); rerun to resume")


def direction_command(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="Audio file with 2 (binaural/AB/XY/MS/stereo) or 4 (FOA) channels."),
    layout: Optional[str] = typer.Option(
        None, "--layout", help="Override the detected layout: ambix|fuma|binaural|ab|xy|ms|stereo."
    ),
    band: Optional[tuple[float, float]] = typer.Option(
        None, "--band", help="Analysis band LOW HIGH in Hz (default 200 8000)."
    ),
    spacing: Optional[float] = typer.Option(None, "--spacing", help="Microphone spacing in metres (needed for ab)."),
) -> None:
    """Direction analysis of one file: per-frame directions and the dominant directions."""
    from cli.context import check_choice
    from workbench.audio.direction import analyze_file, oclock, oclock_mirror
    from workbench.audio.layout import LAYOUTS

    if layout is not None:
        check_choice(layout.strip().lower(), LAYOUTS, "--layout")
    analysis = analyze_file(file, layout=layout, band=band, spacing_m=spacing)
    if app_context(ctx).json:
        emit_json(direction_json(analysis))
        return
    frames = analysis.frames
    last = float(frames.t[-1]) if len(frames.t) else 0.0
    show(f"{file}: layout {analysis.layout}, {len(frames.t)} frames of ~100 ms (last centred at {last:.1f} s)")
    if not analysis.peaks:
        show("  no dominant direction (silent or too short)")
    for peak in analysis.peaks:
        share = f"{100 * peak.weight:.0f}% of the direct energy"
        if peak.azimuth_deg is not None:
            show(
                f"  azimuth {peak.azimuth_deg:.1f}° (+90 = left), elevation {peak.elevation_deg:.1f}°, "
                f"{oclock(peak.azimuth_deg)} o'clock, {share}"
            )
        elif peak.lateral_deg is not None:
            hour = oclock(peak.lateral_deg)
            mirror = oclock_mirror(hour)
            front_back = f"{hour} o'clock" + (f" or its mirror {mirror} o'clock" if mirror else "")
            show(f"  lateral {peak.lateral_deg:.1f}° (+ = left), {front_back}, {share}")
        else:
            show(f"  level panorama index {peak.panorama_index:+.2f} (+1 = left; not an angle), {share}")


def direction_json(analysis: DirectionAnalysis) -> dict[str, Any]:
    """The ``aglw direction --json`` contract (cli.md) of an analysis.

    ``layout``; ``frames``, one per ~100 ms: ``{t, azimuth_deg, elevation_deg, diffuseness,
    oclock}`` for FOA, ``{t, lateral_deg, oclock, oclock_mirror, ild_db}`` for two channels
    (for ``stereo``/``xy``/``ms`` the lateral angle is unknown (None) and each frame also
    carries ``panorama_index``, a level position in [−1, 1], + = left); ``peaks``, the dominant
    directions, ``{azimuth_deg, elevation_deg, weight}`` or ``{lateral_deg, weight}`` (plus
    ``panorama_index`` for panorama layouts), weight being the peak's share of the direct
    energy. Unknown values (silent frames) are None.
    """
    from workbench.audio.direction import finite_or_none as known
    from workbench.audio.direction import oclock, oclock_mirror

    frames = analysis.frames
    if analysis.method == "foa":
        rows: list[dict[str, Any]] = [
            {
                "t": float(t),
                "azimuth_deg": known(azimuth),
                "elevation_deg": known(elevation),
                "diffuseness": known(psi),
                "oclock": oclock(azimuth) if math.isfinite(azimuth) else None,
            }
            # Python floats (tolist) make these per-frame loops several times faster than numpy scalars.
            for t, azimuth, elevation, psi in zip(
                frames.t.tolist(), frames.azimuth_deg.tolist(), frames.elevation_deg.tolist(),  # type: ignore[union-attr]
                frames.diffuseness.tolist(),  # type: ignore[union-attr]
            )
        ]
        peaks = [{"azimuth_deg": p.azimuth_deg, "elevation_deg": p.elevation_deg, "weight": p.weight} for p in analysis.peaks]
    elif analysis.method == "panorama":
        rows = [
            {"t": t, "lateral_deg": None, "oclock": None, "oclock_mirror": None, "ild_db": known(ild),
             "panorama_index": known(index)}
            for t, ild, index in zip(frames.t.tolist(), frames.ild_db.tolist(), frames.panorama_index.tolist())  # type: ignore[union-attr]
        ]
        peaks = [{"lateral_deg": None, "panorama_index": p.panorama_index, "weight": p.weight} for p in analysis.peaks]
    else:
        rows = []
        for t, angle, ild in zip(frames.t.tolist(), frames.lateral_deg.tolist(), frames.ild_db.tolist()):  # type: ignore[union-attr]
            hour = oclock(angle) if math.isfinite(angle) else None
            rows.append({
                "t": t,
                "lateral_deg": known(angle),
                "oclock": hour,
                "oclock_mirror": oclock_mirror(hour) if hour is not None else None,
                "ild_db": known(ild),
            })
        peaks = [{"lateral_deg": p.lateral_deg, "weight": p.weight} for p in analysis.peaks]
    return {"layout": analysis.layout, "frames": rows, "peaks": peaks}


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    app.command("analyze")(analyze_command)
    app.command("fetch-audio")(fetch_audio_command)
    app.command("direction")(direction_command)
