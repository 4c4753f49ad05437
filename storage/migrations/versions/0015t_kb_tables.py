"""kb tables: a knowledge base's switch for answering questions over its spreadsheets with SQL (off)

Revision ID: 0015t
Revises: 0014
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0015t'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('knowledge_base', schema=None) as batch_op:
        batch_op.add_column(sa.Column('tables', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('knowledge_base', schema=None) as batch_op:
        batch_op.drop_column('tables')
