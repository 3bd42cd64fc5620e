"""The embedder protocol, the pin it is matched against, and model families."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from memory.types import HealthStatus


def content_hash(text: str) -> str:
    """What a stored vector remembers of the text it was made from, to tell when it has gone stale."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]

# Names under which providers ship the same weights. Vectors from one family are
# interchangeable, so a pinned database may be served by any member.
_FAMILY_ALIASES = {
    "all-minilm": "all-minilm-l6-v2",
    "all-minilm-latest": "all-minilm-l6-v2",
    "all-minilm-l6-v2": "all-minilm-l6-v2",
    "all-minilm-l12-v2": "all-minilm-l12-v2",
    "nomic-embed-text": "nomic-embed-text-v1.5",
    "nomic-embed-text-latest": "nomic-embed-text-v1.5",
    "nomic-embed-text-v1.5": "nomic-embed-text-v1.5",
    "mxbai-embed-large": "mxbai-embed-large-v1",
    "mxbai-embed-large-latest": "mxbai-embed-large-v1",
    "mxbai-embed-large-v1": "mxbai-embed-large-v1",
    "bge-small-en-v1.5": "bge-small-en-v1.5",
}


def model_family(model: str) -> str:
    """The family of ``model``: organisation, provider prefix and tag folded away.

    ``sentence-transformers/all-MiniLM-L6-v2`` (fastembed) and ``all-minilm``
    (Ollama) are the same weights, so both map to ``all-minilm-l6-v2``.
    """
    name = model.strip().lower()
    for prefix in ("ollama:", "fastembed:"):
        name = name.removeprefix(prefix)
    name = name.rsplit("/", 1)[-1].replace(":", "-")
    return _FAMILY_ALIASES.get(name, name)


@dataclass(frozen=True)
class EmbeddingMeta:
    """A database's pin: the ``embedding_meta`` row."""

    model: str
    family: str
    dimension: int
    vec_table: str
    pinned_at: float


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``dimension`` is known once ``health_check`` succeeded."""

    model_name: str
    model_family: str

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    async def health_check(self) -> HealthStatus:
        """Whether the embedder can answer now. Never raises."""
        ...


def l2_normalize(vector: Sequence[float]) -> list[float]:
    """Unit length, so cosine distance is a dot product and scores compare across rows."""
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise ValueError("cannot normalise a zero or non-finite vector")
    return [x / norm for x in vector]


def length_order(texts: Sequence[str]) -> list[int]:
    """Indices of ``texts`` shortest first.

    Embedders pad a batch to its longest text; feeding them texts in length
    order keeps each batch's padding (and so the wasted compute) small.
    """
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))
