"""EdgeStore: async reads and writes of ``memory_edges`` in a SQLiteAdapter's own database.

Endpoints are plain node ids, so an edge may point at a folder note's uuid5 id
that is not a stored row. The (src_id, dst_id, relation) key makes writes
idempotent; each producer owns a ``source`` tag and rewrites only its own set.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.adapters.sqlite import SQLiteAdapter
from memory.sqlite.batches import select_in
from memory.sqlite.connection import transaction

REFERENCES = "references"


@dataclass(frozen=True)
class MemoryEdge:
    src_id: str
    dst_id: str
    relation: str = REFERENCES
    source: str = "manual"
    confidence: float = 1.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.src_id, self.dst_id, self.relation)


_INSERT = (
    "INSERT INTO memory_edges (src_id, dst_id, relation, source, confidence, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(src_id, dst_id, relation) DO UPDATE SET "
    "source = excluded.source, confidence = excluded.confidence"
)


def _rows(edges: Iterable[MemoryEdge], now: float) -> list[tuple]:
    unique = {e.key: e for e in edges}
    return [(e.src_id, e.dst_id, e.relation, e.source, e.confidence, now) for e in unique.values()]


def _edge(row) -> MemoryEdge:
    return MemoryEdge(row[0], row[1], row[2], row[3], row[4])


class EdgeStore:
    """Edges in the same SQLite file as the rows they relate; composes a :class:`SQLiteAdapter`."""

    def __init__(self, store: SQLiteAdapter):
        self.store = store

    async def connect(self) -> None:
        await self.store.connect()

    async def aclose(self) -> None:
        await self.store.aclose()

    async def upsert(self, edges: Sequence[MemoryEdge]) -> int:
        """Insert or replace ``edges`` by key; returns the number of distinct edges written."""

        def txn(raw):
            rows = _rows(edges, time.time())
            with transaction(raw):
                raw.executemany(_INSERT, rows)
            return len(rows)

        return await self.store.run(txn)

    async def replace_source(self, source: str, edges: Sequence[MemoryEdge]) -> int:
        """Atomically make ``edges`` the whole edge set tagged ``source``.

        A producer rewrites its own set each pass, so removed or re-pointed
        links disappear with no per-edge bookkeeping. Rows already present are
        left alone (created_at survives); only the difference is written.
        """
        wanted = {e.key: e for e in edges if e.source == source}
        if len(wanted) != len({e.key for e in edges}):
            raise ValueError(f"replace_source({source!r}) was given edges tagged with another source")

        def txn(raw):
            with transaction(raw):
                have = {
                    (r[0], r[1], r[2]): r[3]
                    for r in raw.execute(
                        "SELECT src_id, dst_id, relation, confidence FROM memory_edges WHERE source = ?", (source,)
                    )
                }
                gone = [key for key in have if key not in wanted]
                raw.executemany("DELETE FROM memory_edges WHERE src_id = ? AND dst_id = ? AND relation = ?", gone)
                new = [e for key, e in wanted.items() if have.get(key) != e.confidence]
                raw.executemany(_INSERT, _rows(new, time.time()))
            return len(wanted)

        return await self.store.run(txn)

    async def replace_outgoing(self, source: str, src_ids: Sequence[str], edges: Sequence[MemoryEdge]) -> int:
        """Atomically make ``edges`` the ``source`` edges leaving ``src_ids`` (an incremental re-index of a few notes)."""
        sources = set(src_ids)
        if any(e.source != source or e.src_id not in sources for e in edges):
            raise ValueError(f"replace_outgoing({source!r}) was given an edge from another source or node")

        def txn(raw):
            with transaction(raw):
                raw.executemany(
                    "DELETE FROM memory_edges WHERE source = ? AND src_id = ?", [(source, i) for i in src_ids]
                )
                rows = _rows(edges, time.time())
                raw.executemany(_INSERT, rows)
            return len(rows)

        return await self.store.run(txn)

    async def outgoing(self, node_id: str, relation: str | None = None) -> list[MemoryEdge]:
        return await self._select("src_id", node_id, relation)

    async def incoming(self, node_id: str, relation: str | None = None) -> list[MemoryEdge]:
        return await self._select("dst_id", node_id, relation)

    async def _select(self, column: str, node_id: str, relation: str | None) -> list[MemoryEdge]:
        sql = f"SELECT src_id, dst_id, relation, source, confidence FROM memory_edges WHERE {column} = ?"
        params: tuple = (node_id,)
        if relation is not None:
            sql += " AND relation = ?"
            params += (relation,)
        sql += " ORDER BY src_id, dst_id, relation"
        rows = await self.store.run(lambda raw: raw.execute(sql, params).fetchall())
        return [_edge(r) for r in rows]

    async def neighbors(self, node_id: str, relation: str | None = None) -> list[str]:
        """Distinct ids one hop away in either direction: outgoing first, then incoming, each sorted."""
        seen: dict[str, None] = {}
        for edge in await self.outgoing(node_id, relation):
            seen.setdefault(edge.dst_id, None)
        for edge in await self.incoming(node_id, relation):
            seen.setdefault(edge.src_id, None)
        seen.pop(node_id, None)
        return list(seen)

    async def neighbors_many(self, node_ids: Sequence[str], relation: str | None = None) -> dict[str, list[str]]:
        """:meth:`neighbors` for many nodes in one round trip (graph expansion of a result page)."""
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return {}

        def read(raw):
            out: dict[str, dict[str, None]] = {i: {} for i in ids}
            rel_sql = " AND relation = ?" if relation is not None else ""
            rel_params = (relation,) if relation is not None else ()
            for near, far in (("src_id", "dst_id"), ("dst_id", "src_id")):  # outgoing, then incoming
                sql = f"SELECT {near}, {far} FROM memory_edges WHERE {near} IN ({{marks}}){rel_sql} ORDER BY {near}, {far}"
                for node, neighbour in select_in(raw, sql, ids, after=rel_params):
                    out[node].setdefault(neighbour, None)
            return {i: [n for n in found if n != i] for i, found in out.items()}

        return await self.store.run(read)

    async def count(self, source: str | None = None) -> int:
        sql = "SELECT count(*) FROM memory_edges" + (" WHERE source = ?" if source else "")
        params = (source,) if source else ()
        rows = await self.store.run(lambda raw: raw.execute(sql, params).fetchall())
        return rows[0][0]
