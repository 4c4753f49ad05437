"""ragbot tests."""
