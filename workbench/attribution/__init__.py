"""Triple-LLM attribution: judges read an ALM's chain-of-thought and score each detected category.

Public entry points
-------------------
- :func:`workbench.attribution.config.load_judges` — judges and prices from ``judges.toml``.
- :func:`workbench.attribution.service.run_judges` — sync run or batch submission.
- :func:`workbench.attribution.service.collect_batches` — collect ended batches (resumable).
- :func:`workbench.attribution.service.dry_run` — tokens and cost before sending.
- :func:`workbench.attribution.service.judge_one_clip` — one judge on one clip (GUI interactive mode).
- :func:`workbench.attribution.schema.check_reply` — validation of a reply.
"""
