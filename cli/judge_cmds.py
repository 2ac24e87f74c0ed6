"""`aglw` commands: judge (run the LLM judges, sync or batch; collect; dry-run cost) and judge models."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from cli.context import app_context, emit_json, run_task, say, show
from workbench.errors import AglwError


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    items = [item.strip() for value in values for item in value.split(",") if item.strip()]
    return items or None


def _say_skipped(skipped: list, *, verbose: bool) -> None:  # type: ignore[type-arg]
    """One line per reason with its count (1,440 lines of the same reason helped nobody); ``-v``
    lists every skipped clip as well."""
    from collections import Counter

    if not skipped:
        return
    reasons = Counter(item.reason for item in skipped)
    listed = verbose
    say(f"skipped {len(skipped):,} clip(s): " + "; ".join(f"{reason} ({count:,})" for reason, count in reasons.most_common())
        + ("" if listed else " (-v lists them)"))
    if listed:
        for item in skipped:
            say(f"  skipped {item.key}: {item.reason}")


def _money(value: float | None) -> str:
    from workbench.formatting import usd

    return usd(value, "n/a (no price in judges.toml)")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the root app."""
    judge_app = typer.Typer(help="Run the LLM judges on the ALM chain-of-thought (see `aglw judge --help`).")

    @judge_app.callback(invoke_without_command=True)
    def judge(
        ctx: typer.Context,
        clips: Optional[list[str]] = typer.Option(
            None, "--clips", help="Clip keys (repeat or comma-separate); 'all' or nothing for every clip."
        ),
        alm: Optional[str] = typer.Option(None, "--alm", help="ALM model whose reasoning is judged (default: the only one)."),
        judges: Optional[list[str]] = typer.Option(None, "--judges", help="Judge names from judges.toml (default: the trio)."),
        mode: str = typer.Option("sync", "--mode", help="sync (answers as they come) or batch (Message Batches, half price)."),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Estimate tokens and cost per clip and in total offline; contacts nothing."
        ),
        count_tokens: bool = typer.Option(
            False, "--count-tokens",
            help="With --dry-run: count input tokens with the provider's endpoint (sends the prompts there; no model call).",
        ),
        collect: bool = typer.Option(False, "--collect", help="Collect the results of submitted batches (resumable)."),
        force: bool = typer.Option(False, "--force", help="Send requests even when an identical one is already answered."),
        concurrency: int = typer.Option(4, "--concurrency", min=1, max=64, help="Requests in flight per judge (sync)."),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="Another API endpoint (proxy or test server)."),
        assume_categories: Optional[int] = typer.Option(
            None, "--assume-categories", min=1,
            help="With --dry-run: also price clips without tags or prediction, assuming N categories.",
        ),
    ) -> None:
        """Run the judges (default: the configured trio) on clips with a prediction and tags."""
        if ctx.invoked_subcommand is not None:
            return
        from workbench.attribution.config import load_judges
        from workbench.attribution.providers import ProviderCallError
        from workbench.attribution.batch import collect_batches
        from workbench.attribution.estimate import dry_run as estimate
        from workbench.attribution.runner import run_judges

        app_ctx = app_context(ctx)
        config = load_judges(write_defaults=not dry_run)  # a dry run writes nothing, not even the defaults
        store = app_ctx.store()
        clip_keys = _split(clips)
        if clip_keys is not None and [k.lower() for k in clip_keys] == ["all"]:
            clip_keys = None
        judge_names = _split(judges)
        if mode not in ("sync", "batch"):
            raise typer.BadParameter("use sync or batch", param_hint="--mode")
        if count_tokens and not dry_run:
            raise typer.BadParameter("goes with --dry-run", param_hint="--count-tokens")
        if dry_run:
            if count_tokens:
                say("--count-tokens contacts the provider: every prompt is sent to its token-counting endpoint "
                    "(free, no model is called)")
            try:
                report = estimate(
                    store, config, judge_names=judge_names, alm_model=alm, clip_keys=clip_keys, force=force,
                    base_url=base_url, assume_categories=assume_categories, count_tokens=count_tokens,
                )
            except ProviderCallError as exc:
                raise AglwError(f"token counting failed: {exc}; drop --count-tokens for the offline estimate") from None
            if app_ctx.json:
                emit_json(report.as_dict())
                return
            totals = report.totals()
            out = sys.stdout
            sent = ("prompts sent to the token-counting endpoint only; no model was called" if count_tokens
                    else "nothing was sent anywhere")
            out.write(f"Dry run ({report.method}); {sent}.\n")
            for note in report.assumptions:
                out.write(f"  assumption: {note}\n")
            out.write(f"{'judge':<10} {'clip':<28} {'in tok':>8} {'out tok':>8} {'sync $':>10} {'batch $':>10}\n")
            for row in report.clips:
                sync_cost = "n/a" if row.cost_sync_usd is None else f"{row.cost_sync_usd:.5f}"
                batch_cost = "n/a" if row.cost_batch_usd is None else f"{row.cost_batch_usd:.5f}"
                out.write(f"{row.judge:<10} {row.clip:<28} {row.input_tokens:>8} {row.output_tokens:>8} "
                          f"{sync_cost:>10} {batch_cost:>10}\n")
            for name, entry in totals["per_judge"].items():
                out.write(f"total {name}: {entry['requests']} requests, {entry['input_tokens']} input + "
                          f"{entry['output_tokens']} output tokens, sync {_money(entry['cost_sync_usd'])}, "
                          f"batch {_money(entry['cost_batch_usd'])}\n")
            total = totals["total"]
            out.write(f"total: {total['requests']} requests, {total['input_tokens']} input + {total['output_tokens']} "
                      f"output tokens, sync {_money(total['cost_sync_usd'])}, batch {_money(total['cost_batch_usd'])}\n")
            if report.answered_before:
                out.write(f"{report.answered_before} requests are already answered and would not be sent (--force sends them)\n")
            _say_skipped(report.skipped, verbose=bool(ctx.find_root().params.get("verbose")))
            return
        try:
            if collect:
                report = run_task(
                    "collecting batches", lambda task: collect_batches(store, config, base_url=base_url, task=task)
                ).value
                if not report.judges:
                    say("no submitted batches to collect")
            else:
                report = run_task(
                    "judging",
                    lambda task: run_judges(
                        store, config, judge_names=judge_names, alm_model=alm, clip_keys=clip_keys, mode=mode,
                        force=force, concurrency=concurrency, base_url=base_url, task=task,
                    ),
                ).value
        except ProviderCallError as exc:
            # A fault outside one clip's request (model list, batch create or collect): the run
            # stops; every answer received before it is already stored.
            raise AglwError(f"judging stopped: {exc}. Answers received so far are stored; rerun to resume") from None
        failed = sum(s.failed for s in report.judges) + sum(1 for s in report.judges if s.status == "failed")
        if app_ctx.json:
            emit_json(report.as_dict())
            if failed:
                raise typer.Exit(1)
            return
        for summary in report.judges:
            line = (f"{summary.judge} ({summary.model}, {summary.mode}): {summary.status}; "
                    f"{summary.ok} ok, {summary.failed} failed, {summary.retries} retries, "
                    f"{summary.answered_before} already answered")
            if summary.batch_id:
                line += f"; batch {summary.batch_id} (collect with `aglw judge --collect`)"
            tokens = summary.tokens
            line += (f"; tokens in {tokens['input_tokens']}, out {tokens['output_tokens']}, cache write "
                     f"{tokens['cache_creation_input_tokens']}, cache read {tokens['cache_read_input_tokens']}; "
                     f"cost {_money(summary.cost_usd)}")
            show(line)
            for failure in summary.failures[:10]:
                show(f"  failed {failure['clip']}: {failure['reason']}")
        _say_skipped(report.skipped, verbose=bool(ctx.find_root().params.get("verbose")))
        show(f"total cost {_money(report.total_cost_usd)}")
        if failed:
            say(f"aglw: {failed} judge request(s) failed (stored with their reasons; `aglw judge` resends them)")
            raise typer.Exit(1)

    @judge_app.command("models")
    def models(
        ctx: typer.Context,
        base_url: Optional[str] = typer.Option(None, "--base-url", help="Another API endpoint."),
        verify: bool = typer.Option(True, "--verify/--no-verify", help="Check the ids against the provider's model list."),
    ) -> None:
        """List the configured judges and check their model ids with the provider."""
        from workbench.attribution.config import load_judges
        from workbench.attribution.providers import make_provider

        app_ctx = app_context(ctx)
        config = load_judges()
        rows = []
        offered: dict[tuple[str, str | None], set[str]] = {}
        for judge in config.judges.values():
            row = {"name": judge.name, "provider": judge.provider, "model": judge.model,
                   "prompt_version": judge.prompt_version, "in_trio": judge.name in config.trio,
                   "price": vars(config.prices[judge.model]) if judge.model in config.prices else None,
                   "available": None}
            if verify:
                key = (judge.provider, base_url or judge.base_url)
                if key not in offered:
                    provider = make_provider(judge, base_url=base_url)
                    try:
                        offered[key] = provider.list_models()
                    finally:
                        provider.close()
                row["available"] = judge.model in offered[key]
            rows.append(row)
        if app_ctx.json:
            emit_json({"config": str(config.path), "trio": config.trio, "judges": rows})
            return
        say(f"judges from {config.path}")
        for row in rows:
            status = {None: "not checked", True: "available", False: "NOT OFFERED by the provider"}[row["available"]]
            sys.stdout.write(f"{'*' if row['in_trio'] else ' '} {row['name']:<10} {row['provider']:<18} "
                             f"{row['model']:<24} {row['prompt_version']:<16} {status}\n")

    app.add_typer(judge_app, name="judge")
