"""prediction distance error stored at import (issue 15, filled by the import work)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25 11:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
