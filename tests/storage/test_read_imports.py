"""The read commands start without what they do not use (checked by module, never timed; bench P11 times them).

`aglw clips show` and `judgments show` read the store and print: no numpy, pandas, scipy or torch.
Every read selects from the Core read model (storage/tables.py): none loads SQLModel or the ORM
(with pydantic ~0.2 s of each start, issue 32).
`metrics` and `leaderboard` compute with numpy (workbench/metrics) on the values read, never with
pandas (nor pyarrow, which pandas loads: ~0.3 s of start-up, issue 32), torch or scipy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from workbench.demo import create_demo_project

    return create_demo_project(tmp_path_factory.mktemp("demo") / "demo").db_path


def _imported_by(argv: list[str], tmp_path: Path) -> set[str]:
    code = (
        "import sys, json\n"
        "from cli.main import main\n"
        f"code = main({argv!r})\n"
        "heavy = ('numpy', 'pandas', 'scipy', 'torch', 'librosa', 'PySide6', 'pyarrow', 'sqlmodel', 'sqlalchemy.orm')\n"
        "print(json.dumps([code, sorted(m for m in heavy if m in sys.modules)]))\n"
    )
    env = {"AGLW_CONFIG_DIR": str(tmp_path / "config"), "AGLW_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120",
           "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    status, loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert status == 0, result.stdout
    return set(loaded)


def test_reads_import_only_what_they_use(demo_db: Path, tmp_path: Path) -> None:
    import sqlite3

    with sqlite3.connect(demo_db) as connection:
        model = connection.execute("SELECT model FROM alm_run ORDER BY id LIMIT 1").fetchone()[0]
        key = connection.execute("SELECT key FROM clip ORDER BY id LIMIT 1").fetchone()[0]
    db = ["--db", str(demo_db)]
    assert _imported_by([*db, "clips", "show", key], tmp_path) == set()
    assert _imported_by([*db, "judgments", "show"], tmp_path) == set()
    assert _imported_by([*db, "clips", "list"], tmp_path) == set()
    for argv in (["metrics", "--model", model], ["leaderboard"], ["--json", "leaderboard", "--profile", "iso"]):
        assert _imported_by([*db, *argv], tmp_path) == {"numpy"}, argv
