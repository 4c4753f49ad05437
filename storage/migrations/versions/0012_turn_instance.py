"""turn instance: the ragbot process writing an answer is stored on its placeholder, so another process can find
the answers of a process that died (status `streaming`, writer gone) and finish them

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('message') as batch:
        batch.add_column(sa.Column('instance', sa.String(length=64), nullable=False, server_default=''))
        batch.create_index('ix_message_status', ['status'])


def downgrade() -> None:
    with op.batch_alter_table('message') as batch:
        batch.drop_index('ix_message_status')
        batch.drop_column('instance')
