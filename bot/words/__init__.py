"""The chat's texts: one catalogue per language (locales/), the language of a turn, the messages."""
