"""v4: the vault manifest — what a vault index last saw of each file.

Every store gets the (empty) tables; only vault index databases fill them.
``IF NOT EXISTS`` because indexes built before this migration created them
themselves.
"""

VERSION = 4
NAME = "vault_manifest"

STATEMENTS = [
    """
    CREATE TABLE IF NOT EXISTS vault_files (
        id TEXT PRIMARY KEY,
        rel_path TEXT NOT NULL UNIQUE,
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        aliases TEXT NOT NULL DEFAULT '[]',
        targets TEXT NOT NULL DEFAULT '[]',
        links INTEGER NOT NULL DEFAULT 0,
        resolved INTEGER NOT NULL DEFAULT 0,
        attachments INTEGER NOT NULL DEFAULT 0,
        self_links INTEGER NOT NULL DEFAULT 0,
        dangling INTEGER NOT NULL DEFAULT 0,
        ambiguous INTEGER NOT NULL DEFAULT 0
    )
    """,
    "CREATE TABLE IF NOT EXISTS vault_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
]
