"""Per-format extractors behind `rag.ingest.extract`: each turns one file type into an ExtractedDocument."""
