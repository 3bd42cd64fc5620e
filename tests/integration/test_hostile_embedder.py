"""An Ollama embedding server is hostile input too: one that trickles its answer, or sends one
without end, is cut off within the embedder's timeout and a bounded read, never held onto."""

from __future__ import annotations

import time

import pytest
from raw_model_server import RawModelServer

from memory.embedding.ollama import OllamaEmbedder
from memory.errors import MemoryStorageError


def _trickle():
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n"
    while True:  # each byte well inside the timeout, the whole without end
        time.sleep(0.1)
        yield b" "


def _headers_trickle():
    yield b"HTTP/1.1 200 OK\r\nX-Slow: "
    while True:
        time.sleep(0.1)
        yield b"a"


def _flood():
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3000000000\r\n\r\n"
    while True:
        yield b" " * 65536


def _good():
    body = b'{"embeddings": [[3.0, 4.0]]}'
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_a_well_behaved_raw_server_is_embedded():
    """The positive control: the same raw server answering properly."""
    with RawModelServer(_good) as server:
        embedder = OllamaEmbedder("all-minilm", url=server.url)
        assert (await embedder.health_check()).healthy
        assert await embedder.embed(["x"]) == [pytest.approx([0.6, 0.8])]


@pytest.mark.parametrize("respond", [_trickle, _headers_trickle], ids=["body", "headers"])
async def test_a_trickling_answer_is_cut_off_at_the_timeout(respond):
    """Each wait was within the timeout, so `arcana remember` and `recall` with such an embedder
    configured waited for good (the 0.5 s health check included)."""
    with RawModelServer(respond) as server:
        embedder = OllamaEmbedder("all-minilm", url=server.url)
        started = time.monotonic()
        health = await embedder.health_check()
        assert not health.healthy and "still answering" in health.message
        assert time.monotonic() - started < 5
        started = time.monotonic()
        with pytest.raises(MemoryStorageError, match="still answering"):
            embedder._post(["x"], 1.0)
        assert time.monotonic() - started < 6


async def test_an_answer_without_end_is_cut_off_at_its_limit():
    """It was read whole (3 GB here) before being parsed."""
    with RawModelServer(_flood) as server:
        embedder = OllamaEmbedder("all-minilm", url=server.url)
        with pytest.raises(MemoryStorageError, match="MiB; cut off"):
            await embedder.embed(["x"])
        assert server.sent < 256 << 20  # the client stopped reading long before


def _nested():
    body = b'{"embeddings": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_an_answer_nested_past_the_parsers_depth_is_an_unhealthy_embedder():
    """An answer that is not JSON was one named error, but one nested past the parser's depth
    escaped embed() as a RecursionError (the health check caught it only by catching everything)."""
    with RawModelServer(_nested) as server:
        embedder = OllamaEmbedder("all-minilm", url=server.url)
        assert not (await embedder.health_check()).healthy
        with pytest.raises(MemoryStorageError, match="not JSON"):
            await embedder.embed(["x"])


def _twice():
    body = b'{"embeddings": [[3.0, 4.0]], "embeddings": [[4.0, 3.0]]}'
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def test_an_answer_with_a_key_given_twice_is_refused():
    """Python's parser kept the second "embeddings" silently, so which vector was stored depended on
    the reader; the positive control is test_a_well_behaved_raw_server_is_embedded."""
    with RawModelServer(_twice) as server:
        embedder = OllamaEmbedder("all-minilm", url=server.url)
        with pytest.raises(MemoryStorageError, match="twice"):
            await embedder.embed(["x"])
