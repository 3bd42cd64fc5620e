"""The PostgreSQL + pgvector engine for shared pools and the global tier (sibling of memory/sqlite)."""
