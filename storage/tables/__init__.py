"""Documents' rows as tables in an embedded DuckDB file, and the read-only queries the model may run on them."""
