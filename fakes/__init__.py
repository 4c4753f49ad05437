"""Local fakes of the external APIs, speaking their wire protocols: dev-only, for the tests and the benchmarks."""
