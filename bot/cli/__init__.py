"""The `ragbot` command line: one module per command, the grammar apart."""
