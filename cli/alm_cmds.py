"""`aglw` commands: alm run (ask an ALM about the clips) and export predictions (AGL1K result records)."""

from __future__ import annotations

from typing import Optional

import typer

from cli.context import app_context, emit_json, run_task, say, show, usage_error

# A summary lists this many failures; --json lists all.
_SHOWN = 20


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    items = [item.strip() for value in values for item in value.split(",") if item.strip()]
    if not items or [i.lower() for i in items] == ["all"]:
        return None
    return items


def _money(value: float | None) -> str:
    from workbench.formatting import usd

    return usd(value, "unknown (no price in alm.toml)")


def _per_call(gpu_batch: int) -> str:
    """A local run's clips per generate call, in words."""
    if gpu_batch == 1:
        return "1 clip per generate call (the reference's way)"
    return (f"up to {gpu_batch} clips per generate call (--gpu-batch {gpu_batch}): its answers may differ from the "
            "reference's one clip per call, and are filed apart from them")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app (`export predictions` is registered by the
    export group's owner, cli/curation_cmds.py, so that `aglw export` finds it)."""
    alm_app = typer.Typer(help="Run audio-language models on the clips (see `aglw alm run --help`).",
                          no_args_is_help=True)

    @alm_app.command("run")
    def alm_run_command(
        ctx: typer.Context,
        model: str = typer.Option(..., "--model", help="Name the answers are filed under (a model of the leaderboard)."),
        provider: Optional[str] = typer.Option(
            None, "--provider", help="openai | openai-compatible | gemini | transformers (not needed with --collect)."),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="Server URL (vLLM: http://HOST:8000/v1)."),
        api_model: Optional[str] = typer.Option(None, "--api-model", help="The provider's model id (default: --model)."),
        api_key_env: Optional[str] = typer.Option(
            None, "--api-key-env", help="Environment variable holding the key (openai-compatible; none for a local server)."),
        clips: Optional[list[str]] = typer.Option(
            None, "--clips", help="Clip keys (repeat or comma-separate); 'all' or nothing for every clip."),
        prompt: str = typer.Option("agl1k", "--prompt", help="agl1k (AGL1K's prompt) or a template file with one {audio} line."),
        concurrency: int = typer.Option(4, "--concurrency", min=1, max=64, help="Requests in flight."),
        max_cost: Optional[float] = typer.Option(
            None, "--max-cost", min=0, help="Refuse a run whose estimate exceeds USD; stop once spent reaches it."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Estimate tokens and cost offline; sends and writes nothing."),
        force: bool = typer.Option(False, "--force", help="Ask again even where an identical request is answered."),
        samples: int = typer.Option(1, "--samples", min=1, max=50, help="Answers drawn per clip on purpose (self-consistency)."),
        seed: Optional[int] = typer.Option(42, "--seed", help="Sampling seed sent to the provider (AGL1K: 42)."),
        mode: str = typer.Option("sync", "--mode", help="sync, or batch (Gemini's Batch API at its price; then --collect)."),
        collect: bool = typer.Option(False, "--collect", help="Store the answers of submitted batches of --model (resumable)."),
        engine: str = typer.Option("local", "--engine", help="transformers only: local (this process) or ray (--concurrency actors; extra [scale])."),
        ray_address: Optional[str] = typer.Option(None, "--ray-address", help="HOST:PORT of a running Ray cluster (default: start a local one)."),
        gpu_batch: int = typer.Option(
            1, "--gpu-batch", min=1,
            help="transformers only: clips per generate call. 1 is AGL1K's way (one clip per call); N > 1 is "
                 "faster on a GPU but its answers may differ from the reference's (recorded, in the fingerprint)."),
    ) -> None:
        """Ask the ALM where each clip was recorded; answers become the predictions of model NAME."""
        from workbench.alm.config import PROVIDERS
        from workbench.alm.runner import AlmRunOptions, dry_run as estimate, run_alm

        app = app_context(ctx)
        if collect:
            from workbench.alm.batch import collect_batches

            store = app.store()
            result = run_task(f"{model}: collecting batches", lambda task: collect_batches(
                store, model.strip(), task=task, base_url=base_url))
            _finish(app, result.value)
            return
        if not model.strip():
            raise usage_error("the model name is empty; pass --model NAME", "--model")
        if provider not in PROVIDERS:
            raise typer.BadParameter(f"use one of {', '.join(PROVIDERS)}", param_hint="--provider")
        if mode not in ("sync", "batch"):
            raise typer.BadParameter("use sync or batch", param_hint="--mode")
        if engine not in ("local", "ray"):
            raise typer.BadParameter("use local or ray", param_hint="--engine")
        if gpu_batch > 1 and engine == "ray":  # refused before Ray starts (API providers: workbench.alm.plan)
            raise usage_error("batches generate calls in this process; --engine ray asks each actor one clip at a "
                              "time (leave --gpu-batch at 1)", "--gpu-batch")
        from workbench.pool.engines import check_engine

        check_engine(engine, ray_address)
        remote = None
        if engine == "ray":
            if mode == "batch":
                raise usage_error("ray runs a local model; a provider's batch API runs on its machines (--mode sync)",
                                  "--engine")
            from workbench.pool.alm import RayAlm

            remote = RayAlm(ray_address, concurrency)
        options = AlmRunOptions(
            model=model.strip(), provider=provider, api_model=api_model, base_url=base_url, api_key_env=api_key_env,
            clip_keys=_split(clips), prompt=prompt, concurrency=concurrency, max_cost=max_cost, force=force,
            samples=samples, seed=seed, gpu_batch=gpu_batch,
        )
        store = app.store()
        if dry_run:
            report = estimate(store, options)
            if app.json:
                emit_json(report.as_dict())
                return
            show(f"Dry run for {report.model} ({report.provider}, {report.api_model}, prompt {report.prompt_version}); "
                 "nothing was sent or written.")
            if report.gpu_batch is not None:
                show(_per_call(report.gpu_batch))
            show(f"{report.requests} request(s) for {report.clips} clip(s) × {report.samples} sample(s); "
                 f"{report.skipped_cached} already answered (not sent again)")
            show(f"audio {report.audio_seconds / 3600:.2f} h; tokens: {report.text_tokens:,} text + "
                 f"{report.audio_tokens:,} audio input, {report.output_tokens:,} output (estimated)")
            batch = "" if report.cost_batch_usd is None else f", batch {_money(report.cost_batch_usd)}"
            show(f"cost: sync {_money(report.cost_usd)}{batch}")
            for note in report.notes:
                say(f"note: {note}")
            return
        if mode == "batch":
            from workbench.alm.batch import submit_batch

            result = run_task(f"{model}: submitting a batch", lambda task: submit_batch(store, options, task=task))
        else:
            result = run_task(f"{model}: asking {options.api_model_id}", lambda task: run_alm(store, options, task=task,
                                                                                                remote=remote))
        _finish(app, result.value)

    def _finish(app, report) -> None:  # type: ignore[no-untyped-def]
        if app.json:
            payload = report.as_dict()
            emit_json(payload)
        else:
            show(f"{report.model} ({report.provider}, {report.api_model}): {report.requested} requested, "
                 f"{report.answered} answered ({len(report.rejected)} without coordinates), "
                 f"{report.skipped_cached} already answered, {len(report.failed)} failed")
            show(f"tokens: {report.input_tokens:,} input, {report.output_tokens:,} output; cost {_money(report.cost_usd)}")
            if report.gpu_batch is not None:
                show(_per_call(report.gpu_batch))
            for entry in report.failed[:_SHOWN]:
                show(f"  failed {entry['key']}: {entry['reason']}")
            if len(report.failed) > _SHOWN:
                show(f"  … {len(report.failed) - _SHOWN} more (see --json)")
            if report.stopped:
                say(report.stopped)
        if report.failed:
            raise typer.Exit(1)

    app.add_typer(alm_app, name="alm")


def export_predictions_command(
    ctx: typer.Context,
    out: str = typer.Argument(..., help="JSON Lines file to write (AGL1K's seed_42_ABCD.jsonl shape)."),
    model: str = typer.Option(..., "--model", help="Model whose predictions are written."),
    format: str = typer.Option("agl1k", "--format", help="agl1k (the only format)."),  # noqa: A002
    force: bool = typer.Option(False, "--force", help="Replace OUT if it exists."),
) -> None:
    """Write a model's predictions as AGL1K result records (readable by AGL1K's analysis script)."""
    from workbench.alm.records import export_predictions

    if format != "agl1k":
        raise typer.BadParameter("only agl1k is supported", param_hint="--format")
    app = app_context(ctx)
    result = export_predictions(app.store(), model, out, overwrite=force)
    if app.json:
        emit_json({"model": result.model, "path": str(result.path), "n_records": result.n_records})
        return
    show(f"wrote {result.n_records} record(s) of {result.model} to {result.path}")
