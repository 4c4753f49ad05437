"""command event: the platform events that carried a command, kept a while so a redelivery runs it once

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('command_event',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('command_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_command_event_created_at'), ['created_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('command_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_command_event_created_at'))
    op.drop_table('command_event')
