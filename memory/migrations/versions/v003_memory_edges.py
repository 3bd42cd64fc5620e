"""v3: the knowledge graph — typed, directed edges between node ids."""

VERSION = 3
NAME = "memory_edges"

STATEMENTS = [
    """
    CREATE TABLE memory_edges (
        src_id TEXT NOT NULL,
        dst_id TEXT NOT NULL,
        relation TEXT NOT NULL,
        source TEXT NOT NULL,
        confidence REAL NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
        created_at REAL NOT NULL,
        PRIMARY KEY (src_id, dst_id, relation)
    )
    """,
    "CREATE INDEX memory_edges_dst ON memory_edges (dst_id)",
    "CREATE INDEX memory_edges_source ON memory_edges (source)",
]
