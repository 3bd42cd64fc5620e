"""Build embedders and the gateway from the ``embedding`` section of config.json."""

from __future__ import annotations

from memory.config import EmbeddingConfig
from memory.embedding.base import Embedder
from memory.embedding.gateway import EmbeddingGateway
from memory.home import Home

OLLAMA_PREFIX = "ollama:"


def build_embedder(name: str, config: EmbeddingConfig, home: Home) -> Embedder:
    """``ollama:MODEL`` names an Ollama model; anything else is a fastembed model."""
    if name.startswith(OLLAMA_PREFIX):
        from memory.embedding.ollama import OllamaEmbedder

        return OllamaEmbedder(name[len(OLLAMA_PREFIX) :], url=config.ollama_url, batch_size=config.batch_size)
    from memory.embedding.fastembed import FastEmbedEmbedder

    return FastEmbedEmbedder(name, models_root=home.models_cache, batch_size=config.batch_size)


def build_gateway(config: EmbeddingConfig, home: Home) -> EmbeddingGateway:
    """Embedders in the order of ``embedding.providers`` (the priority order)."""
    embedders: list[Embedder] = []
    for provider in config.providers:
        if provider == "fastembed":
            embedders.append(build_embedder(config.fastembed_model, config, home))
        elif provider == "ollama" and config.ollama_model:
            embedders.append(build_embedder(OLLAMA_PREFIX + config.ollama_model, config, home))
    return EmbeddingGateway(embedders)


def vector_options(config: EmbeddingConfig) -> dict:
    """The VectorAdapter options config.json sets: fusion weights and the similarity floor."""
    return {
        "vector_weight": config.vector_weight,
        "bm25_weight": config.keyword_weight,
        "min_similarity": config.min_similarity,
    }

