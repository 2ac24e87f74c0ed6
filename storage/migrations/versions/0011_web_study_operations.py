"""web study operations: lifecycle, panel safety, the instrument's record (issues 44, 45, 46)

Columns only; nothing existing changes meaning. Every new column is nullable or has a server
default, so a study created before this revision keeps working: it is ``open``, its participants
are not pilots, and its guesses say nothing of how they were placed.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05 10:00:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

_S = sqlmodel.sql.sqltypes.AutoString


def _study() -> tuple[sa.Column, ...]:
    return (
        sa.Column("status", _S(), nullable=False, server_default="open"),
        sa.Column("panel_study_id", _S(), nullable=True),
        sa.Column("screen_out_code", _S(), nullable=True),
        sa.Column("screen_out_url", sa.Text(), nullable=True),
        sa.Column("options", sa.JSON(), nullable=True),
        sa.Column("questionnaire", sa.JSON(), nullable=True),
    )


def _participant() -> tuple[sa.Column, ...]:
    return (
        sa.Column("session_key", _S(), nullable=True),
        sa.Column("pilot", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.Column("last_seen_at", sa.DateTime(), nullable=True),
        sa.Column("released_at", sa.DateTime(), nullable=True),
        sa.Column("language", _S(), nullable=True),
        sa.Column("answers", sa.JSON(), nullable=True),
        sa.Column("device", sa.JSON(), nullable=True),
        sa.Column("huggins_correct", sa.Integer(), nullable=True),
        sa.Column("calibration", sa.JSON(), nullable=True),
    )


def _assignment() -> tuple[sa.Column, ...]:
    return (
        sa.Column("shown_at", sa.DateTime(), nullable=True),
        sa.Column("listening", sa.JSON(), nullable=True),
    )


def _guess() -> tuple[sa.Column, ...]:
    return (
        sa.Column("placed_by", _S(), nullable=True),
        sa.Column("place_name", sa.Text(), nullable=True),
        sa.Column("heard_s", sa.Float(), nullable=True),
        sa.Column("n_seeks", sa.Integer(), nullable=True),
        sa.Column("recognised", sa.JSON(), nullable=True),
    )


# functions, not constants: a Column belongs to one table once added, so each run builds its own
_TABLES = (("web_study", _study), ("web_participant", _participant), ("web_assignment", _assignment),
           ("web_guess", _guess))


def upgrade() -> None:
    for table, build in _TABLES:
        columns = build()
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in columns:
                batch_op.add_column(column)
    with op.batch_alter_table("web_participant", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_web_participant_session_key"), ["session_key"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("web_participant", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_web_participant_session_key"))
    for table, build in reversed(_TABLES):
        columns = build()
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in reversed(columns):
                batch_op.drop_column(column.name)
