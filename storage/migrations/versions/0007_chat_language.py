"""chat language: a chat's reply-language override (/lang), stored with its settings

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('chat_setting', schema=None) as batch_op:
        batch_op.add_column(sa.Column('language', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('chat_setting', schema=None) as batch_op:
        batch_op.drop_column('language')
