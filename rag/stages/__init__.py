"""The answer pipelines' stages, one module per stage; each a thin wrapper over pure functions in rag."""
