"""Opening a project store: SQLite by default, PostgreSQL by URL, same code.

``open_store`` resolves a path or URL, checks the schema version, backs up and
migrates an older SQLite project, refuses a newer one, and returns a
:class:`Store` whose sessions are one unit of work each.
"""

from __future__ import annotations

import contextvars
import os
import re
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DatabaseError, OperationalError

from storage import models
from storage.errors import SchemaTooNewError, StoreError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
    from sqlmodel import Session

MIGRATIONS_DIR = Path(__file__).with_name("migrations")

# Set while a write unit of work opens its transaction, so SQLite takes the
# write lock up front (BEGIN IMMEDIATE) instead of failing on a lock upgrade.
_immediate: contextvars.ContextVar[bool] = contextvars.ContextVar("_immediate", default=False)
# Set while a write that must not wait long (an edit made on the GUI thread) opens its
# transaction: how many milliseconds it may wait for another writer (None: the store's default).
_wait_ms: contextvars.ContextVar[int | None] = contextvars.ContextVar("_wait_ms", default=None)


def resolve_url(db: str | Path) -> str:
    """Turn a project path or SQLAlchemy URL into a URL.

    Parameters
    ----------
    db
        A file path (``project.sqlite``) or a URL (``postgresql+psycopg://…``,
        ``sqlite:///…``).
    """
    text = str(db)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


