"""v6: memory chunks — the spans of a long memory that are embedded beside its own vector.

A chunk is an offset range into ``memories.content`` (the row stays the only
copy of the words), cut from the content whose hash is ``source_hash``. Its
vector lives in ``memory_chunkvec_<N>`` (rowid = ``memory_chunks.id``), the
companion of the pinned ``memory_vec_<N>``; the ledger's delete removes both.
"""

VERSION = 6
NAME = "memory_chunks"

STATEMENTS = [
    """
    CREATE TABLE memory_chunks (
        id INTEGER PRIMARY KEY,
        seq INTEGER NOT NULL,
        chunk INTEGER NOT NULL,
        char_start INTEGER NOT NULL,
        char_end INTEGER NOT NULL,
        source_hash TEXT NOT NULL,
        UNIQUE (seq, chunk)
    )
    """,
]
