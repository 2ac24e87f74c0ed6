"""Shared test fixtures: isolated config/cache dirs, project stores, ../shared, PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("AGLW_SHARED_DIR", REPO_ROOT.parent / "shared"))
PG_ADMIN_URL = os.environ.get("AGLW_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own config and cache directories and no API key from the developer."""
    base = tmp_path_factory.mktemp("userdirs")
    monkeypatch.setenv("AGLW_CONFIG_DIR", str(base / "config"))
    monkeypatch.setenv("AGLW_CACHE_DIR", str(base / "cache"))
    monkeypatch.delenv("AGLW_DB", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def _collector_walks_everything_again() -> Iterator[None]:
    """A review window built by a test freezes the objects alive then (ui/heap.py); after the
    test they go back to the cycle collector, so one test's windows do not outlive the suite."""
    yield
    import gc

    gc.unfreeze()


@pytest.fixture
def shared_dir() -> Path:
    """``../shared`` beside the checkout; integration tests skip when it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"integration test: {SHARED} (the shared reference material) is absent")
    return SHARED


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "project.sqlite"


@pytest.fixture
def store(sqlite_path: Path):  # type: ignore[no-untyped-def]
    from storage import open_store

    s = open_store(sqlite_path)
    yield s
    s.dispose()


def _pg_available() -> str | None:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL.replace("+psycopg", ""), connect_timeout=3):
            return None
    except Exception as exc:  # noqa: BLE001 - any failure means "no server here"
        return f"{type(exc).__name__}: {exc}".splitlines()[0]


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database on the local server, dropped afterwards."""
    reason = _pg_available()
    if reason is not None:
        pytest.skip(f"PostgreSQL at {PG_ADMIN_URL} is not reachable ({reason})")
    import psycopg

    name = f"aglw_test_{uuid.uuid4().hex[:12]}"
    admin = PG_ADMIN_URL.replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The same storage test on SQLite and on the local PostgreSQL server."""
    from storage import open_store

    if request.param == "sqlite":
        s = open_store(tmp_path / "project.sqlite")
    else:
        s = open_store(request.getfixturevalue("pg_url"))
    yield s
    s.dispose()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test` runs two workers) every test that uses the one Ray instance
    goes to the same worker: two local Ray clusters on a 2-core machine would fight over it."""
    for item in items:
        if "ray_instance" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("ray"))


@pytest.fixture(scope="session")
def ray_instance():  # type: ignore[no-untyped-def]
    """One local Ray instance (2 CPUs) for every Ray test of the session: it takes seconds to start."""
    ray = pytest.importorskip("ray", reason="Ray is the [scale] extra (pip install 'agl-workbench[scale]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