def _sqlite_path(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    if not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def sqlite_read_only_uri(path: Path, *, force: bool = False) -> str | None:
    """The ``file:`` URI that opens the existing SQLite file ``path`` read-only, when this process
    may not write the file or its folder (a read-only mount, a copy in someone else's folder), or
    when ``force``; None when it may be opened for writing (or does not exist yet).

    In a folder it may not write, SQLite cannot make a WAL file's index (``-shm``) beside it: with
    no ``-wal`` file there, the file alone holds every commit, and it is read as immutable.
    """
    if not path.exists():
        return None
    folder_writable = os.access(path.parent, os.W_OK)
    if not force and folder_writable and os.access(path, os.W_OK):
        return None
    uri = f"file:{quote(str(path))}?mode=ro"
    if not folder_writable and not path.with_name(path.name + "-wal").exists():
        uri += "&immutable=1"
    return uri


def _install_sqlite_pragmas(engine: Engine, busy_timeout_s: float, *, read_only: bool = False) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        # Autocommit at the driver level: SQLAlchemy's "begin" event below
        # decides how each transaction starts.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        # Wait this long for another writer before reporting "database is locked".
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        if read_only:  # a file opened read-only keeps its journal mode (and is never written)
            cursor.close()
            return
        mode = cursor.execute("PRAGMA journal_mode=WAL").fetchone()
        # FULL: an acknowledged (committed) edit survives even an OS crash.
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.close()
        if mode and str(mode[0]).lower() not in {"wal", "memory"}:
            raise StoreError(f"could not switch the project file to WAL mode (got {mode[0]!r})")

    default_ms = int(busy_timeout_s * 1000)

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:  # type: ignore[no-untyped-def]
        if _immediate.get():
            # Every write sets its own wait, so a short one never outlives its transaction; the
            # pragma is sent only when the wait differs from the connection's current one (a
            # campaign stores a group of answers per transaction, and each statement costs CPU).
            wait_ms = _wait_ms.get()
            wait_ms = default_ms if wait_ms is None else wait_ms
            info = conn.connection.info
            if info.get("busy_timeout_ms") != wait_ms:
                conn.exec_driver_sql(f"PRAGMA busy_timeout={wait_ms}")
                info["busy_timeout_ms"] = wait_ms
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


@dataclass
class Store:
    """A project database: an engine plus units of work.

    Use ``with store.session() as s:`` for reads and ``with store.write() as s:``
    for writes; ``write`` commits when the block ends without an exception and
    only then returns, so code after it may acknowledge the edit.
    """

    url: str
    engine: Engine
    # Opened read-only (a file or folder this process may not write): reads work, writes are refused.
    read_only: bool = False

    @property
    def is_sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    @property
    def sqlite_path(self) -> Path | None:
        return _sqlite_path(self.url)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A read session; closing it ends its transaction and leaves loaded objects usable
        (detached). Use :meth:`write` to change data."""
        from sqlmodel import Session

        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read on a Core connection, for selects on :mod:`storage.tables` (one transaction,
        rolled back at the end: nothing is written). It loads neither the ORM nor SQLModel, which
        the read commands do not pay at start-up (issue 32); rows are named tuples."""
        with self.engine.connect() as connection:
            yield connection

    @contextmanager
    def write(self, *, wait_s: float | None = None) -> Iterator[Session]:
        """A write unit of work: one transaction, committed on success, rolled back on error.

        ``wait_s`` bounds how long it waits for another writer's lock before failing (SQLite
        busy timeout; PostgreSQL ``lock_timeout``); default: the store's busy timeout. Edits
        made on the GUI thread pass a short wait, so a locked project fails fast with a
        retry instead of freezing the window.

        Raises
        ------
        StoreError
            The store was opened read-only (before any transaction starts).
        """
        if self.read_only:
            raise StoreError(
                f"{_describe(self.url)} is read-only (this user may not write the file or its folder), and "
                "this command changes the project: make both writable, or copy the project somewhere "
                "writable and pass --db. Nothing was changed."
            )
        token = _immediate.set(True)
        wait_token = _wait_ms.set(None if wait_s is None else max(int(wait_s * 1000), 1))
        try:
            from sqlmodel import Session

            with Session(self.engine, expire_on_commit=False) as session:
                session.connection()  # opens the transaction while the flags are set
                _immediate.reset(token)
                token = None
                if wait_s is not None and self.engine.dialect.name == "postgresql":
                    session.connection().exec_driver_sql(
                        f"SET LOCAL lock_timeout = {max(int(wait_s * 1000), 1)}"
                    )
                try:
                    yield session
                    session.commit()
                except BaseException:
                    session.rollback()
                    raise
        finally:
            _wait_ms.reset(wait_token)
            if token is not None:
                _immediate.reset(token)

    def dispose(self) -> None:
        self.engine.dispose()


# The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def check_sqlite_file(path: Path) -> None:
    """Refuse an existing ``path`` that is not an SQLite database: an empty file, a text file, a folder.

    Opening such a file would silently turn it into a new project (``--db notes.txt``); a path
    that does not exist yet is left to the caller (only the commands that create projects may).
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except IsADirectoryError as exc:
        raise StoreError(f"--db {path} is a folder, not an AGL Workbench project file; check --db") from exc
    except OSError as exc:
        raise StoreError(f"cannot read project file {path} ({exc.strerror or exc}); check --db") from exc
    if head == SQLITE_HEADER:
        return
    what = "an empty file" if not head else "not an SQLite database"
    raise StoreError(f"project file {path} is {what}, not an AGL Workbench project; check --db (a new project "
                     "is made by `aglw import dataset` or `aglw demo` at a path that does not exist yet)")


def _foreign_tables(path: Path) -> set[str]:
    """The tables of the SQLite file ``path`` that show it is another program's database (none when
    it holds an AGL Workbench schema revision, or no table at all), read on a read-only connection:
    a file refused for them is left byte for byte as it was (no journal mode, no side file).

    With no ``-wal`` or ``-journal`` beside it, the file alone holds every commit and is read as
    immutable: a WAL file gets no ``-shm`` or ``-wal`` made beside it either."""
    uri = f"file:{quote(str(path))}?mode=ro"
    if not any(path.with_name(path.name + side).exists() for side in ("-wal", "-journal")):
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return set()  # the open below reports it, in its own words
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return set()
    finally:
        conn.close()
    if not tables or "alembic_version" in tables:
        return set()
    return tables - set(models.all_tables().tables)


def create_store_engine(url: str, *, busy_timeout_s: float = 15.0, read_only: bool = False) -> Engine:
    """Create an engine with the project's connection settings.

    A SQLite file is opened read-only when ``read_only`` or when this process may not write it or
    its folder (:func:`sqlite_read_only_uri`); see :attr:`Store.read_only`.
    """
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        path = _sqlite_path(url)
        uri = sqlite_read_only_uri(path, force=read_only) if path is not None else None
        connect_args: dict[str, object] = {"check_same_thread": False, "timeout": busy_timeout_s}
        if uri is not None:
            connect_args["uri"] = True
            engine = create_engine(url, creator=lambda: sqlite3.connect(uri, **connect_args))  # type: ignore[arg-type]
        else:
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args=connect_args)
        _install_sqlite_pragmas(engine, busy_timeout_s, read_only=uri is not None)
        return engine
    try:
        return create_engine(url, pool_pre_ping=True)
    except ImportError as exc:  # the driver is an extra: only teams on PostgreSQL install it
        if backend == "postgresql":
            raise StoreError(
                f"a PostgreSQL (team) project needs the 'postgres' extra ({exc}): "
                "pip install 'agl-workbench[postgres]'"
            ) from exc
        raise


def open_store(db: str | Path, *, migrate: bool = True, busy_timeout_s: float = 15.0,
               read_only: bool = False) -> Store:
    """Open (and create or migrate) a project store.

    Parameters
    ----------
    db
        Path of a SQLite project file, or a SQLAlchemy URL.
    migrate
        Bring an empty or older database to the current schema. An older SQLite
        file is copied to ``<name>.bak-<revision>-<timestamp>`` first.
    busy_timeout_s
        How long a SQLite write waits for another writer before failing.
    read_only
        Open a SQLite file read-only. A file that this process may not write, or whose folder it
        may not write (a read-only mount), is always opened so: the reads work and
        :meth:`Store.write` refuses with one line. Such a file is never migrated.

    Raises
    ------
    SchemaTooNewError
        The database was written by a newer AGL Workbench.
    StoreError
        The database cannot be opened or is not an AGL Workbench project (such a file is refused
        before anything is written to it).
    """
    url = resolve_url(db)
    path = _sqlite_path(url)
    if path is not None:
        check_sqlite_file(path)
        # Another program's database is refused before the connection settings (WAL) touch it.
        foreign = _foreign_tables(path) if path.exists() else set()
        if foreign:
            raise StoreError(
                f"{_describe(url)} holds tables ({', '.join(sorted(foreign)[:5])}…) "
                "but is not an AGL Workbench project; choose another file. Nothing was changed."
            )
        read_only = read_only or sqlite_read_only_uri(path) is not None
    else:
        read_only = False
    engine = create_store_engine(url, busy_timeout_s=busy_timeout_s, read_only=read_only)
    store = Store(url=url, engine=engine, read_only=read_only)
    try:
        if _is_at_head(store):
            return store  # the common case, without loading Alembic (~100 ms of start-up)
        state = schema_state(store)
        if state.current is not None and state.current not in state.known:
            raise SchemaTooNewError(
                f"{_describe(url)} was written by a newer AGL Workbench (schema revision "
                f"{state.current!r}, this version knows up to {state.head!r}); "
                "upgrade AGL Workbench to open it. Nothing was changed."
            )
        if state.current is None and state.foreign_tables:
            raise StoreError(
                f"{_describe(url)} holds tables ({', '.join(sorted(state.foreign_tables)[:5])}…) "
                "but is not an AGL Workbench project; choose another file."
            )
        if state.current != state.head and migrate:
            if read_only:
                raise StoreError(
                    f"{_describe(url)} is read-only and needs its schema brought up to date "
                    f"(revision {state.current or 'none'} -> {state.head}) before this version can "
                    "read it: make the file and its folder writable, or copy the project and pass --db"
                )
            if state.current is not None:
                backup_database(store, state.current)
            run_migrations(store)
    except OperationalError as exc:
        engine.dispose()
        # the driver's message spans lines (psycopg adds "Is the server running ...?"): one line
        reason = " ".join(line.strip() for line in str(exc.orig).splitlines() if line.strip())
        raise StoreError(f"cannot open {_describe(url)}: {reason}") from exc
    except DatabaseError as exc:
        engine.dispose()
        raise StoreError(
            f"cannot open {_describe(url)}: {exc.orig}; it is not an AGL Workbench project (check --db)"
        ) from exc
    except BaseException:
        engine.dispose()
        raise
    return store


def display_url(url: str) -> str:
    """``url`` as a person may see it: a PostgreSQL password is never shown; text that is not a
    URL is returned as it is."""
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def _describe(url: str) -> str:
    path = _sqlite_path(url)
    if path is not None:
        return f"project file {path}"
    return f"database {display_url(url)}"


@dataclass(frozen=True)
class SchemaState:
    current: str | None
    head: str
    known: frozenset[str]
    foreign_tables: frozenset[str]


def _alembic_config(store: Store):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", store.url.replace("%", "%%"))
    return cfg


_REVISION = re.compile(r"^(down_revision|revision)\s*=\s*['\"]?([^'\"\s]+|None)['\"]?\s*$", re.M)


def static_head_revision() -> str | None:
    """The head revision read from the migration files' ``revision`` / ``down_revision`` lines
    (the one no other revision descends from); None when that reading is not unambiguous, so
    the caller asks Alembic instead. A test checks it equals Alembic's head."""
    revisions: dict[str, str | None] = {}
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        found = dict((k, v) for k, v in _REVISION.findall(path.read_text(encoding="utf-8")))
        if "revision" in found:
            revisions[found["revision"]] = None if found.get("down_revision", "None") == "None" else found["down_revision"]
    heads = set(revisions) - {down for down in revisions.values() if down is not None}
    return heads.pop() if len(heads) == 1 else None


