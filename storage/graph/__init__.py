"""Entity graphs kept outside the relational store (Neo4j)."""
