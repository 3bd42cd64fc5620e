"""The knowledge graph: typed edges between node ids, wikilink extraction, graph-aware recall."""
