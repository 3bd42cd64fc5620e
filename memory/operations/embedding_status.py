"""Per-database embedding status for ``arcana embeddings status``. Loads no model."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass
from pathlib import Path

from memory.adapters.opener import open_store, with_vectors
from memory.agents import AgentRegistry
from memory.embedding.gateway import EmbeddingGateway
from memory.errors import ArcanaMemoryError
from memory.home import Home
from memory.store_kinds import kind_of


@dataclass
class DatabaseStatus:
    """One store's pin and how much of it is embedded; ``note`` says why a figure is missing."""

    database: str
    agent: str | None = None
    model: str | None = None
    family: str | None = None
    dimension: int | None = None
    vec_table: str | None = None
    rows: int | None = None
    embedded: int | None = None
    missing: int | None = None
    note: str = ""
    damage: str | None = None  # the pinned vector index cannot be read whole (memory/sqlite/vec0.py)
    building: dict | None = None  # {"model", "vectors"}: a re-embed stopped part way, resumed by the next one

    def as_dict(self) -> dict:
        return asdict(self)


async def database_status(home: Home, *, skip: Collection[Path] = (), repair: bool = True) -> list[DatabaseStatus]:
    """One row per store under the home but ``skip``; a broken store is reported, not fatal
    (and, with ``repair=False`` for diagnosis, left where it is)."""
    try:
        names = {home.agent_db(card.id): card.name for card in AgentRegistry(home).scan().cards}
    except ArcanaMemoryError:
        names = {}
    rows = []
    for path in home.databases():
        if path in skip:
            continue
        row = DatabaseStatus(database=str(path.relative_to(home.root)), agent=names.get(path))
        store = open_store(home, kind_of(home, path), actor="cli", path=path, repair=repair)
        vectors = with_vectors(store, EmbeddingGateway([]))
        try:
            status = await vectors.status()
        except ArcanaMemoryError as exc:
            row.note = str(exc)
        else:
            meta = status.meta
            row.rows, row.embedded, row.missing = status.rows, status.embedded, status.missing
            row.damage = status.damage
            if meta is not None:
                row.model, row.family, row.dimension, row.vec_table = meta.model, meta.family, meta.dimension, meta.vec_table
            if not status.vec_available:
                row.note = "sqlite-vec unavailable"
            elif meta is None:
                row.note = "not pinned yet (no vectors)"
            if status.building is not None:
                model, done = status.building
                row.building = {"model": model, "vectors": done}
                row.note = "; ".join(filter(None, [row.note, f"re-embed to {model} stopped at {done} of {status.rows} rows"]))
        finally:
            await vectors.aclose()
        rows.append(row)
    return rows
