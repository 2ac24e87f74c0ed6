"""The Core read model (storage/tables.py) is the SQLModel schema, column for column (issue 32).

The read commands select from Core tables so that they start without SQLModel, pydantic and the
ORM. Those tables are generated from the models; these tests fail when a model changed and the
file was not written again, and when a value reads back differently through the two.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

REPO = Path(__file__).resolve().parents[2]


def test_the_core_tables_are_generated_from_the_models() -> None:
    from storage.models import all_tables
    from storage.tables_source import render

    written = (REPO / "storage" / "tables.py").read_text(encoding="utf-8")
    assert written == render(all_tables()), (
        "storage/tables.py differs from the models: run `python -m storage.tables_source > storage/tables.py`"
    )


def test_every_column_has_the_models_name_type_nullability_and_keys() -> None:
    """Checked on the objects, not the text: a renderer that dropped a column would pass the test above."""
    from storage import tables
    from storage.models import all_tables

    models = all_tables().tables
    assert set(tables.all_tables().tables) == set(models)
    for name, model in models.items():
        core = tables.metadata.tables[name]
        assert [c.name for c in core.columns] == [c.name for c in model.columns], name
        for column in model.columns:
            read = core.c[column.name]
            where = f"{name}.{column.name}"
            assert _python_type(read.type) is _python_type(column.type), where
            assert (read.primary_key, read.nullable) == (column.primary_key, column.nullable), where
            assert {fk.target_fullname for fk in read.foreign_keys} == {fk.target_fullname for fk in column.foreign_keys}, where
    assert getattr(tables, "clip") is tables.metadata.tables["clip"]
    with pytest.raises(AttributeError, match="no table 'clips'"):
        getattr(tables, "clips")


def test_a_table_is_built_once_when_threads_ask_for_it_together() -> None:
    """The GUI's workers read on threads: their first uses of a table must not build it twice
    (SQLAlchemy refuses a second table of one name in one metadata)."""
    import subprocess
    import sys

    code = (
        "import sys, threading\n"
        "sys.setswitchinterval(1e-6)  # threads switch inside a table's build\n"
        "from storage import tables\n"
        "barrier = threading.Barrier(8)\n"
        "seen, failed = [], []\n"
        "def read():\n"
        "    barrier.wait()\n"
        "    try:\n"
        "        seen.append(dict(tables.all_tables().tables))\n"
        "    except Exception as exc:\n"
        "        failed.append(repr(exc))\n"
        "threads = [threading.Thread(target=read) for _ in range(8)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "assert not failed, failed[0]\n"
        "assert all(s == seen[0] for s in seen) and len(seen[0]) == 36\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def _python_type(sql_type):  # type: ignore[no-untyped-def]
    """What a column gives back: a type decorator's is its implementation's (AutoString reads str)."""
    return getattr(sql_type, "impl_instance", sql_type).python_type


def test_a_renderer_refuses_a_column_type_it_does_not_know() -> None:
    from sqlalchemy import Column, LargeBinary, MetaData, Table

    from storage.tables_source import render

    metadata = MetaData()
    Table("blob", metadata, Column("id", LargeBinary, primary_key=True))
    with pytest.raises(SystemExit, match=r"blob\.id has type LargeBinary"):
        render(metadata)


def test_timestamps_json_and_flags_read_the_same_through_core_and_the_orm(any_store) -> None:  # type: ignore[no-untyped-def]
    """SQLite keeps a timestamp naive; both read models give it back aware, in UTC, equal."""
    from storage import tables as T
    from storage.models import Dataset, JudgeRun

    stamp = datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=timezone(timedelta(hours=2)))
    with any_store.write() as s:
        dataset = Dataset(name="d", mapping={"a": [1, 2], "b": None}, imported_at=stamp)
        s.add(dataset)
        s.flush()
        run = JudgeRun(judge_name="haiku", provider="anthropic", model_id="m", prompt_version="v", options={"t": 0.5},
                       created_at=stamp, is_demo=True)
        s.add(run)
        s.flush()
        dataset_id, run_id = dataset.id, run.id
    with any_store.session() as s:
        orm = s.get(Dataset, dataset_id)
        orm_run = s.get(JudgeRun, run_id)
    with any_store.read() as connection:
        core = connection.execute(select(T.dataset).where(T.dataset.c.id == dataset_id)).one()
        core_run = connection.execute(select(T.judge_run).where(T.judge_run.c.id == run_id)).one()
    assert core.imported_at == orm.imported_at == stamp
    assert core.imported_at.tzinfo == timezone.utc and orm.imported_at.tzinfo is not None
    assert core.imported_at.utcoffset() == timedelta(0)
    assert core.mapping == orm.mapping == {"a": [1, 2], "b": None}
    for name in T.judge_run.c.keys():
        assert getattr(core_run, name) == getattr(orm_run, name), name


def test_a_naive_timestamp_is_refused_in_a_core_comparison(store) -> None:  # type: ignore[no-untyped-def]
    from storage import tables as T

    with store.read() as connection, pytest.raises(Exception, match="time zone"):
        connection.execute(select(T.dataset).where(T.dataset.c.imported_at > datetime(2026, 1, 1))).all()


def test_a_read_writes_nothing(store) -> None:  # type: ignore[no-untyped-def]
    """`Store.read` ends its transaction without a commit: a statement run in it is not kept."""
    from storage import tables as T

    with store.read() as connection:
        connection.execute(T.dataset.insert().values(name="never", format="agl1k",
                                                     imported_at=datetime.now(timezone.utc)))
    with store.read() as connection:
        assert connection.execute(select(T.dataset.c.name)).scalars().all() == []
