"""Chat commands: the registry and the built-in commands."""
