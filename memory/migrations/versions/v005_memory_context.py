"""v5: the context a memory was said in, indexed beside its content.

``memories.context`` (for a turn, the previous turn of its session) and
``memories.dated`` (its date in words) are derived at write time
(memory/sqlite/context.py) and searched as FTS5 columns beside the content; the
stored ``content`` is untouched. Rows written before this version keep them
empty. The FTS table is rebuilt from ``memories``
because FTS5 cannot add a column.
"""

VERSION = 5
NAME = "memory_context"

STATEMENTS = [
    "ALTER TABLE memories ADD COLUMN context TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE memories ADD COLUMN dated TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX memories_session ON memories (source_session_id, created_at)",
    "DROP TRIGGER memories_fts_insert",
    "DROP TRIGGER memories_fts_delete",
    "DROP TRIGGER memories_fts_update",
    "DROP TABLE memories_fts",
    """
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content, tags, context, dated,
        content='memories', content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2'
    )
    """,
    "INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')",
    """
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content, tags, context, dated)
        VALUES (new.seq, new.content, new.tags, new.context, new.dated);
    END
    """,
    """
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, tags, context, dated)
        VALUES ('delete', old.seq, old.content, old.tags, old.context, old.dated);
    END
    """,
    """
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags, context, dated ON memories
    WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags OR old.context IS NOT new.context
        OR old.dated IS NOT new.dated BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, tags, context, dated)
        VALUES ('delete', old.seq, old.content, old.tags, old.context, old.dated);
        INSERT INTO memories_fts (rowid, content, tags, context, dated)
        VALUES (new.seq, new.content, new.tags, new.context, new.dated);
    END
    """,
]
