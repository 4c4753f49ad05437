"""The model clients behind rag.ports: embedders, chat models, rerankers."""
