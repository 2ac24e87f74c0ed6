"""P13: ALM runner — orchestration overhead and the dry-run estimate for all AGL1K clips.

1. Overhead: 1,444 clips (the AGL1K CSV, a 0.02 s synthetic recording per clip) asked through the
   official ``openai`` SDK at concurrency 8 against an instant OpenAI-compatible stub on
   127.0.0.1, every answer parsed and stored; target ≤ 15 s including storing (then a run is bound
   by the provider, not by us). A second run shows the cost of the never-pay-twice check.
2. Estimate: ``aglw alm run --dry-run`` for all 1,444 clips from the CSV's durations, for one OpenAI
   audio model and Gemini models with the default price table of ``alm.toml``, sync and batch.

Benchmarks import nothing from ``tests/`` (a benchmark must not break when a test helper changes
for a test's sake). The project is built with the product's own import (``import_dataset``, what
``aglw import`` runs) from per-clip tones written here. The server is :func:`_answer_everything`:
a stub, not a second copy of the tests' fake ALM APIs (``tests/support/fake_alm.py`` stays the
one fake, with scripted behaviours, clip matching, request logs and both APIs). It answers every
``POST`` with one fixed, well-formed chat completion and does nothing else, which is all an
overhead measurement wants: the least a server can do, so that the time is the runner's. A
benchmark that needs behaviours (faults, per-clip answers) should not grow this stub; it should
get the fake moved to where benchmarks and tests can both import it.
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

API_MODEL = "p13-audio-model"


def _answer_everything(conn) -> None:  # type: ignore[no-untyped-def]
    """Child process: an OpenAI-compatible stub on 127.0.0.1 that answers every ``POST`` with the
    same chat completion; sends its URL, serves until told to stop."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answer = {"reason": "Church bells and French speech.", "city": "Lyon", "country": "France",
              "continent": "Europe", "longitude": 4.8357, "latitude": 45.764}
    reply = json.dumps({
        "id": "chatcmpl-p13", "object": "chat.completion", "created": 0, "model": API_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(answer), "refusal": None},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 350, "total_tokens": 1250,
                  "prompt_tokens_details": {"audio_tokens": 600, "cached_tokens": 0}},
    }).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

        def log_message(self, *args: object) -> None:
            return

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    conn.send(f"http://{host}:{port}/v1")
    conn.recv()
    server.shutdown()


def _write_tone(path: Path, index: int, seconds: float, rate: int = 8000) -> None:
    """A short WAV whose bytes differ per clip (the runner fingerprints each clip's audio)."""
    import numpy as np
    import soundfile as sf

    t = np.arange(int(seconds * rate)) / rate
    sf.write(path, (0.2 * np.sin(2 * np.pi * (200 + 37 * index) * t)).astype("float32"), rate)


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
        client.chat.completions.create(model=API_MODEL, messages=[{"role": "user", "content": content}],
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
        from workbench.alm.runner import AlmRunOptions, dry_run, run_alm
        from workbench.importing.agl1k import read_agl1k_csv
        from workbench.importing import import_dataset

        csv = data / "geoLocalization_schema.csv"
        keys = [row["key"] for row in read_agl1k_csv(csv, format="agl1k").rows]
        media = root / "media"
        media.mkdir()
        for i, key in enumerate(keys):
            _write_tone(media / f"{key}.wav", i, seconds=0.02)
        store = open_store(root / "p13.sqlite")
        import_dataset(store, csv, media_root=media)

        # --- 1. orchestration overhead (the stub runs in its own process: the figure is ours)
        parent, child = multiprocessing.Pipe()
        server = multiprocessing.Process(target=_answer_everything, args=(child,), daemon=True)
        server.start()
        base_url = parent.recv()
        try:
            options = AlmRunOptions(model="bench", provider="openai-compatible", api_model=API_MODEL,
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
