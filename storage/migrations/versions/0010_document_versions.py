"""document versions: segments and chunks tagged with the version they belong to, a document's live one named on
its row, so a big version is written in short transactions and switched in one; index notes name their documents

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every row already stored belongs to its document's live version: all of them start as version ''.
    for table in ('document', 'segment', 'chunk'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column(
                'version', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False, server_default=''
            ))
    for table in ('segment', 'chunk'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(f'ix_{table}_document_id_version', ['document_id', 'version'], unique=False)
    with op.batch_alter_table('index_write', schema=None) as batch_op:
        batch_op.add_column(sa.Column('document_ids', sa.JSON(), nullable=False, server_default='[]'))


def downgrade() -> None:
    for table in ('segment', 'chunk'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(f'ix_{table}_document_id_version')
    with op.batch_alter_table('index_write', schema=None) as batch_op:
        batch_op.drop_column('document_ids')
    for table in ('chunk', 'segment', 'document'):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column('version')
