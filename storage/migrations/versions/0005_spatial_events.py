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
    op.create_table(
        "spatial_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uid", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("onset_s", sa.Float(), nullable=False),
        sa.Column("offset_s", sa.Float(), nullable=False),
        sa.Column("class_name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("vocabulary", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("source_index", sa.Integer(), nullable=False),
        sa.Column("direction_kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("track", sa.JSON(), nullable=True),
        sa.Column("distance_cm", sa.Float(), nullable=True),
        sa.Column("front_back", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"]),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("spatial_event", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_spatial_event_uid"), ["uid"], unique=True)
        batch_op.create_index(batch_op.f("ix_spatial_event_annotator_id"), ["annotator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_spatial_event_clip_id"), ["clip_id"], unique=False)
        batch_op.create_index("ix_spatial_event_clip_annotator", ["clip_id", "annotator_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("spatial_event", schema=None) as batch_op:
        batch_op.drop_index("ix_spatial_event_clip_annotator")
        batch_op.drop_index(batch_op.f("ix_spatial_event_clip_id"))
        batch_op.drop_index(batch_op.f("ix_spatial_event_annotator_id"))
        batch_op.drop_index(batch_op.f("ix_spatial_event_uid"))
    op.drop_table("spatial_event")
