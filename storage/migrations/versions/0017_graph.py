"""graph: entities per knowledge base, the chunks that mention them, relations, and each base's switch

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('graph_switch',
    sa.Column('kb_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('kb_id')
    )
    op.create_table('graph_node',
    sa.Column('attributes', sa.JSON(), nullable=False),
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('kb_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('label', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('kb_id', 'name')
    )
    op.create_index(op.f('ix_graph_node_kb_id'), 'graph_node', ['kb_id'], unique=False)
    op.create_table('graph_edge',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('kb_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('source_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('target_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('relation', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('document_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_graph_edge_document_id'), 'graph_edge', ['document_id'], unique=False)
    op.create_index(op.f('ix_graph_edge_kb_id'), 'graph_edge', ['kb_id'], unique=False)
    op.create_index(op.f('ix_graph_edge_source_id'), 'graph_edge', ['source_id'], unique=False)
    op.create_index(op.f('ix_graph_edge_target_id'), 'graph_edge', ['target_id'], unique=False)
    op.create_table('graph_mention',
    sa.Column('node_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('chunk_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('kb_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('document_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.PrimaryKeyConstraint('node_id', 'chunk_id')
    )
    op.create_index(op.f('ix_graph_mention_chunk_id'), 'graph_mention', ['chunk_id'], unique=False)
    op.create_index(op.f('ix_graph_mention_document_id'), 'graph_mention', ['document_id'], unique=False)
    op.create_index(op.f('ix_graph_mention_kb_id'), 'graph_mention', ['kb_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_graph_mention_kb_id'), table_name='graph_mention')
    op.drop_index(op.f('ix_graph_mention_document_id'), table_name='graph_mention')
    op.drop_index(op.f('ix_graph_mention_chunk_id'), table_name='graph_mention')
    op.drop_table('graph_mention')
    op.drop_index(op.f('ix_graph_edge_target_id'), table_name='graph_edge')
    op.drop_index(op.f('ix_graph_edge_source_id'), table_name='graph_edge')
    op.drop_index(op.f('ix_graph_edge_kb_id'), table_name='graph_edge')
    op.drop_index(op.f('ix_graph_edge_document_id'), table_name='graph_edge')
    op.drop_table('graph_edge')
    op.drop_index(op.f('ix_graph_node_kb_id'), table_name='graph_node')
    op.drop_table('graph_node')
    op.drop_table('graph_switch')
