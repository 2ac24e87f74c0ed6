"""Triple-LLM attribution: judges read an ALM's chain-of-thought and score each detected category.

Public entry points
-------------------
- :func:`workbench.attribution.config.load_judges` — judges and prices from ``judges.toml``.
- :func:`workbench.attribution.inputs.select_clip_inputs` — what the judges read, and the clips skipped.
- :func:`workbench.attribution.plan.plan_requests` — requests per judge, minus those already answered.
- :func:`workbench.attribution.runner.run_judges` — sync run or batch submission.
- :func:`workbench.attribution.batch.collect_batches` — collect ended batches (resumable).
- :func:`workbench.attribution.records.store_attempts` — calls and judgments as stored.
- :func:`workbench.attribution.estimate.dry_run` — tokens and cost before sending.
- :func:`workbench.attribution.runner.judge_one_clip` — one judge on one clip (GUI interactive mode).
- :func:`workbench.attribution.schema.check_reply` — validation of a reply.
"""
