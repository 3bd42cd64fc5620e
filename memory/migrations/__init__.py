"""Forward-only schema migrations keyed on ``PRAGMA user_version``."""
