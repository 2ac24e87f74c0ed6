"""spatial sound events (issue 17)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 11:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
