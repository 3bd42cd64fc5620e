"""EmbeddingGateway.resolve: priority without a pin, exact or same-family with one, never across families."""

from __future__ import annotations

from embed_server import hashed_vectors
from memory.embedding.base import EmbeddingMeta
from memory.embedding.gateway import EmbeddingGateway
from memory.embedding.ollama import OllamaEmbedder

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def pin(model: str, family: str, dimension: int) -> EmbeddingMeta:
    return EmbeddingMeta(model, family, dimension, "memory_vec_1", 0.0)


def ollama(model: str, url: str = "http://127.0.0.1:9") -> OllamaEmbedder:
    return OllamaEmbedder(model, url=url)


async def test_no_pin_takes_the_first_healthy_in_priority_order(offline_embedder, embed_server):
    server = embed_server({"nomic-embed-text": hashed_vectors(16)})
    down = ollama("all-minilm")
    up = ollama("nomic-embed-text", server.url)
    assert await EmbeddingGateway([down, offline_embedder, up]).resolve(None) is offline_embedder
    assert await EmbeddingGateway([up, offline_embedder]).resolve(None) is up
    assert await EmbeddingGateway([down]).resolve(None) is None


async def test_pinned_prefers_the_exact_model(offline_embedder, embed_server, offline_like_ollama):
    same_family = offline_like_ollama
    resolved = await EmbeddingGateway([same_family, offline_embedder]).resolve(pin(MINILM, "all-minilm-l6-v2", 384))
    assert resolved is offline_embedder  # exact model wins over an earlier same-family one


async def test_pinned_falls_back_to_the_same_family(offline_like_ollama):
    resolved = await EmbeddingGateway([ollama("nomic-embed-text"), offline_like_ollama]).resolve(
        pin(MINILM, "all-minilm-l6-v2", 384)
    )
    assert resolved is offline_like_ollama


async def test_pinned_never_crosses_families(offline_embedder, embed_server):
    server = embed_server({"nomic-embed-text": hashed_vectors(384)})  # even with a matching width
    other = ollama("nomic-embed-text", server.url)
    gateway = EmbeddingGateway([other])
    assert await gateway.resolve(pin(MINILM, "all-minilm-l6-v2", 384)) is None
    assert await gateway.resolve(None) is other  # positive control: it is healthy


async def test_pinned_refuses_a_same_family_model_of_another_width(embed_server):
    server = embed_server({"all-minilm": hashed_vectors(16)})
    assert await EmbeddingGateway([ollama("all-minilm", server.url)]).resolve(pin(MINILM, "all-minilm-l6-v2", 384)) is None
