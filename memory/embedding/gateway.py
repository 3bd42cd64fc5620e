"""EmbeddingGateway: which embedder a database may use, honouring its pin."""

from __future__ import annotations

from collections.abc import Sequence

from memory.embedding.base import Embedder, EmbeddingMeta


class EmbeddingGateway:
    """Pure resolution over embedders given in priority order.

    Reading and writing the pin is the vector store's job; the gateway only
    decides. It never substitutes a model from another family: vectors from
    different spaces would compare without error and rank nonsense.
    """

    def __init__(self, embedders: Sequence[Embedder]):
        self.embedders = list(embedders)

    async def resolve(self, meta: EmbeddingMeta | None) -> Embedder | None:
        """The embedder to use, or None (fall back to keyword search).

        No pin: the first healthy embedder. Pinned: the exact model when
        healthy, else a healthy one of the same family, else None.
        """
        if meta is None:
            for embedder in self.embedders:
                if await self._healthy(embedder):
                    return embedder
            return None
        exact = [e for e in self.embedders if e.model_name == meta.model]
        same_family = [e for e in self.embedders if e.model_name != meta.model and e.model_family == meta.family]
        for embedder in exact + same_family:
            if await self._healthy(embedder) and embedder.dimension == meta.dimension:
                return embedder
        return None

    @staticmethod
    async def _healthy(embedder: Embedder) -> bool:
        return (await embedder.health_check()).healthy

    async def health(self) -> list[tuple[Embedder, bool, str]]:
        """Every embedder with its health, for doctor and status."""
        report = []
        for embedder in self.embedders:
            status = await embedder.health_check()
            report.append((embedder, status.healthy, status.message))
        return report
