"""studies: error modes, study plans, human localizations (issue 18)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 11:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "error_mode_label",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("alm_run_id", sa.Integer(), nullable=False),
        sa.Column("modes", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["alm_run_id"], ["alm_run.id"]),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"]),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("annotator_id", "clip_id", "alm_run_id"),
    )
    with op.batch_alter_table("error_mode_label", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_error_mode_label_alm_run_id"), ["alm_run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_error_mode_label_annotator_id"), ["annotator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_error_mode_label_clip_id"), ["clip_id"], unique=False)

    op.create_table(
        "judge_error_mode",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("judge_name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("provider", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("model_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("prompt_version", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("alm_run_id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("modes", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("raw_reply", sa.Text(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["alm_run_id"], ["alm_run.id"]),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("judge_error_mode", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_judge_error_mode_judge_name"), ["judge_name"], unique=False)
        batch_op.create_index(batch_op.f("ix_judge_error_mode_fingerprint"), ["fingerprint"], unique=False)
        batch_op.create_index("ix_judge_error_mode_clip_alm", ["clip_id", "alm_run_id"], unique=False)

    op.create_table(
        "study_plan",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("overlap", sa.Integer(), nullable=False),
        sa.Column("blind", sa.Boolean(), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("study_plan", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_study_plan_name"), ["name"], unique=True)

    op.create_table(
        "study_assignment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"]),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.ForeignKeyConstraint(["plan_id"], ["study_plan.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("plan_id", "annotator_id", "clip_id"),
    )
    with op.batch_alter_table("study_assignment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_study_assignment_annotator_id"), ["annotator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_study_assignment_clip_id"), ["clip_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_study_assignment_plan_id"), ["plan_id"], unique=False)

    op.create_table(
        "human_guess",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("annotator_id", sa.Integer(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("latitude", sa.Float(), nullable=True),
        sa.Column("longitude", sa.Float(), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("city", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("country", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("continent", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["annotator_id"], ["annotator.id"]),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("annotator_id", "clip_id"),
    )
    with op.batch_alter_table("human_guess", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_human_guess_annotator_id"), ["annotator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_human_guess_clip_id"), ["clip_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("human_guess", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_human_guess_clip_id"))
        batch_op.drop_index(batch_op.f("ix_human_guess_annotator_id"))
    op.drop_table("human_guess")
    with op.batch_alter_table("study_assignment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_study_assignment_plan_id"))
        batch_op.drop_index(batch_op.f("ix_study_assignment_clip_id"))
        batch_op.drop_index(batch_op.f("ix_study_assignment_annotator_id"))
    op.drop_table("study_assignment")
    with op.batch_alter_table("study_plan", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_study_plan_name"))
    op.drop_table("study_plan")
    with op.batch_alter_table("judge_error_mode", schema=None) as batch_op:
        batch_op.drop_index("ix_judge_error_mode_clip_alm")
        batch_op.drop_index(batch_op.f("ix_judge_error_mode_fingerprint"))
        batch_op.drop_index(batch_op.f("ix_judge_error_mode_judge_name"))
    op.drop_table("judge_error_mode")
    with op.batch_alter_table("error_mode_label", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_error_mode_label_clip_id"))
        batch_op.drop_index(batch_op.f("ix_error_mode_label_annotator_id"))
        batch_op.drop_index(batch_op.f("ix_error_mode_label_alm_run_id"))
    op.drop_table("error_mode_label")
