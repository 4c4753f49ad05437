"""Running ragbot itself as a user would, for the end-to-end tests and the benchmarks: dev-only, not shipped."""
