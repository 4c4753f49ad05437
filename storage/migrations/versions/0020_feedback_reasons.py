"""feedback reasons: why an answer got a 👎 (a reason and a note), who pressed it, and reason counts kept by retention

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('message', schema=None) as batch_op:
        batch_op.add_column(sa.Column('feedback_reason', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('feedback_note', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('feedback_by', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False, server_default=''))
    with op.batch_alter_table('feedback_tally', schema=None) as batch_op:
        batch_op.add_column(sa.Column('reasons', sa.JSON(), nullable=False, server_default='{}'))


def downgrade() -> None:
    with op.batch_alter_table('feedback_tally', schema=None) as batch_op:
        batch_op.drop_column('reasons')
    with op.batch_alter_table('message', schema=None) as batch_op:
        batch_op.drop_column('feedback_by')
        batch_op.drop_column('feedback_note')
        batch_op.drop_column('feedback_reason')
