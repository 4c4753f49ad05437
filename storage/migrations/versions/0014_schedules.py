"""schedules: URL re-syncs and retention fired by every process's clock, each tick claimed once; feedback tallies

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('schedule',
    sa.Column('requested_from', sa.JSON(), nullable=False),
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('kb_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=2048), nullable=False),
    sa.Column('every_seconds', sa.Integer(), nullable=False),
    sa.Column('created_by', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('etag', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
    sa.Column('last_modified', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('conditional_runs', sa.Integer(), nullable=False),
    sa.Column('last_run_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
    sa.Column('last_outcome', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('kind', 'kb_id', 'source')
    )
    op.create_index(op.f('ix_schedule_kb_id'), 'schedule', ['kb_id'], unique=False)
    op.create_table('schedule_tick',
    sa.Column('schedule_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('tick', sa.BigInteger(), autoincrement=False, nullable=False),
    sa.Column('claimed_by', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('schedule_id', 'tick')
    )
    op.create_index(op.f('ix_schedule_tick_created_at'), 'schedule_tick', ['created_at'], unique=False)
    op.create_table('feedback_tally',
    sa.Column('day', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('questions', sa.Integer(), nullable=False),
    sa.Column('helpful', sa.Integer(), nullable=False),
    sa.Column('unhelpful', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('day')
    )


def downgrade() -> None:
    op.drop_table('feedback_tally')
    op.drop_index(op.f('ix_schedule_tick_created_at'), table_name='schedule_tick')
    op.drop_table('schedule_tick')
    op.drop_index(op.f('ix_schedule_kb_id'), table_name='schedule')
    op.drop_table('schedule')
