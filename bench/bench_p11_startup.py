"""P11: start-up. `aglw --help` and `aglw clips list` on the demo project, as process wall time.

Targets (issue [I]): `aglw --help` ≤ 0.25 s and `aglw clips list` on the demo project ≤ 0.5 s,
median of 10 fresh processes. Also prints the five slowest imports of `aglw --help`
(``python -X importtime``, cumulative), the first place to look when the figure grows.

The reads (issue 32): `aglw metrics --model M`, `leaderboard`, `clips show KEY` and `judgments show`
on the demo project, each against a bare ``python -c "import typer, rich"`` measured in the same
run (wall and CPU time, medians), target ≤ 8 × the bare import; and which of the heavy packages
(pandas, numpy, SQLAlchemy, SQLModel, torch) each read imports.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RUNS = 10


def wall(argv: list[str], env: dict[str, str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env, cwd=REPO)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu(argv: list[str], env: dict[str, str]) -> float:
    """Median CPU time (user + system) of a fresh process: steadier than wall time on a busy machine."""
    times = []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, check=True, capture_output=True, env=env, cwd=REPO)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times)


def main() -> int:
    from workbench.demo import create_demo_project

    aglw = [sys.executable, "-m", "cli.main"]
    with tempfile.TemporaryDirectory() as folder:
        # Started as an installed program starts: with its modules' byte code cached. A shell that
        # sets PYTHONDONTWRITEBYTECODE makes every start compile each of our modules again (the
        # reads took up to 1.6 x as long so), which no installed copy pays.
        env = {**os.environ, "AGLW_CONFIG_DIR": folder, "AGLW_CACHE_DIR": folder}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-m", "compileall", "-q", "cli", "workbench", "storage"], cwd=REPO,
                       capture_output=True, env=env)
        demo = create_demo_project(Path(folder) / "demo")
        help_s = wall([*aglw, "--help"], env)
        list_argv = [*aglw, "--db", str(demo.db_path), "clips", "list"]
        list_s = wall(list_argv, env)
        help_cpu, list_cpu = cpu([*aglw, "--help"], env), cpu(list_argv, env)
        trace = subprocess.run([sys.executable, "-X", "importtime", "-m", "cli.main", "--help"],
                               capture_output=True, text=True, env=env, cwd=REPO).stderr
        reads = _reads(aglw, demo.db_path, env)
    rows = []
    for line in trace.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].strip()))
    print(f"P11 aglw --help: median {1000 * help_s:.0f} ms (target <= 250 ms)")
    print(f"P11 aglw clips list (demo): median {1000 * list_s:.0f} ms (target <= 500 ms)")
    print(f"    CPU time per process (user + system, median): --help {1000 * help_cpu:.0f} ms, "
          f"clips list {1000 * list_cpu:.0f} ms; load average {os.getloadavg()[0]:.1f}")
    print("    slowest imports of --help (cumulative): "
          + ", ".join(f"{name} {us / 1000:.0f} ms" for us, name in sorted(rows, reverse=True)[:5]))
    for line in reads:
        print(line)
    return 0


HEAVY = ("pandas", "numpy", "sqlalchemy", "sqlmodel", "torch")


def _reads(aglw: list[str], db_path: Path, env: dict[str, str]) -> list[str]:
    """The read commands against a bare `import typer, rich`, wall and CPU, with the heavy packages each imports."""
    import sqlite3

    with sqlite3.connect(db_path) as connection:
        model = connection.execute("SELECT model FROM alm_run ORDER BY id LIMIT 1").fetchone()[0]
        key = connection.execute("SELECT key FROM clip ORDER BY id LIMIT 1").fetchone()[0]
    bare = [sys.executable, "-c", "import typer, rich"]
    commands = {
        "metrics --model M": ["metrics", "--model", model],
        "leaderboard": ["leaderboard"],
        "clips show KEY": ["clips", "show", key],
        "judgments show": ["judgments", "show"],
    }
    bare_wall, bare_cpu = wall(bare, env), cpu(bare, env)
    lines = [f"P11 reads (demo project), against a bare `import typer, rich`: wall {1000 * bare_wall:.0f} ms, "
             f"CPU {1000 * bare_cpu:.0f} ms (target: each read <= 8 x)"]
    for label, argv in commands.items():
        full = [*aglw, "--db", str(db_path), *argv]
        w, c = wall(full, env), cpu(full, env)
        trace = subprocess.run([sys.executable, "-X", "importtime", *full[1:]], capture_output=True, text=True,
                               env=env, cwd=REPO).stderr
        imported = sorted({part.strip().split(".")[0] for part in (line.split("|")[-1] for line in trace.splitlines()
                                                                    if line.startswith("import time:"))} & set(HEAVY))
        lines.append(f"    {label:<18s} wall {1000 * w:5.0f} ms = {w / bare_wall:4.1f} x, CPU {1000 * c:5.0f} ms = "
                     f"{c / bare_cpu:4.1f} x; imports {', '.join(imported) or 'none of ' + '/'.join(HEAVY)}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
