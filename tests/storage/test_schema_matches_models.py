"""The migrations build exactly the schema the table classes declare (storage/models/ is split
by area and loaded lazily; Alembic and the schema check must still see every table)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from storage import open_store
from storage.models import AREAS, all_tables

REPO = Path(__file__).resolve().parents[2]


def test_a_migrated_project_has_every_table_and_column_of_the_models(tmp_path: Path) -> None:
    store = open_store(tmp_path / "p.sqlite")
    try:
        metadata = all_tables()
        with store.engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        store.dispose()
    # Tables and columns: what a missing area module or a migration out of step would show.
    structural = [d for d in diffs if isinstance(d, tuple) and d[0] in ("add_table", "remove_table",
                                                                          "add_column", "remove_column")]
    assert structural == []
    assert len(metadata.tables) == 36


def test_one_table_class_loads_only_its_area_and_what_its_keys_name() -> None:
    code = (
        "import sys\n"
        "from storage.models import Prediction\n"
        "print(','.join(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('storage.models.'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "_base,alm_runs,clips"
    assert set(AREAS) == {p.stem for p in (REPO / "storage" / "models").glob("*.py") if not p.stem.startswith("_")}
