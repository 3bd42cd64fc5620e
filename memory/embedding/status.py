"""Per-database embedding status for ``arcana embeddings status``. Loads no model."""

from __future__ import annotations

from memory.agents import AgentRegistry
from memory.embedding.gateway import EmbeddingGateway
from memory.errors import ArcanaMemoryError
from memory.home import Home
from memory.stores import open_database, with_vectors


async def database_status(home: Home) -> list[dict]:
    """One row per store under the home; a broken store is reported, not fatal."""
    try:
        names = {home.agent_db(card.id): card.name for card in AgentRegistry(home).list()}
    except ArcanaMemoryError:
        names = {}
    rows = []
    for path in home.databases():
        row = dict.fromkeys(("model", "family", "dimension", "vec_table", "rows", "embedded", "missing"))
        row.update(database=str(path.relative_to(home.root)), agent=names.get(path), note="")
        vectors = with_vectors(open_database(home, path, actor="cli"), EmbeddingGateway([]))
        try:
            status = await vectors.status()
        except ArcanaMemoryError as exc:
            row["note"] = str(exc)
        else:
            meta = status.meta
            row.update(rows=status.rows, embedded=status.embedded, missing=status.missing)
            if meta is not None:
                row.update(model=meta.model, family=meta.family, dimension=meta.dimension, vec_table=meta.vec_table)
            if not status.vec_available:
                row["note"] = "sqlite-vec unavailable"
            elif meta is None:
                row["note"] = "not pinned yet (no vectors)"
        finally:
            await vectors.aclose()
        rows.append(row)
    return rows
