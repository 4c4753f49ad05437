"""storage/weaviate."""
