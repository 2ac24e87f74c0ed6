"""GPU tagging: conformance against the shared EfficientAT fixture, and throughput per clip and batched.

Runs on whatever device it is given (``--device``, default ``cuda`` when there is one, else
``cpu``) and prints it first. Figures:

* **conformance**: max |Δlogit| and max |Δp| of the tagger against the reference outputs in
  ``../shared/fixtures/efficientat-mn04`` (the official code's logits for a 10 s input), at
  ``--precision full`` (the promise: logits within 1e-4) and ``fast``; on CPU also ``fast`` as
  it computes on a GPU (the network under bf16 autocast, emulated by CPU autocast; TF32's error
  is below bf16's). Then ``fast`` against ``full`` on the two real AGL1K recordings (clip
  probabilities and timelines). Skipped with a message when the fixture is absent.
* **throughput** in audio seconds per wall second (× real time) on ``--clips`` decoded clips
  (the two AGL1K recordings of 128 s and 141 s, repeated), with the timeline: one clip at a time
  (``AudioTagger.tag``, the CPU default) and batched (the windows of many clips per pass,
  ``workbench.tagging.batched.tag_many``, the GPU default), each at ``full`` and, on a GPU,
  ``fast``; with ``--pipeline``, also the whole batched path from the files (decoding processes
  included). The batched results are checked against the per-clip ones (max |Δp|).

The model for throughput is ``--arch`` (default mn10) with random weights: speed does not depend
on them. Nothing here is asserted; the issue's targets are printed beside the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("AGLW_SHARED_DIR", REPO.parent / "shared"))
FIXTURE = SHARED / "fixtures" / "efficientat-mn04"
MEDIA = [SHARED / "media" / "agl1k_case2_essaouira.mp3", SHARED / "media" / "agl1k_case4_berlin_blackbird.mp3"]


def _device_line(device: torch.device) -> str:
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return f"{device} — {props.name}, {props.total_memory / 2**30:.0f} GiB, torch {torch.__version__}"
    return (f"cpu — {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"{torch.get_num_threads()} torch threads, torch {torch.__version__}")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _media() -> list[Path]:
    found = [p for p in MEDIA if p.is_file()]
    if not found:
        found = sorted((SHARED / "media").glob("*.mp3"))
    return found


def conformance(device: torch.device) -> None:
    from workbench.tagging.inference import AudioTagger
    from workbench.tagging.model import build_model

    if not (FIXTURE / "mn04_random_state_dict.pt").is_file():
        print(f"conformance: skipped — the fixture {FIXTURE} is absent (the shared reference material)")
        return
    model = build_model("mn04")
    model.load_state_dict(torch.load(FIXTURE / "mn04_random_state_dict.pt", map_location="cpu", weights_only=True),
                          strict=True)
    model.eval()
    wave = np.load(FIXTURE / "input_waveform_32k.npy").astype(np.float32).reshape(-1)
    ref_logits = np.load(FIXTURE / "mn04_logits.npy").reshape(-1)
    ref_p = 1.0 / (1.0 + np.exp(-ref_logits))
    print("conformance (mn04 fixture, 10 s, reference = the official code's logits):")
    runs = [("full", None), ("fast", None)]
    if device.type == "cpu":
        runs.append(("fast as on a GPU (bf16 autocast, emulated on CPU)", torch.bfloat16))
    for label, emulate in runs:
        precision = label.split()[0]
        tagger = AudioTagger(model, device=device, precision=precision, threads=1, optimise=False)
        with torch.autocast("cpu", dtype=emulate) if emulate is not None else _null():
            logits = tagger.logits(tagger.log_mel(wave).unsqueeze(0)).cpu().numpy().reshape(-1)
        p = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
        print(f"  {label:<52s} max |Δlogit| {np.abs(logits - ref_logits).max():.2e}, "
              f"max |Δp| {np.abs(p - ref_p).max():.2e}")
    media = _media()
    if not media:
        return
    full = AudioTagger(model, device=device, precision="full")
    fast = AudioTagger(model, device=device, precision="fast", threads=1, optimise=False)
    from workbench.tagging.decode import decode_for_tagging

    worst_clip = worst_line = 0.0
    for path in media:
        samples = decode_for_tagging(path)
        a = full.tag(samples)
        emulate = device.type == "cpu"
        with torch.autocast("cpu", dtype=torch.bfloat16) if emulate else _null():
            b = fast.tag(samples)
        worst_clip = max(worst_clip, float(np.abs(a.probabilities - b.probabilities).max()))
        worst_line = max(worst_line, float(np.abs(a.timeline - b.timeline).max()))
    how = "bf16 autocast emulated on CPU" if device.type == "cpu" else f"on {device}"
    print(f"  fast vs full on {len(media)} real recordings ({how}): max |Δp| clip {worst_clip:.2e}, "
          f"timeline {worst_line:.2e}")
    full.close()


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def throughput(device: torch.device, arch: str, n_clips: int, batch_size: int | None, pipeline: bool,
               workers: int) -> None:
    from workbench.tagging.batched import tag_many
    from workbench.tagging.decode import decode_for_tagging
    from workbench.tagging.inference import DEFAULT_BATCH_SIZE, DEFAULT_GPU_BATCH_SIZE, AudioTagger
    from workbench.tagging.model import build_model

    media = _media()
    if not media:
        print(f"throughput: skipped — no recordings in {SHARED / 'media'}")
        return
    torch.manual_seed(0)
    model = build_model(arch).eval()
    decoded = [decode_for_tagging(p) for p in media]
    clips = [(f"clip{i}", decoded[i % len(decoded)]) for i in range(n_clips)]
    paths = [(f"clip{i}", str(media[i % len(media)])) for i in range(n_clips)]
    audio_s = sum(w.size for _, w in clips) / 32_000
    size = batch_size or (DEFAULT_GPU_BATCH_SIZE if device.type == "cuda" else DEFAULT_BATCH_SIZE)
    print(f"throughput ({arch}, random weights, {n_clips} clips, {audio_s:.0f} s of audio, timeline on, "
          f"batch {size} windows):")
    precisions = ["full", "fast"] if device.type == "cuda" else ["full"]
    for precision in precisions:
        tagger = AudioTagger(model, device=device, batch_size=size, precision=precision)
        tagger.tag(clips[0][1])  # warm-up: kernels chosen, the CPU graph built
        list(tag_many(tagger, clips[:2]))
        _sync(device)
        start = time.perf_counter()
        per_clip = [tagger.tag(w) for _, w in clips]
        _sync(device)
        per_clip_s = time.perf_counter() - start
        start = time.perf_counter()
        batched = [r for _, r in tag_many(tagger, clips)]
        _sync(device)
        batched_s = time.perf_counter() - start
        delta = max(float(np.abs(a.probabilities - b.probabilities).max()) for a, b in zip(per_clip, batched))
        print(f"  {precision:<5s} per clip: {per_clip_s:7.2f} s = {audio_s / per_clip_s:8.0f} × real time")
        print(f"  {precision:<5s} batched : {batched_s:7.2f} s = {audio_s / batched_s:8.0f} × real time "
              f"({per_clip_s / batched_s:.2f} × per clip; max |Δp| against per clip {delta:.1e})")
        if pipeline:
            from workbench.tagging.pipeline import batched_outcomes

            start = time.perf_counter()
            outcomes = list(batched_outcomes(paths, tagger, workers=workers))
            _sync(device)
            wall = time.perf_counter() - start
            failed = sum(1 for _, r, _ in outcomes if r is None)
            print(f"  {precision:<5s} pipeline from the MP3s ({workers} decoding processes): {wall:7.2f} s = "
                  f"{audio_s / wall:8.0f} × real time, {failed} failed")
        tagger.close()
    if device.type == "cuda":
        print("  targets (issue 32, ratios in one run on one GPU): batched full ≥ the official inference.py fp32 "
              "whole-clip rate (≈ 10,000 × on an H100/H200); fast ≥ 2 × that")
    else:
        print("  target (issue 32): the CPU path ≥ 2.5 × the official code on the same CPU")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--arch", default="mn10")
    parser.add_argument("--clips", type=int, default=None, help="clips for throughput (default 24 on a GPU, 4 on CPU)")
    parser.add_argument("--batch-size", type=int, default=None, help="windows per pass (default: the tagger's)")
    parser.add_argument("--pipeline", action="store_true", help="also time the batched path from the files")
    parser.add_argument("--workers", type=int, default=2, help="decoding processes for --pipeline")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    print(f"device: {_device_line(device)}")
    conformance(device)
    if not args.skip_throughput:
        n_clips = args.clips or (24 if device.type == "cuda" else 4)
        throughput(device, args.arch, n_clips, args.batch_size, args.pipeline, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
