"""web studies: the study page's studies, participants, assignments and guesses (issue [W])

Five new tables; nothing existing changes. ``web_guess.assignment_id`` is unique: one stored
answer per assigned item, so a double submit stores one guess.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-29 04:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

_S = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "web_study",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", _S(), nullable=False),
        sa.Column("mode", _S(), nullable=False),
        sa.Column("per_participant", sa.Integer(), nullable=False),
        sa.Column("target_per_clip", sa.Integer(), nullable=False),
        sa.Column("headphone_check", _S(), nullable=False),
        sa.Column("practice_clip_id", sa.Integer(), nullable=True),
        sa.Column("consent", sa.Text(), nullable=True),
        sa.Column("completion_code", _S(), nullable=True),
        sa.Column("completion_url", sa.Text(), nullable=True),
        sa.Column("rules", sa.JSON(), nullable=True),
        sa.Column("secret", _S(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("parameters", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["practice_clip_id"], ["clip.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("web_study", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_web_study_name"), ["name"], unique=True)
    op.create_table(
        "web_study_clip",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("role", _S(), nullable=False),
        sa.Column("stratum", _S(), nullable=True),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.ForeignKeyConstraint(["study_id"], ["web_study.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "clip_id"),
    )
    with op.batch_alter_table("web_study_clip", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_web_study_clip_clip_id"), ["clip_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_web_study_clip_study_id"), ["study_id"], unique=False)
    op.create_table(
        "web_participant",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("pseudonym", _S(), nullable=False),
        sa.Column("invite_nonce", _S(), nullable=True),
        sa.Column("panel_hash", _S(), nullable=True),
        sa.Column("invited_at", sa.DateTime(), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("consented_at", sa.DateTime(), nullable=True),
        sa.Column("headphone_correct", sa.Integer(), nullable=True),
        sa.Column("headphone_passed", sa.Boolean(), nullable=True),
        sa.Column("screened_out_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("order_seed", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["study_id"], ["web_study.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("study_id", "invite_nonce"),
        sa.UniqueConstraint("study_id", "panel_hash"),
        sa.UniqueConstraint("study_id", "pseudonym"),
    )
    with op.batch_alter_table("web_participant", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_web_participant_study_id"), ["study_id"], unique=False)
    op.create_table(
        "web_assignment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kind", _S(), nullable=False),
        sa.Column("item_id", _S(), nullable=False),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.ForeignKeyConstraint(["participant_id"], ["web_participant.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("item_id"),
        sa.UniqueConstraint("participant_id", "position"),
    )
    with op.batch_alter_table("web_assignment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_web_assignment_clip_id"), ["clip_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_web_assignment_participant_id"), ["participant_id"], unique=False)
    op.create_table(
        "web_guess",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("participant_id", sa.Integer(), nullable=False),
        sa.Column("clip_id", sa.Integer(), nullable=False),
        sa.Column("latitude", sa.Float(), nullable=True),
        sa.Column("longitude", sa.Float(), nullable=True),
        sa.Column("refused", sa.Boolean(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("clue", sa.Text(), nullable=True),
        sa.Column("listen_s", sa.Float(), nullable=True),
        sa.Column("answer_s", sa.Float(), nullable=True),
        sa.Column("n_plays", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["assignment_id"], ["web_assignment.id"]),
        sa.ForeignKeyConstraint(["clip_id"], ["clip.id"]),
        sa.ForeignKeyConstraint(["participant_id"], ["web_participant.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("assignment_id"),
    )
    with op.batch_alter_table("web_guess", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_web_guess_clip_id"), ["clip_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_web_guess_participant_id"), ["participant_id"], unique=False)


def downgrade() -> None:
    for table, indexes in (("web_guess", ("clip_id", "participant_id")),
                           ("web_assignment", ("clip_id", "participant_id")),
                           ("web_participant", ("study_id",)),
                           ("web_study_clip", ("clip_id", "study_id")),
                           ("web_study", ("name",))):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in indexes:
                batch_op.drop_index(batch_op.f(f"ix_{table}_{column}"))
        op.drop_table(table)
