"""The knowledge graph: entities of chunks and questions, and the entity search over them."""
