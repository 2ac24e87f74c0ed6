"""Run every benchmark in bench/ (files named bench_*.py) and print their figures.

Benchmarks print figures; they never fail the test suite. A benchmark that
needs ../shared and cannot find it says so and is skipped.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    # gpu_tagging.py runs on any device (it prints which); it is named for what it is for.
    scripts = sorted(HERE.glob("bench_*.py")) + [HERE / "gpu_tagging.py"]
    failures = 0
    for script in scripts:
        print(f"\n=== {script.stem}", flush=True)
        start = time.perf_counter()
        result = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        print(f"--- {script.stem}: exit {result.returncode}, {time.perf_counter() - start:.1f} s wall", flush=True)
        failures += result.returncode != 0
    print(f"\n{len(scripts)} benchmarks run, {failures} failed to run")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
