"""Alembic environment: runs on the connection handed over by storage.db.run_migrations."""

from alembic import context
from sqlalchemy import create_engine

from storage.models import all_tables

config = context.config
target_metadata = all_tables()


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:  # command-line use: alembic -x ... with sqlalchemy.url set
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.begin() as conn:
        _run(conn)
