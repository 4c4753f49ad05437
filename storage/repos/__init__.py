"""Repositories: SQL access that returns records, never rows."""
