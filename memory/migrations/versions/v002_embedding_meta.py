"""v2: the embedding pin — which model a database's vectors belong to."""

VERSION = 2
NAME = "embedding_meta"

STATEMENTS = [
    # One row at most. vec_table names the live vec0 index, so a re-embed can
    # build a new index beside it and re-pin only when it completes.
    """
    CREATE TABLE embedding_meta (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        model TEXT NOT NULL,
        family TEXT NOT NULL,
        dimension INTEGER NOT NULL CHECK (dimension > 0),
        vec_table TEXT NOT NULL,
        pinned_at REAL NOT NULL
    )
    """,
]
