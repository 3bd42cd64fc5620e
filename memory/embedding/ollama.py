"""Ollama adapter: ``POST /api/embed`` on a local (or remote) Ollama server."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from memory.embedding.base import l2_normalize, model_family
from memory.errors import MemoryStorageError, ModelUnavailableError
from memory.types import HealthStatus

HEALTH_TIMEOUT_S = 0.5  # a down server must not stall recall
EMBED_TIMEOUT_S = 60.0
DEFAULT_BATCH = 32
MAX_ANSWER_BYTES = 64 << 20
"""The largest /api/embed answer read: a batch of 32 vectors of 8192 dimensions is about 6 MiB as JSON."""


class OllamaEmbedder:
    """Embeddings from an Ollama server. The dimension is learnt by the health check."""

    def __init__(self, model: str, *, url: str = "http://127.0.0.1:11434", batch_size: int = DEFAULT_BATCH):
        self.model_name = model
        self.model_family = model_family(model)
        self.url = url.rstrip("/")
        self.batch_size = batch_size
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise MemoryStorageError(f"ollama {self.model_name}: dimension unknown until a health check succeeds")
        return self._dimension

    def _post(self, texts: list[str], timeout: float) -> list[list[float]]:
        from memory.bounded_http import post_json

        try:  # bounded: a server trickling its answer, or sending one without end, is cut off
            payload = post_json(
                f"{self.url}/api/embed", {"model": self.model_name, "input": texts},
                timeout=timeout, deadline=timeout, max_bytes=MAX_ANSWER_BYTES, label=f"ollama {self.model_name}",
            )
        except ModelUnavailableError as exc:
            raise MemoryStorageError(str(exc)) from None
        return _unit_vectors(payload, len(texts), f"ollama {self.model_name} at {self.url}")

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            out += await asyncio.to_thread(self._post, batch, EMBED_TIMEOUT_S)
        return out

    async def health_check(self) -> HealthStatus:
        try:
            vector = (await asyncio.to_thread(self._post, ["health check"], HEALTH_TIMEOUT_S))[0]
        except Exception as exc:  # never raises, by contract
            return HealthStatus(healthy=False, message=str(exc))
        self._dimension = len(vector)
        return HealthStatus(healthy=True, message=f"ollama {self.model_name} at {self.url} ({self._dimension}-dim)")


def _unit_vectors(payload: object, count: int, who: str) -> list[list[float]]:
    """``count`` vectors of numbers, one width, finite, at unit length; else MemoryStorageError saying
    what was wrong: a string or a list in a vector surfaced as Python's own TypeError, a ``true`` was
    taken for 1.0, and NaN (which JSON parsing lets through) as a ValueError naming no server."""
    vectors = payload.get("embeddings") if isinstance(payload, dict) else None
    if not isinstance(vectors, list) or len(vectors) != count:
        raise MemoryStorageError(f"{who}: malformed /api/embed response (not a list of {count} embeddings)")
    if not all(isinstance(v, list) and v and all(type(x) in (float, int) for x in v) for v in vectors):
        raise MemoryStorageError(f"{who}: malformed /api/embed response (an embedding that is not a list of numbers)")
    if len({len(v) for v in vectors}) > 1:
        raise MemoryStorageError(f"{who}: malformed /api/embed response (embeddings of different widths in one answer)")
    try:
        return [l2_normalize(v) for v in vectors]
    except ValueError as exc:  # NaN, infinity, or all zeros
        raise MemoryStorageError(f"{who}: {exc}") from None
