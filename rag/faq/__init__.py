"""Curated FAQs at answer time: matching questions, and an FAQ as a candidate passage."""
