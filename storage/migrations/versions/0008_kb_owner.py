"""kb owner: knowledge bases owned by a tenant (names unique per owner), and the operator's read grants

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every knowledge base that exists was made by the operator: owner '' keeps each readable where it was.
    with op.batch_alter_table('knowledge_base', schema=None) as batch_op:
        batch_op.add_column(sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False, server_default=''))
        batch_op.drop_index('ix_knowledge_base_name')
        batch_op.create_index('ix_knowledge_base_name', ['name'], unique=False)
        batch_op.create_index('ix_knowledge_base_owner', ['owner'], unique=False)
        batch_op.create_unique_constraint('uq_knowledge_base_owner_name', ['owner', 'name'])
    op.create_table('knowledge_base_grant',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('kb_id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('tenant', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['kb_id'], ['knowledge_base.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('kb_id', 'tenant')
    )
    with op.batch_alter_table('knowledge_base_grant', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_knowledge_base_grant_kb_id'), ['kb_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_knowledge_base_grant_tenant'), ['tenant'], unique=False)


def downgrade() -> None:
    op.drop_table('knowledge_base_grant')
    with op.batch_alter_table('knowledge_base', schema=None) as batch_op:
        batch_op.drop_constraint('uq_knowledge_base_owner_name', type_='unique')
        batch_op.drop_index('ix_knowledge_base_owner')
        batch_op.drop_index('ix_knowledge_base_name')
        batch_op.create_index('ix_knowledge_base_name', ['name'], unique=True)
        batch_op.drop_column('owner')
