"""The knowledge graph: typed edges between node ids, wikilink extraction, graph-aware recall."""

from memory.graph.edges import EdgeStore, MemoryEdge
from memory.graph.expand import expand_one_hop
from memory.graph.wikilinks import EdgeIndexReport, LinkResolver, WikilinkEdgeExtractor, parse_wikilinks

__all__ = [
    "EdgeIndexReport",
    "EdgeStore",
    "LinkResolver",
    "MemoryEdge",
    "WikilinkEdgeExtractor",
    "expand_one_hop",
    "parse_wikilinks",
]
