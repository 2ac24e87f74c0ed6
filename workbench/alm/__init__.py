"""Running audio-language models on clips (AGL1K's evaluation step inside the workbench).

Public entry points
-------------------
- :func:`workbench.alm.runner.run_alm` — ask an ALM about clips; answers become predictions of a model NAME.
- :func:`workbench.alm.plan.dry_run` — tokens and cost of a run, offline.
- :func:`workbench.alm.batch.submit_batch` / :func:`workbench.alm.batch.collect_batches` — Gemini's Batch API.
- :func:`workbench.alm.records.export_predictions` — a model's predictions as AGL1K result records.
- :func:`workbench.alm.parse.parse_reply` — a reply's location guess, or a reject with its reason.
- :func:`workbench.alm.prompts.load_prompt` — ``agl1k-v1`` (AGL1K's prompt, verbatim) or a user template.
- :func:`workbench.alm.config.load_alm_config` — providers, models, prices and limits from ``alm.toml``.
- :func:`workbench.alm.local.register_family` — add a local (transformers) model family.
"""
