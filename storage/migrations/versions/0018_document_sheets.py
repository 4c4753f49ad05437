"""document sheets: CSV and spreadsheet rows in the relational store, the source of every process's tables file

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('document_sheet',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('document_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('kb_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('rows', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('row_count', sa.Integer(), nullable=False),
    sa.Column('digest', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('version', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.ForeignKeyConstraint(['document_id'], ['document.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('document_id', 'position')
    )
    op.create_index(op.f('ix_document_sheet_document_id'), 'document_sheet', ['document_id'], unique=False)
    op.create_index(op.f('ix_document_sheet_kb_id'), 'document_sheet', ['kb_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_document_sheet_kb_id'), table_name='document_sheet')
    op.drop_index(op.f('ix_document_sheet_document_id'), table_name='document_sheet')
    op.drop_table('document_sheet')
