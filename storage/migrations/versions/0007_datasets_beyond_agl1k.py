"""datasets beyond AGL1K: licence, recordist, URL, recording time, extra metadata, derived fields (issue 31)

Adds the clip fields a mapped table or a folder of recordings can give (``licence``,
``recordist``, ``url``, ``recorded_at``), the source's unmapped columns (``extra``, JSON), the
names of the fields the importer derived rather than read (``derived``, JSON: a country or
continent from the coordinates), and the mapping a dataset was imported with
(``dataset.mapping``, JSON). Every column is nullable: clips imported before stay as they were.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27 04:00:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.add_column(sa.Column('mapping', sa.JSON(), nullable=True))
    with op.batch_alter_table('clip', schema=None) as batch_op:
        batch_op.add_column(sa.Column('licence', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('recordist', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('url', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('recorded_at', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('extra', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('derived', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('clip', schema=None) as batch_op:
        batch_op.drop_column('derived')
        batch_op.drop_column('extra')
        batch_op.drop_column('recorded_at')
        batch_op.drop_column('url')
        batch_op.drop_column('recordist')
        batch_op.drop_column('licence')
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.drop_column('mapping')
