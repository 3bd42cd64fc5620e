"""Build embedders and the gateway from the ``embedding`` section of config.json."""

from __future__ import annotations

from memory.config import EmbeddingConfig
from memory.embedding.base import Embedder
from memory.embedding.gateway import EmbeddingGateway
from memory.home import Home
from memory.types import RetrievalMode

OLLAMA_PREFIX = "ollama:"


def build_embedder(name: str, config: EmbeddingConfig, home: Home) -> Embedder:
    """``ollama:MODEL`` names an Ollama model; anything else is a fastembed model."""
    if name.startswith(OLLAMA_PREFIX):
        from memory.embedding.ollama import OllamaEmbedder

        return OllamaEmbedder(name[len(OLLAMA_PREFIX) :], url=config.ollama_url, batch_size=config.batch_size)
    from memory.embedding.fastembed import FastEmbedEmbedder

    return FastEmbedEmbedder(name, models_root=home.models_cache, batch_size=config.batch_size)


def embedder_names(config: EmbeddingConfig) -> list[str]:
    """The embedders ``embedding.providers`` configures, in its (priority) order; ollama without a model is none."""
    names = []
    for provider in config.providers:
        if provider == "fastembed":
            names.append(config.fastembed_model)
        elif provider == "ollama" and config.ollama_model:
            names.append(OLLAMA_PREFIX + config.ollama_model)
    return names


def build_gateway(config: EmbeddingConfig, home: Home) -> EmbeddingGateway:
    """Embedders in the order of ``embedding.providers`` (the priority order)."""
    return EmbeddingGateway([build_embedder(name, config, home) for name in embedder_names(config)])


def semantic_unavailable(config: EmbeddingConfig, mode: RetrievalMode) -> str | None:
    """Why a recall that asked for semantic search is answered by keyword here, or None.

    Trigger: semantic mode (``--mode semantic``, ``recall.mode``) in a home with no embedder
    configured. Why: the vector layer stays quiet there (keyword-only is the operator's
    choice), so semantic answered keyword hits, or nothing, without a word. Outcome: every
    surface (recall, the web view, the MCP tool) says this one line; hybrid stays quiet.
    """
    if mode is not RetrievalMode.semantic or embedder_names(config):
        return None
    return ("semantic search needs an embedder and none is configured (embedding.providers is empty): "
            "answered by keyword instead; `arcana config set embedding.providers fastembed` turns it on")


def vector_options(config: EmbeddingConfig) -> dict:
    """The VectorAdapter options config.json sets: fusion weights and the similarity floor."""
    return {
        "vector_weight": config.vector_weight,
        "bm25_weight": config.keyword_weight,
        "min_similarity": config.min_similarity,
    }

