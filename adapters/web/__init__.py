"""The web chat: a page served by ragbot itself, answers streamed to it over server-sent events."""
