"""End-to-end tests: real client libraries against the local fakes."""
