"""Opening, migrating and refusing project stores (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import select

from storage import SchemaTooNewError, StoreError, open_store
from storage.db import run_migrations, schema_state
from storage.models import Annotator, Clip, Dataset


def test_new_store_is_at_head_with_wal_and_foreign_keys(store) -> None:
    state = schema_state(store)
    assert state.current == state.head
    with store.session() as s:
        assert s.exec(text("PRAGMA journal_mode")).scalar() == "wal"
        assert s.exec(text("PRAGMA foreign_keys")).scalar() == 1


def test_roundtrip_on_both_backends(any_store) -> None:
    with any_store.write() as s:
        ds = Dataset(name="agl1k")
        s.add(ds)
        s.flush()
        s.add(Clip(dataset_id=ds.id, key="aporee_1_2", latitude=53.75, longitude=-2.7, description="<b>x</b>"))
    with any_store.session() as s:
        clip = s.exec(select(Clip)).one()
    assert (clip.key, clip.latitude, clip.description) == ("aporee_1_2", 53.75, "<b>x</b>")


def test_write_rolls_back_on_error(any_store) -> None:
    with pytest.raises(RuntimeError):
        with any_store.write() as s:
            s.add(Annotator(name="ana", pseudonym="A1"))
            s.flush()
            raise RuntimeError("boom")
    with any_store.session() as s:
        assert s.exec(select(Annotator)).all() == []


def test_foreign_keys_are_enforced(any_store) -> None:
    from sqlalchemy.exc import IntegrityError

    with pytest.raises(IntegrityError):
        with any_store.write() as s:
            s.add(Clip(dataset_id=999, key="orphan"))


def test_newer_schema_is_refused_unchanged(sqlite_path: Path) -> None:
    open_store(sqlite_path).dispose()
    with sqlite3.connect(sqlite_path) as conn:
        conn.execute("UPDATE alembic_version SET version_num='9999_future'")
    before = sqlite_path.read_bytes()
    with pytest.raises(SchemaTooNewError, match="newer AGL Workbench"):
        open_store(sqlite_path)
    assert sqlite_path.read_bytes() == before
    assert not list(sqlite_path.parent.glob("*.bak-*"))


def test_older_schema_is_backed_up_then_migrated(sqlite_path: Path) -> None:
    from storage.db import Store, create_store_engine, resolve_url

    url = resolve_url(sqlite_path)
    old = Store(url=url, engine=create_store_engine(url))
    run_migrations(old, "0001")
    with old.write() as s:
        s.add(Annotator(name="ana", pseudonym="A1"))
    old.dispose()

    store = open_store(sqlite_path)
    assert schema_state(store).current == schema_state(store).head
    with store.session() as s:
        assert [a.name for a in s.exec(select(Annotator))] == ["ana"]
    store.dispose()
    backups = list(sqlite_path.parent.glob("project.sqlite.bak-0001-*"))
    assert len(backups) == 1
    with sqlite3.connect(backups[0]) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == ("0001",)
        assert conn.execute("SELECT name FROM annotator").fetchall() == [("ana",)]


def test_foreign_database_is_refused(sqlite_path: Path) -> None:
    with sqlite3.connect(sqlite_path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreError, match="not an AGL Workbench project"):
        open_store(sqlite_path)


def test_a_short_write_wait_applies_to_that_write_only(sqlite_path: Path) -> None:
    """An edit made where a person waits gives up quickly on a locked project; others keep the default."""
    from sqlalchemy import event
    from sqlalchemy.exc import OperationalError

    store = open_store(sqlite_path, busy_timeout_s=3.0)
    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    blocker = sqlite3.connect(sqlite_path, timeout=0.1)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(OperationalError, match="locked"):
            with store.write(wait_s=0.05) as s:
                s.add(Annotator(name="ana", pseudonym="A1"))
    finally:
        blocker.rollback()
        blocker.close()
    assert statements[-2:] == ["PRAGMA busy_timeout=50", "BEGIN IMMEDIATE"]
    statements.clear()
    with store.write() as s:
        s.add(Annotator(name="ana", pseudonym="A1"))
    assert statements[:2] == ["PRAGMA busy_timeout=3000", "BEGIN IMMEDIATE"]
    with store.session() as s:
        assert [a.name for a in s.exec(select(Annotator)).all()] == ["ana"]
    store.dispose()


@pytest.mark.postgres
def test_a_short_write_wait_gives_up_on_a_row_lock_in_postgres(pg_url: str) -> None:
    from sqlalchemy.exc import OperationalError

    store = open_store(pg_url)
    with store.write() as s:
        s.add(Annotator(name="ana", pseudonym="A1"))
    holder = store.engine.connect()
    transaction = holder.begin()
    holder.execute(text("SELECT * FROM annotator WHERE name = 'ana' FOR UPDATE"))
    try:
        with pytest.raises(OperationalError, match="lock timeout"):
            with store.write(wait_s=0.1) as s:
                s.exec(select(Annotator).where(Annotator.name == "ana")).one().role = "lead"
    finally:
        transaction.rollback()
        holder.close()
    with store.write() as s:
        s.exec(select(Annotator).where(Annotator.name == "ana")).one().role = "lead"
    with store.session() as s:
        assert s.exec(select(Annotator)).one().role == "lead"
    store.dispose()


def test_the_fast_schema_check_agrees_with_alembic(store) -> None:  # type: ignore[no-untyped-def]
    """open_store skips Alembic when the revision is the head read from the migration files;
    that reading must be Alembic's own head."""
    from storage.db import schema_state, static_head_revision

    state = schema_state(store)
    assert static_head_revision() == state.head == state.current
