"""quality overrules per flag and annotator; the class list an event was imported with (issue 27)

``quality_overrule``: one annotator's vote on one quality flag of one clip (overruled True/False,
a note), versioned like every label. ``spatial_event.class_list``: the class list (index =
position) a file was imported with, so that an export and a re-import keep the names. Both are
new and nullable: projects from before keep every row as it was (``clip_label.quality_overruled``
still overrules every flag of its clip).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 04:20:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "quality_overrule",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("flag", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("overruled", sa.Boolean(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"]),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("annotator_id", "clip_id", "flag"),
    )
    with op.batch_alter_table("quality_overrule", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_quality_overrule_annotator_id"), ["annotator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_quality_overrule_clip_id"), ["clip_id"], unique=False)
    with op.batch_alter_table("spatial_event", schema=None) as batch_op:
        batch_op.add_column(sa.Column("class_list", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("spatial_event", schema=None) as batch_op:
        batch_op.drop_column("class_list")
    with op.batch_alter_table("quality_overrule", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_quality_overrule_clip_id"))
        batch_op.drop_index(batch_op.f("ix_quality_overrule_annotator_id"))
    op.drop_table("quality_overrule")
