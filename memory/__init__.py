"""Arcana's in-process memory core: stores, search, federation. No CLI imports here.

The public names below load on first use (PEP 562), so ``import memory.x`` —
which every CLI command does — never pays for the whole core::

    from memory import SQLiteAdapter, MemoryEntry, MemoryQuery
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    # data model and errors
    "MemoryEntry": "memory.types",
    "MemoryQuery": "memory.types",
    "MemoryType": "memory.types",
    "MemoryScope": "memory.types",
    "RetrievalMode": "memory.types",
    "Visibility": "memory.types",
    "ConfidenceSource": "memory.types",
    "PrunePolicy": "memory.types",
    "PruneMode": "memory.types",
    "PruneReport": "memory.types",
    "ArcanaMemoryError": "memory.errors",
    "MemoryStorageError": "memory.errors",
    "MemoryCorruptError": "memory.errors",
    "MemoryWriteError": "memory.errors",
    "MemoryRoutingError": "memory.errors",
    "TierWriteFailed": "memory.errors",
    # stores
    "MemoryAdapter": "memory.protocols",
    "SQLiteAdapter": "memory.adapters.sqlite",
    "VectorAdapter": "memory.adapters.vector",
    "MarkdownFolderAdapter": "memory.adapters.markdown",
    # embeddings
    "EmbeddingGateway": "memory.embedding.gateway",
    "FastEmbedEmbedder": "memory.embedding.fastembed",
    "OllamaEmbedder": "memory.embedding.ollama",
    # graph
    "EdgeStore": "memory.graph.edges",
    "MemoryEdge": "memory.graph.edges",
    "WikilinkEdgeExtractor": "memory.graph.wikilinks",
    "EdgeIndexReport": "memory.graph.wikilinks",
    # federation
    "MemoryRouter": "memory.federation.router",
    "MemoryFederation": "memory.federation.federation",
    "PoolConfig": "memory.federation.shared_tiers",
    "build_federation": "memory.runtime.assembly",
    "ResilientTier": "memory.federation.resilience",
    "CircuitBreaker": "memory.federation.resilience",
    "DecayProfile": "memory.ranking.decay",
    # agents, extraction, sessions, jobs
    "AgentRegistry": "memory.agents",
    "HeuristicExtractor": "memory.extraction.extractors",
    "LLMExtractor": "memory.extraction.extractors",
    "build_extractor": "memory.extraction.extractors",
    "ExtractionConfig": "memory.config",
    "SignalPatterns": "memory.extraction.signals",
    "register_language": "memory.extraction.signals",
    "SessionManager": "memory.runtime.sessions",
    "BackgroundJobQueue": "memory.jobs",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
