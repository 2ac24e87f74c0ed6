"""P4: EfficientAT mn10 tagging on CPU (clip level + 1 s timeline), in × real time.

Target (quality-bar.md P4): ≥ 100× real time on 2 cores. Random weights (speed does not
depend on them). Each stage is timed ``--repeats`` times (best and median shown):

* decode: the MP3 decoded and resampled to 32 kHz mono (``load_audio``, soxr HQ);
* mel: the log-mel front end over the whole clip;
* model: the windows through the network, clip probabilities and the 1 s timeline;
* tagging: mel + model from the decoded waveform (``AudioTagger.tag``) — the P4 figure;
* end to end: decode + tagging, one clip after another (no decode/model overlap);
* the CPU time of tagging, which other processes on the machine do not inflate.

The target is checked on the best tagging run, and the end-to-end figure says whether it
holds with decoding included. ``--device cuda`` runs the same code on a GPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHARED = Path(os.environ.get("AGLW_SHARED_DIR", Path(__file__).resolve().parents[1].parent / "shared"))
MEDIA = SHARED / "media" / "agl1k_case2_essaouira.mp3"
TARGET_X = 100.0


def _timed(fn: Callable[[], object], repeats: int, sync: Callable[[], None], cpu: list[float] | None = None) -> tuple[list[float], object]:
    """Wall-clock seconds of ``repeats`` calls (and the process CPU seconds of each into ``cpu``)."""
    times, value = [], None
    for _ in range(repeats):
        sync()
        start, start_cpu = time.perf_counter(), time.process_time()
        value = fn()
        sync()
        times.append(time.perf_counter() - start)
        if cpu is not None:
            cpu.append(time.process_time() - start_cpu)
    return times, value


def _line(label: str, times: list[float], duration: float) -> str:
    best, median = min(times), statistics.median(times)
    return (
        f"  {label:<34s} best {best:7.3f} s ({duration / best:5.0f}x real time), "
        f"median {median:7.3f} s ({duration / median:5.0f}x)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=MEDIA, help="audio file to tag (default: a 128 s AGL1K MP3)")
    parser.add_argument("--arch", default="mn10")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target is for 2 cores)")
    parser.add_argument("--batch-size", type=int, default=None, help="windows per forward pass (default: the tagger's)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.file.is_file():
        print(f"P4 skipped: {args.file} is absent")
        return 0
    from workbench.audio.loader import load_audio
    from workbench.tagging.inference import AudioTagger
    from workbench.tagging.model import build_model
    from workbench.tagging.preprocess import SAMPLE_RATE

    torch.set_num_threads(args.threads)
    cuda = torch.device(args.device).type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def decode():  # type: ignore[no-untyped-def]
        return load_audio(args.file, sample_rate=SAMPLE_RATE, mono=True).samples[:, 0]

    decode_times, waveform = _timed(decode, args.repeats, lambda: None)
    duration = waveform.size / SAMPLE_RATE

    torch.manual_seed(0)
    build_start = time.perf_counter()
    options = {} if args.batch_size is None else {"batch_size": args.batch_size}
    tagger = AudioTagger(build_model(args.arch), device=args.device, **options)
    build_s = time.perf_counter() - build_start
    tagger.tag(waveform[: 25 * SAMPLE_RATE])  # warm-up: allocator, kernels, worker threads

    mel_times, mel = _timed(lambda: tagger.log_mel(waveform), args.repeats, sync)
    model_times, result = _timed(lambda: tagger.tag_log_mel(mel, waveform.size, timeline=True), args.repeats, sync)
    tag_cpu: list[float] = []
    tag_times, _ = _timed(lambda: tagger.tag(waveform, timeline=True), args.repeats, sync, tag_cpu)
    e2e_times, _ = _timed(lambda: tagger.tag(decode(), timeline=True), args.repeats, sync)
    tagger.close()

    print(f"P4 EfficientAT {args.arch} on {args.device}: torch threads = {torch.get_num_threads()}, "
          f"tagger threads = {tagger.threads}, batch size = {tagger.batch_size}")
    print(f"  file: {args.file.name}, {duration:.1f} s, {result.n_windows} clip windows, "
          f"{result.timeline.shape[0]} timeline seconds; tagger built in {build_s:.2f} s")
    print(_line("decode + resample to 32 kHz mono:", decode_times, duration))
    print(_line("log-mel front end:", mel_times, duration))
    print(_line("model (windows + clip + timeline):", model_times, duration))
    print(_line("tagging (mel + model) [P4]:", tag_times, duration))
    print(_line("end to end (decode + tagging):", e2e_times, duration))
    # CPU seconds do not grow when other processes take turns on the cores (wall seconds do):
    # the work divided by the cores is what the tagging would take with the cores to itself
    cores = min(args.threads, os.cpu_count() or 1)
    print(f"  tagging CPU time: best {min(tag_cpu):.3f} core-s, median {statistics.median(tag_cpu):.3f} "
          f"(/{cores} cores: {duration * cores / min(tag_cpu):.0f}x real time if the cores were free)")
    tagging_x = duration / min(tag_times)
    e2e_x = duration / min(e2e_times)
    verdict = "MET" if tagging_x >= TARGET_X else "NOT MET"
    print(f"  target >= {TARGET_X:.0f}x real time (tagging, best run): {verdict} at {tagging_x:.0f}x; "
          f"with decoding included: {e2e_x:.0f}x ({'meets' if e2e_x >= TARGET_X else 'below'} {TARGET_X:.0f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
