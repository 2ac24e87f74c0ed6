"""P9: LLM judging cost — dry-run tokens and cost for the configured trio over all AGL1K clips.

Imports the AGL1K CSV and the Gemini 3 Pro partial results from ../shared into a temporary project,
then prices one request per clip and judge, sync and batch. Clips without tags are assumed to have 10
categories; clips without a prediction a chain-of-thought of the Gemini file's median length. Input
tokens come from characters / 3.5 (no key is used, nothing is sent); see the printed assumptions.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    data = SHARED / "data" / "agl1k"
    if not data.is_dir():
        print(f"P9 skipped: {data} is absent")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGLW_CONFIG_DIR"] = str(Path(tmp) / "config")
        os.environ.pop("ANTHROPIC_API_KEY", None)
        if (SHARED / "audioset" / "ontology.json").is_file():
            os.environ.setdefault("AGLW_ONTOLOGY", str(SHARED / "audioset" / "ontology.json"))
        from storage import open_store
        from workbench.attribution.config import load_judges
        from workbench.attribution.estimate import dry_run
        from workbench.importing import import_dataset, import_predictions

        store = open_store(Path(tmp) / "p9.sqlite")
        import_dataset(store, data / "geoLocalization_schema.csv", format="agl1k")
        import_predictions(store, "gemini-3-pro-preview", data / "gemini-3-pro-preview_seed_42_ABCD.partial.jsonl")
        start = time.perf_counter()
        report = dry_run(store, load_judges(), count_tokens=False, assume_categories=10)
        elapsed = time.perf_counter() - start
        store.dispose()
    totals = report.totals()
    print(f"P9 dry-run over {len({c.clip for c in report.clips})} clips, method: {report.method}")
    for note in report.assumptions:
        print(f"  assumption: {note}")
    per_clip = [c for c in report.clips if c.judge == next(iter(totals['per_judge']))]
    if per_clip:
        print(f"  per clip (first judge): {per_clip[0].input_tokens} input + {per_clip[0].output_tokens} output tokens")
    for name, entry in totals["per_judge"].items():
        print(f"  {name:<8} {entry['requests']:>5} requests  {entry['input_tokens']:>9} in  {entry['output_tokens']:>9} out"
              f"  sync ${entry['cost_sync_usd']:.2f}  batch ${entry['cost_batch_usd']:.2f}")
    total = totals["total"]
    print(f"  total    {total['requests']:>5} requests  {total['input_tokens']:>9} in  {total['output_tokens']:>9} out"
          f"  sync ${total['cost_sync_usd']:.2f}  batch ${total['cost_batch_usd']:.2f}"
          f"  (batch/sync = {total['cost_batch_usd'] / total['cost_sync_usd']:.2f})")
    print(f"  estimate computed in {elapsed:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
