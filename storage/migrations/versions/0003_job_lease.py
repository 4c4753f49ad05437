"""job lease: the runner holding an ingestion job and until when, so another runner can take over a dead one's

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing rows get no owner and no expiry: any runner may take them, as an interrupted job should be.
    with op.batch_alter_table('ingestion_job', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lease_owner', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False, server_default=''))
        batch_op.add_column(sa.Column('lease_expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('ingestion_job', schema=None) as batch_op:
        batch_op.drop_column('lease_expires_at')
        batch_op.drop_column('lease_owner')
