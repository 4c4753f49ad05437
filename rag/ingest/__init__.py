"""Ingestion: extract, clean, split, parent-child, embed and index documents and FAQs."""