def _is_at_head(store: Store) -> bool:
    """True when the database's revision is this version's head (read with one query)."""
    head = static_head_revision()
    if head is None:
        return False
    with store.engine.connect() as conn:
        if "alembic_version" not in inspect(conn).get_table_names():
            return False
        rows = conn.exec_driver_sql("SELECT version_num FROM alembic_version").fetchall()
    return [r[0] for r in rows] == [head]


def schema_state(store: Store) -> SchemaState:
    """Read the database's schema revision and what this version knows."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_alembic_config(store))
    known = frozenset(rev.revision for rev in script.walk_revisions())
    head = script.get_current_head()
    assert head is not None, "migrations directory has no head revision"
    with store.engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
        tables = set(inspect(conn).get_table_names())
    own = set(models.all_tables().tables) | {"alembic_version"}
    return SchemaState(current, head, known, frozenset(tables - own) if current is None else frozenset())


def run_migrations(store: Store, revision: str = "head") -> None:
    """Upgrade the database to ``revision`` with Alembic."""
    from alembic import command

    cfg = _alembic_config(store)
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def backup_database(store: Store, revision: str) -> Path | None:
    """Copy a SQLite project before migrating it; returns the backup path.

    PostgreSQL stores are backed up by their operators (``pg_dump``); the
    migration itself runs in one transaction there, so a failure leaves the old
    schema intact.
    """
    path = store.sqlite_path
    if path is None or not path.exists():
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.bak-{revision}-{stamp}")
    src = sqlite3.connect(path)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)  # consistent copy, WAL contents included
        finally:
            dst.close()
    finally:
        src.close()
    if not target.exists():  # pragma: no cover - sqlite3 raises first
        shutil.copy2(path, target)
    return target
