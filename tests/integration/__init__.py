"""Integration tests: real Weaviate, real PostgreSQL and SQLite, the real ONNX embedder."""
