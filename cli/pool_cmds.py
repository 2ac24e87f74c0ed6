"""`aglw` pool-scale steps: analyze-pool (decode + the four quality filters, local or on Ray)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from cli.context import app_context, emit_json, run_task, say, show

# A summary lists this many failed files; --json lists all.
_SHOWN_FAILURES = 20


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    items = [item.strip() for value in values for item in value.split(",") if item.strip()]
    return None if not items or items == ["all"] else items


def _number(value: float) -> float | None:
    from workbench.pool.service import finite

    return finite(value)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""

    @app.command("analyze-pool")
    def analyze_pool_command(
        ctx: typer.Context,
        folder: Optional[Path] = typer.Option(None, "--folder", help="Measure the audio files under this folder (nothing is stored)."),
        clips: Optional[list[str]] = typer.Option(None, "--clips", help="Project clip keys (repeat or comma-separate); 'all' or nothing for every clip."),
        engine: str = typer.Option("local", "--engine", help="local (this process) or ray (a Ray cluster; extra [scale])."),
        ray_address: Optional[str] = typer.Option(None, "--ray-address", help="HOST:PORT of a running Ray cluster (default: start a local one)."),
        workers: int = typer.Option(2, "--workers", min=1, help="Threads (local) or concurrent Ray tasks (ray)."),
        shard_size: int = typer.Option(64, "--shard-size", min=1, help="Results stored per transaction."),
        force: bool = typer.Option(False, "--force", help="Measure clips again even when their stored metrics match their file."),
    ) -> None:
        """Decode and measure a pool (level, flatness, clipping, ACI) and flag it with the four quality filters.

        Project clips are stored shard by shard and a re-run resumes; a folder is only reported.
        """
        from workbench.pool.engines import RayMeasuring, check_engine
        from workbench.pool.service import analyze_pool

        from cli.context import check_choice

        check_choice(engine, ("local", "ray"), "--engine")
        check_engine(engine, ray_address)
        # The executor is chosen here and passed down: the pool step never branches on an engine name.
        remote = RayMeasuring(ray_address, workers) if engine == "ray" else None
        app = app_context(ctx)
        store = None if folder is not None else app.store()
        where = f"on Ray ({ray_address or 'local instance'})" if engine == "ray" else "locally"
        result = run_task(
            f"measuring {'files under ' + str(folder) if folder else 'clips'} {where}",
            lambda task: analyze_pool(
                store, folder=folder, clip_keys=_split(clips), workers=workers, shard_size=shard_size,
                force=force, task=task, remote=remote,
            ),
        )
        summary = result.value
        payload: dict[str, Any] = {
            "engine": summary.engine,
            "source": summary.source,
            "requested": summary.requested,
            "measured": summary.measured,
            "skipped": summary.skipped,
            "no_audio": summary.no_audio,
            "failed": [{"key": key, "error": error} for key, error in summary.failed],
            "flag_counts": summary.flag_counts(),
            "flags": summary.flags,
            "aci_pool": summary.aci_pool,
        }
        if folder is not None:
            payload["files"] = [
                {
                    "key": row.key, "path": row.path, "duration_s": row.duration_s, "sample_rate": row.sample_rate,
                    "n_channels": row.n_channels, "layout": row.layout, "rms_dbfs": _number(row.rms_dbfs),
                    "spectral_flatness": _number(row.spectral_flatness), "clipping_ratio": _number(row.clipping_ratio),
                    "aci": _number(row.aci), "flags": summary.flags.get(row.key, []), "error": row.error or None,
                }
                for row in summary.rows
            ]
        if app.json:
            emit_json(payload)
        else:
            counts = ", ".join(f"{name} {n}" for name, n in sorted(payload["flag_counts"].items())) or "none"
            show(f"{summary.measured} measured, {summary.skipped} already measured, {len(summary.failed)} failed, "
                 f"{len(summary.no_audio)} without audio; flagged: {counts}")
            pool = summary.aci_pool
            if pool and pool.get("cut_off") is not None:
                show(f"low_complexity is relative to the pool: ACI below {pool['cut_off']:.4g}, percentile "
                     f"{pool['percentile']:g} of {pool['clips']} {pool['what']}")
            elif pool and pool.get("why_not"):
                show(pool["why_not"])
            if folder is not None:
                from workbench.formatting import score

                for entry in payload["files"]:
                    if entry["error"] is None:
                        show(f"  {entry['key']}: {score(entry['duration_s'])} s, {entry['n_channels']} ch, "
                             f"{', '.join(entry['flags']) or 'passes'}")
            for key, error in summary.failed[:_SHOWN_FAILURES]:
                show(f"  failed {key}: {error}")
        if summary.no_audio:
            say(f"{len(summary.no_audio)} clip(s) have no audio linked: run `aglw media link`")
        if summary.failed:
            say(f"aglw: {len(summary.failed)} recording(s) could not be measured (a re-run tries them again)")
            raise typer.Exit(1)
