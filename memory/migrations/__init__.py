"""Forward-only schema migrations keyed on ``PRAGMA user_version``."""

from memory.migrations.runner import MIGRATIONS, head_version, migrate

__all__ = ["MIGRATIONS", "head_version", "migrate"]
