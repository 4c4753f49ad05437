"""Splitting text into chunks whose offsets point into it."""
