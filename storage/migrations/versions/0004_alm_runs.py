"""ALM runs and answers (issue 16)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 11:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('alm_job',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('alm_run_id', sa.Integer(), nullable=False),
    sa.Column('provider', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('api_model', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('base_url', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('prompt_version', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('options', sa.JSON(), nullable=True),
    sa.Column('seed', sa.Integer(), nullable=True),
    sa.Column('samples', sa.Integer(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('requested', sa.Integer(), nullable=False),
    sa.Column('answered', sa.Integer(), nullable=False),
    sa.Column('skipped_cached', sa.Integer(), nullable=False),
    sa.Column('failed', sa.Integer(), nullable=False),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('cost_usd', sa.Float(), nullable=True),
    sa.Column('started_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('finished_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['alm_run_id'], ['alm_run.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('alm_job', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alm_job_alm_run_id'), ['alm_run_id'], unique=False)

    op.create_table('alm_answer',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('alm_job_id', sa.Integer(), nullable=False),
    sa.Column('alm_run_id', sa.Integer(), nullable=False),
    sa.Column('clip_id', sa.Integer(), nullable=True),
    sa.Column('clip_key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('fingerprint', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('sample', sa.Integer(), nullable=False),
    sa.Column('cache_key', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('raw_output', sa.Text(), nullable=True),
    sa.Column('parsed', sa.JSON(), nullable=True),
    sa.Column('input_tokens', sa.Integer(), nullable=True),
    sa.Column('output_tokens', sa.Integer(), nullable=True),
    sa.Column('latency_s', sa.Float(), nullable=True),
    sa.Column('cost_usd', sa.Float(), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('audio', sa.JSON(), nullable=True),
    sa.Column('prediction_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['alm_job_id'], ['alm_job.id'], ),
    sa.ForeignKeyConstraint(['alm_run_id'], ['alm_run.id'], ),
    sa.ForeignKeyConstraint(['clip_id'], ['clip.id'], ),
    sa.ForeignKeyConstraint(['prediction_id'], ['prediction.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('alm_answer', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alm_answer_alm_job_id'), ['alm_job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_alm_answer_alm_run_id'), ['alm_run_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_alm_answer_cache_key'), ['cache_key'], unique=True)
        batch_op.create_index(batch_op.f('ix_alm_answer_clip_id'), ['clip_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_alm_answer_fingerprint'), ['fingerprint'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('alm_answer', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alm_answer_fingerprint'))
        batch_op.drop_index(batch_op.f('ix_alm_answer_clip_id'))
        batch_op.drop_index(batch_op.f('ix_alm_answer_cache_key'))
        batch_op.drop_index(batch_op.f('ix_alm_answer_alm_run_id'))
        batch_op.drop_index(batch_op.f('ix_alm_answer_alm_job_id'))
    op.drop_table('alm_answer')
    with op.batch_alter_table('alm_job', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alm_job_alm_run_id'))
    op.drop_table('alm_job')
