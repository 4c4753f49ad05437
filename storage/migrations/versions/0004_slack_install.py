"""slack install: one row per Slack app and workspace (or org) for multi-workspace OAuth, and OAuth states

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # An absent enterprise or team is '' rather than NULL, so the unique key holds on SQLite and PostgreSQL alike.
    op.create_table('slack_installation',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
    sa.Column('client_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('enterprise_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('team_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('bot_token', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
    sa.Column('bot_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('bot_user_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('bot_scopes', sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False),
    sa.Column('installer_user_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('is_enterprise_install', sa.Boolean(), nullable=False),
    sa.Column('installation', sa.JSON(), nullable=False),
    sa.Column('installed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('client_id', 'enterprise_id', 'team_id')
    )
    op.create_table('slack_oauth_state',
    sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('state')
    )


def downgrade() -> None:
    op.drop_table('slack_oauth_state')
    op.drop_table('slack_installation')
