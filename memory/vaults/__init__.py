"""Markdown vaults: registration, incremental indexing into SQLite, watching, searching."""
