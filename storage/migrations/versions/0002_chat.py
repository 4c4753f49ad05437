"""chat: message authors, event ids and feedback, conversation resets, per-chat settings

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('message', schema=None) as batch_op:
        batch_op.add_column(sa.Column('author', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('event_key', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=True))
        batch_op.add_column(sa.Column('feedback', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False, server_default=''))
        batch_op.create_index(batch_op.f('ix_message_event_key'), ['event_key'], unique=True)
    with op.batch_alter_table('conversation', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reset_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    op.create_table('chat_setting',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('platform', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('workspace', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('chat', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('answer_mode', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('fallback_text', sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('platform', 'workspace', 'chat')
    )


def downgrade() -> None:
    op.drop_table('chat_setting')
    with op.batch_alter_table('conversation', schema=None) as batch_op:
        batch_op.drop_column('reset_at')
    with op.batch_alter_table('message', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_message_event_key'))
        batch_op.drop_column('feedback')
        batch_op.drop_column('event_key')
        batch_op.drop_column('author')
