"""v1: memories, their FTS5 index kept by triggers, and the append-only ledger."""

VERSION = 1
NAME = "core"

STATEMENTS = [
    """
    CREATE TABLE memories (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        scope TEXT NOT NULL DEFAULT 'private',
        pool_name TEXT,
        importance REAL NOT NULL DEFAULT 0.5,
        pinned INTEGER NOT NULL DEFAULT 0,
        confidence REAL NOT NULL DEFAULT 1.0,
        confidence_source TEXT NOT NULL DEFAULT 'user_confirmed',
        conflict_with TEXT,
        superseded_by TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        source_session_id TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        last_accessed_at REAL,
        access_count INTEGER NOT NULL DEFAULT 0,
        archived INTEGER NOT NULL DEFAULT 0,
        visibility TEXT NOT NULL DEFAULT 'visible'
    )
    """,
    "CREATE INDEX memories_order ON memories (archived, pinned DESC, importance DESC, created_at DESC)",
    "CREATE INDEX memories_agent ON memories (agent_id)",
    """
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        content, tags,
        content='memories', content_rowid='seq',
        tokenize='porter unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content, tags) VALUES (new.seq, new.content, new.tags);
    END
    """,
    """
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, tags)
        VALUES ('delete', old.seq, old.content, old.tags);
    END
    """,
    # Fires only when searchable text changes: access tracking, archiving and
    # visibility flips never touch the index (upstream's every-read reindex).
    """
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, tags ON memories
    WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content, tags)
        VALUES ('delete', old.seq, old.content, old.tags);
        INSERT INTO memories_fts (rowid, content, tags) VALUES (new.seq, new.content, new.tags);
    END
    """,
    """
    CREATE TABLE memory_ledger (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id TEXT NOT NULL,
        op TEXT NOT NULL,
        actor TEXT NOT NULL,
        at REAL NOT NULL,
        before TEXT,
        after TEXT
    )
    """,
    "CREATE INDEX memory_ledger_memory ON memory_ledger (memory_id, seq)",
    """
    CREATE TRIGGER memory_ledger_no_update BEFORE UPDATE ON memory_ledger BEGIN
        SELECT RAISE(ABORT, 'memory_ledger is append-only');
    END
    """,
    """
    CREATE TRIGGER memory_ledger_no_delete BEFORE DELETE ON memory_ledger BEGIN
        SELECT RAISE(ABORT, 'memory_ledger is append-only');
    END
    """,
]
