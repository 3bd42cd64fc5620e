"""Markdown notes as plain data: the one note parser and folder walker (no store, no SQL)."""
