"""v7: versioned facts and the entities they are about.

A superseded memory keeps its row: ``valid_to`` ends it and ``superseded_by``
(v1) names its successor, which carries ``valid_from`` and ``supersedes``.
Entities and their aliases live beside the memories; a memory is linked to the
entity it is about through ``memory_edges`` (relation ``about``).
"""

VERSION = 7
NAME = "fact_versions"

STATEMENTS = [
    "ALTER TABLE memories ADD COLUMN valid_from REAL",
    "ALTER TABLE memories ADD COLUMN valid_to REAL",
    "ALTER TABLE memories ADD COLUMN supersedes TEXT",
    "CREATE INDEX memories_supersedes ON memories (supersedes)",
    """
    CREATE TABLE entities (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at REAL NOT NULL
    )
    """,
    """
    CREATE TABLE entity_aliases (
        agent_id TEXT NOT NULL,
        alias TEXT NOT NULL,
        entity_id TEXT NOT NULL REFERENCES entities (id),
        PRIMARY KEY (agent_id, alias)
    )
    """,
    "CREATE INDEX entity_aliases_entity ON entity_aliases (entity_id)",
]
