"""Unit tests: pure functions and hand-built fakes, no servers."""
