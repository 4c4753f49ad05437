"""Showing an answer in a chat: the editing stream, splitting past length limits, status messages."""
