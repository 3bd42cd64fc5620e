"""A vault's link graph for a picture: its best-linked notes and the wikilinks among them.

Bounded by ``limit`` nodes chosen in SQL by degree (a vault of thousands of
notes draws its hubs, and says how many it left out), never the whole
manifest loaded into Python.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.errors import NotFoundError
from memory.graph.wikilinks import WIKILINK_SOURCE
from memory.sqlite.batches import select_in
from memory.vaults.indexer import open_store
from memory.vaults.registry import Vault

_NODES = """
WITH ends AS (
    SELECT src_id AS id FROM memory_edges WHERE source = ? AND src_id != dst_id
    UNION ALL SELECT dst_id FROM memory_edges WHERE source = ? AND src_id != dst_id
), degree AS (SELECT id, count(*) AS links FROM ends GROUP BY id)
SELECT f.id, f.rel_path, coalesce(d.links, 0) FROM vault_files f LEFT JOIN degree d ON d.id = f.id
ORDER BY 3 DESC, f.rel_path LIMIT ?
"""


@dataclass(frozen=True)
class LinkGraph:
    vault: str
    notes: int  # every indexed note
    links: int  # every wikilink edge between two notes
    nodes: list[tuple[str, str, int]]  # (id, path, degree) of the notes drawn, best linked first
    edges: list[tuple[str, str]]  # (from id, to id) among the notes drawn


def _read(raw, limit: int) -> tuple[int, int, list[tuple[str, str, int]], list[tuple[str, str]]]:
    notes = raw.execute("SELECT count(*) FROM vault_files").fetchone()[0]
    links = raw.execute(
        "SELECT count(*) FROM memory_edges WHERE source = ? AND src_id != dst_id", (WIKILINK_SOURCE,)
    ).fetchone()[0]
    nodes = [tuple(r) for r in raw.execute(_NODES, (WIKILINK_SOURCE, WIKILINK_SOURCE, limit)).fetchall()]
    ids = [n[0] for n in nodes]
    drawn = set(ids)
    edges = [
        (r[0], r[1])
        for r in select_in(
            raw, "SELECT src_id, dst_id FROM memory_edges WHERE source = ? AND src_id IN ({marks})", ids,
            before=(WIKILINK_SOURCE,),
        )
        if r[1] in drawn and r[0] != r[1]
    ]
    return notes, links, nodes, sorted(set(edges))


async def link_graph(vault: Vault, *, limit: int = 150) -> LinkGraph:
    """The ``limit`` best-linked notes of ``vault``'s index and the links among them."""
    if not vault.db_path.exists():
        raise NotFoundError(f"vault '{vault.name}' has no index yet; build it with `arcana vault index {vault.name}`")
    store = open_store(vault)
    try:
        notes, links, nodes, edges = await store.run(_read, limit)
    finally:
        await store.aclose()
    return LinkGraph(vault.name, notes, links, nodes, edges)
