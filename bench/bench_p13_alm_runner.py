"""P13: ALM runner — orchestration overhead and the dry-run estimate for all AGL1K clips.

1. Overhead: 1,444 clips (the AGL1K CSV, a 0.02 s synthetic recording per clip) asked through the
   official ``openai`` SDK at concurrency 8 against an instant fake OpenAI-compatible server on
   127.0.0.1, every answer parsed and stored; target ≤ 15 s including storing (then a run is bound
   by the provider, not by us). A second run shows the cost of the never-pay-twice check.
2. Estimate: ``aglw alm run --dry-run`` for all 1,444 clips from the CSV's durations, for one OpenAI
   audio model and Gemini models with the default price table of ``alm.toml``, sync and batch.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _serve(conn, media: str, keys: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Child process: an instant fake OpenAI-compatible server; sends its URL, serves until told to stop."""
    from tests.support.fake_alm import FakeOpenAIServer

    with FakeOpenAIServer(models=["fake-audio-model"]) as fake:
        for key in keys:
            fake.register_audio(Path(media) / f"{key}.wav", key)
        conn.send(fake.base_url)
        conn.recv()


def _bare_sdk(base_url: str, audio: Path, n: int) -> float:
    """Seconds for ``n`` identical requests through the openai SDK at 8 threads: the floor under the runner."""
    import base64
    from concurrent.futures import ThreadPoolExecutor

    import openai

    from workbench.alm.prompts import load_prompt

    client = openai.OpenAI(api_key="none", base_url=base_url, max_retries=0)
    data = base64.b64encode(audio.read_bytes()).decode("ascii")
    content = [{"type": "text", "text": load_prompt("agl1k").before},
               {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}}]

    def one(_: int) -> None:
        client.chat.completions.create(model="fake-audio-model", messages=[{"role": "user", "content": content}],
                                       max_completion_tokens=2048, seed=42)

    start = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(n)))
    client.close()
    return time.perf_counter() - start


def main() -> int:
    data = SHARED / "data" / "agl1k"
    if not data.is_dir():
        print(f"P13 skipped: {data} is absent")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["AGLW_CONFIG_DIR"] = str(root / "config")
        for name in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
            os.environ.pop(name, None)
        from storage import open_store
        from tests.storage.alm_project import write_tone
        from workbench.alm.runner import AlmRunOptions, dry_run, run_alm
        from workbench.importing.agl1k import read_agl1k_csv
        from workbench.importing import import_dataset

        csv = data / "geoLocalization_schema.csv"
        keys = [row["key"] for row in read_agl1k_csv(csv, format="agl1k").rows]
        media = root / "media"
        media.mkdir()
        for i, key in enumerate(keys):
            write_tone(media / f"{key}.wav", i, seconds=0.02)
        store = open_store(root / "p13.sqlite")
        import_dataset(store, csv, media_root=media)

        # --- 1. orchestration overhead (the fake server runs in its own process: the figure is ours)
        parent, child = multiprocessing.Pipe()
        server = multiprocessing.Process(target=_serve, args=(child, str(media), keys), daemon=True)
        server.start()
        base_url = parent.recv()
        try:
            options = AlmRunOptions(model="bench", provider="openai-compatible", api_model="fake-audio-model",
                                    base_url=base_url, concurrency=8)
            start = time.perf_counter()
            report = run_alm(store, options)
            elapsed = time.perf_counter() - start
            start = time.perf_counter()
            again = run_alm(store, options)
            rerun = time.perf_counter() - start
            baseline = _bare_sdk(base_url, media / f"{keys[0]}.wav", len(keys))
        finally:
            parent.send("stop")
            server.join(10)
        print(f"P13 overhead: {report.answered} of {report.requested} clips answered and stored at concurrency 8 "
              f"in {elapsed:.2f} s ({report.requested / elapsed:.0f} clips/s; target ≤ 15 s); "
              f"{len(report.failed)} failed")
        print(f"P13 baseline: the same {len(keys)} requests through the bare openai SDK at 8 threads (no audio "
              f"reading, parsing or storing) take {baseline:.2f} s; the runner takes {elapsed / baseline:.2f} × that")
        print(f"P13 rerun: {again.skipped_cached} already answered, {again.requests_sent} requests sent, {rerun:.2f} s "
              "(audio hashed, fingerprints checked)")

        # --- 2. dry-run estimates from the CSV durations (all 1,444 clips, none answered yet)
        print("P13 estimate: all 1,444 AGL1K clips, durations from the CSV (mp3seconds), agl1k-v1 prompt, "
              "default alm.toml prices (US$)")
        print(f"{'model':<24} {'audio h':>8} {'text in':>10} {'audio in':>11} {'out':>9} {'sync $':>9} {'batch $':>9}")
        for provider, model in (("openai", "gpt-4o-audio-preview"), ("openai", "gpt-audio"),
                                ("gemini", "gemini-2.5-flash"), ("gemini", "gemini-3-pro-preview")):
            estimate = dry_run(store, AlmRunOptions(model=f"estimate-{model}", provider=provider, api_model=model))
            batch = "n/a" if estimate.cost_batch_usd is None else f"{estimate.cost_batch_usd:.2f}"
            sync = "n/a" if estimate.cost_usd is None else f"{estimate.cost_usd:.2f}"
            print(f"{model:<24} {estimate.audio_seconds / 3600:>8.1f} {estimate.text_tokens:>10,} "
                  f"{estimate.audio_tokens:>11,} {estimate.output_tokens:>9,} {sync:>9} {batch:>9}")
        print("  assumptions: prompt text ceil(chars/4)+8 tokens; audio 10 tokens/s (OpenAI), 32 tokens/s (Gemini); "
              "450 output tokens per answer (AGL1K's Gemini 3 Pro replies average ~1,200 characters ≈ 300 tokens; "
              "thinking tokens, billed as output, come on top and are not estimated); "
              "batch at 50 % of the sync price")
        store.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
