"""`aglw` commands: tag, tag-file."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from cli.context import app_context, check_choice, emit_json, run_task, say, show, usage_error
from workbench.errors import InputError

# A summary lists this many failed clips; --json lists all.
_SHOWN_FAILURES = 20
# Spelled out here (not imported) so that `aglw --help` stays free of torch; a test checks the
# figures against workbench.tagging.precision.
_PRECISION_HELP = ("full (default): IEEE float32 on every device, logits within 1e-4 of the reference; "
                   "fast: TF32 + bf16 autocast on CUDA, clip probabilities within 2e-2 (timeline 1e-1; "
                   "same as full on CPU).")


def _precision(value: str) -> str:
    if value not in ("full", "fast"):
        raise typer.BadParameter(f"{value!r}: expected full or fast")
    return value


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    items = [item.strip() for value in values for item in value.split(",") if item.strip()]
    if not items or items == ["all"]:
        return None
    return items


def _check_device(device: str) -> None:
    """``cpu``, ``cuda`` or ``cuda:N``; anything else is a usage error (exit 2). Whether CUDA is
    there is checked later (a handled error, exit 1)."""
    import re

    if not re.fullmatch(r"cpu|cuda(:\d+)?", device.strip()):
        raise typer.BadParameter(f"{device!r} is not a device; use cpu, cuda or cuda:N", param_hint="--device")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""

    @app.command("tag")
    def tag_command(
        ctx: typer.Context,
        clips: Optional[list[str]] = typer.Option(
            None, "--clips", help="Clip keys (repeat or comma-separate); 'all' or nothing for every clip."
        ),
        model: str = typer.Option("mn10_as", "--model", help="Official EfficientAT AudioSet checkpoint name."),
        device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
        workers: int = typer.Option(2, "--workers", min=1, help="Decoding threads (local) or tagger actors (ray)."),
        batch_size: Optional[int] = typer.Option(
            None, "--batch-size", min=1, help="Windows per forward pass (default 16 on CPU, 256 on a GPU)."),
        precision: str = typer.Option(
            "full", "--precision", callback=_precision, help=_PRECISION_HELP),
        new_run: bool = typer.Option(False, "--new-run", help="Start a new run instead of resuming the latest one."),
        engine: str = typer.Option("local", "--engine", help="local (this process) or ray (an actor pool; extra [scale])."),
        ray_address: Optional[str] = typer.Option(None, "--ray-address", help="HOST:PORT of a running Ray cluster (default: start a local one)."),
    ) -> None:
        """Tag the project's clips with EfficientAT (resumable: finished clips are skipped)."""
        from workbench.pool.engines import check_engine
        from workbench.tagging.assets import load_default_ontology, load_named_checkpoint, resolve_device
        from workbench.tagging.service import tag_clips

        app = app_context(ctx)
        _check_device(device)
        check_choice(engine, ("local", "ray"), "--engine")
        check_engine(engine, ray_address)
        remote = None
        if engine == "ray":
            from workbench.pool.tagging import RayTagging

            remote = RayTagging(ray_address, workers)
        resolve_device(device)
        ontology = load_default_ontology()
        checkpoint = load_named_checkpoint(model, device="cpu")
        store = app.store()
        summary = run_task(
            f"tagging with {checkpoint.name}",
            lambda task: tag_clips(
                store,
                checkpoint,
                ontology.classes,
                clip_keys=_split(clips),
                device=device,
                workers=workers,
                batch_size=batch_size,
                fresh_run=new_run,
                task=task,
                remote=remote,
                precision=precision,
            ),
        ).value
        payload = {
            "run_id": summary.run_id,
            "model": summary.model,
            "checkpoint_sha256": summary.checkpoint_sha256,
            "device": summary.device,
            "precision": summary.precision,
            "engine": engine,
            "resumed": summary.resumed,
            "selected": summary.n_selected,
            "tagged": summary.n_tagged,
            "skipped": summary.n_skipped,
            "failed": [{"key": f.key, "error": f.error} for f in summary.failures],
            "no_audio": summary.no_audio,
        }
        if app.json:
            emit_json(payload)
        else:
            show(
                f"run {summary.run_id} ({summary.model} on {summary.device}, precision {summary.precision}): "
                f"{summary.n_tagged} tagged, {summary.n_skipped} already done, "
                f"{len(summary.failures)} failed, {len(summary.no_audio)} without audio (not attempted)"
            )
            for failure in summary.failures[:_SHOWN_FAILURES]:
                show(f"  failed {failure.key}: {failure.error}")
            if len(summary.failures) > _SHOWN_FAILURES:
                say(f"{len(summary.failures) - _SHOWN_FAILURES} more failure(s) not shown; --json lists them all")
        if summary.no_audio:
            say(f"{len(summary.no_audio)} clip(s) have no audio linked: put the recordings under a media root "
                "and run `aglw media link`")
        if summary.failures:
            say(f"aglw: {len(summary.failures)} of {summary.n_selected} clip(s) failed (stored with their errors; "
                "`aglw tag` retries them)")
            raise typer.Exit(1)

    @app.command("tag-file")
    def tag_file_command(
        ctx: typer.Context,
        file: Path = typer.Argument(..., help="Audio file to tag."),
        model: Optional[str] = typer.Option(None, "--model", help="Official checkpoint name (default mn10_as)."),
        checkpoint: Optional[Path] = typer.Option(None, "--checkpoint", help="A local state-dict file (needs --arch)."),
        arch: Optional[str] = typer.Option(None, "--arch", help="Architecture of --checkpoint: mn01 … mn40."),
        all_classes: bool = typer.Option(False, "--all-classes", help="Include all 527 probabilities."),
        top: int = typer.Option(10, "--top", min=0, help="How many top classes to list."),
        device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
        timeline: bool = typer.Option(False, "--timeline", help="Include the per-second timeline of the top classes."),
        precision: str = typer.Option("full", "--precision", callback=_precision, help=_PRECISION_HELP),
    ) -> None:
        """Tag one audio file without a project."""
        from workbench.audio.loader import load_audio
        from workbench.tagging.assets import load_checkpoint, load_default_ontology, load_named_checkpoint
        from workbench.tagging.inference import AudioTagger
        from workbench.tagging.preprocess import SAMPLE_RATE

        app = app_context(ctx)
        _check_device(device)
        if checkpoint is not None and model is not None:
            raise usage_error("pass either --model NAME or --checkpoint PATH --arch mnXX, not both", "--checkpoint")
        if checkpoint is not None:
            if arch is None:
                raise usage_error(f"{checkpoint}: also pass --arch (mn01, mn02, mn04, mn05, mn10, mn20, mn30, mn40)",
                                  "--checkpoint")
            loaded = load_checkpoint(checkpoint, arch, device=device)
        else:
            if arch is not None:
                raise usage_error("goes with --checkpoint; a named --model knows its architecture", "--arch")
            loaded = load_named_checkpoint(model or "mn10_as", device=device)
        ontology = load_default_ontology()
        audio = load_audio(file, sample_rate=SAMPLE_RATE, mono=True)
        try:
            result = AudioTagger(loaded.model, device=device, precision=precision).tag(audio.samples[:, 0], timeline=timeline)
        except ValueError as exc:
            raise InputError(f"{file}: {exc}") from exc
        top_indices = result.top(top)
        payload: dict = {
            "model": loaded.name,
            "arch": loaded.arch,
            "checkpoint_sha256": loaded.sha256,
            "file": str(file),
            "sample_rate": SAMPLE_RATE,
            "device": device,
            "precision": precision,
            "duration_s": result.duration_s,
            "n_windows": result.n_windows,
            "top": [
                {
                    "index": i,
                    "id": ontology.classes[i].id,
                    "name": ontology.classes[i].name,
                    "probability": float(result.probabilities[i]),
                }
                for i in top_indices
            ],
            "roots": ontology.root_rollup(result.probabilities),
            "agl1k_categories": ontology.agl1k_rollup(result.probabilities),
        }
        if all_classes:
            payload["probabilities"] = [float(p) for p in result.probabilities]
        if timeline and result.timeline is not None:
            payload["timeline"] = {
                "hop_s": result.timeline_hop_s,
                "classes": [{"index": i, "id": ontology.classes[i].id, "values": [float(v) for v in result.timeline[:, i]]} for i in top_indices],
            }
        if app.json:
            emit_json(payload)
            return
        from workbench.formatting import probability, score

        show(f"{file}: {score(result.duration_s)} s, model {loaded.name}")
        for entry in payload["top"]:
            show(f"  {probability(entry['probability']):>5}  {entry['name']} ({entry['id']})")
