"""posted messages: the bot's messages by platform id, so a reply to one continues its conversation; questions by
author, so a command naming no conversation acts on the person's latest

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('posted_message',
    sa.Column('platform', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('workspace', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('chat', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('message_id', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('conversation_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.ForeignKeyConstraint(['conversation_id'], ['conversation.id'], ),
    sa.PrimaryKeyConstraint('platform', 'workspace', 'chat', 'message_id')
    )
    op.create_index(op.f('ix_posted_message_conversation_id'), 'posted_message', ['conversation_id'], unique=False)
    op.create_index('ix_message_author_created_at', 'message', ['author', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_message_author_created_at', table_name='message')
    op.drop_index(op.f('ix_posted_message_conversation_id'), table_name='posted_message')
    op.drop_table('posted_message')
