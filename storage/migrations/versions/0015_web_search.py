"""web search: a chat's admin switches web search on or off for that chat (chat_setting.web_search)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('chat_setting') as batch:
        batch.add_column(sa.Column('web_search', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('chat_setting') as batch:
        batch.drop_column('web_search')
