"""Backups of the relational store (the system of record): dumps, manifests, checks and restores."""
