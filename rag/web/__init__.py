"""Web search beside the knowledge base: providers, the blacklist, and results ranked as passages of a conversation."""
