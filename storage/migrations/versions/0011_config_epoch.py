"""config epoch: one counter every change to what chats read (bindings, chat settings, knowledge bases, grants)
moves, so each process knows from one read when its cached view of them is stale

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table('config_epoch',
    sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('value', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.bulk_insert(table, [{'id': 1, 'value': 0}])


def downgrade() -> None:
    op.drop_table('config_epoch')
