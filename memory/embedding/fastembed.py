"""fastembed adapter: the offline MiniLM by default, any fastembed model by name.

fastembed and onnxruntime are imported on first use, inside a worker thread,
so commands that never embed never pay for them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory.embedding import offline_model
from memory.embedding.base import length_order, model_family
from memory.home import private_dir
from memory.types import HealthStatus

DEFAULT_BATCH = 32


_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def _shared_model(name: str, models_root: Path) -> Any:
    """One loaded model per process and name, however many embedders or tiers ask for it."""
    key = (name.lower(), str(models_root))
    with _MODELS_LOCK:
        if key not in _MODELS:
            from fastembed import TextEmbedding

            if name.lower() == offline_model.MODEL_NAME.lower():
                path = offline_model.model_dir(models_root)
                _MODELS[key] = TextEmbedding(offline_model.MODEL_NAME, specific_model_path=str(path))
            else:
                cache = models_root / "fastembed"
                private_dir(cache)
                _MODELS[key] = TextEmbedding(name, cache_dir=str(cache))
        return _MODELS[key]


# The model reads only its first MAX_TOKENS tokens, but the tokenizer would first split the whole
# text (a 50 MB note: 8 GB and 80 s). So each text is cut to a character budget first. WordPiece
# turns a word of up to 100 characters it cannot split into one [UNK], so the worst case is one
# token per 101 characters: 256 of them fit in 25,856. The budget (32 KiB of characters) is above
# that, so the cut never changes a vector for text whose words are at most 100 characters long.
CHAR_BUDGET = offline_model.MAX_TOKENS * 128
# What one batch may pad to: four texts as long as the model reads (TEXT_CHARS, 256 tokens at
# four characters a token) or 32 of 128 characters. A longer text costs no more than TEXT_CHARS.
TEXT_CHARS = offline_model.MAX_TOKENS * 4
BATCH_CHARS = 4 * TEXT_CHARS


class FastEmbedEmbedder:
    """Local ONNX embeddings through fastembed.

    ``model`` equal to the default (all-MiniLM-L6-v2) is served from the offline
    copy assembled under ``models_root``; any other name is downloaded by
    fastembed into ``models_root / "fastembed"`` when a network is available.
    """

    def __init__(self, model: str = offline_model.MODEL_NAME, *, models_root: Path, batch_size: int = DEFAULT_BATCH):
        self.model_name = model
        self.model_family = model_family(model)
        self.models_root = Path(models_root)
        self.batch_size = batch_size
        self._model: Any = None
        self._dimension: int | None = offline_model.DIMENSION if self.offline else None
        self._load_lock = threading.Lock()

    @property
    def offline(self) -> bool:
        return self.model_name.lower() == offline_model.MODEL_NAME.lower()

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._load()
        return self._dimension

    def _load(self):
        with self._load_lock:
            if self._model is not None:
                return self._model
            model = _shared_model(self.model_name, self.models_root)
            if self._dimension is None:
                self._dimension = len(next(iter(model.embed(["dimension probe"]))))
            self._model = model
            return model

    def _embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        model = self._load()
        texts = [text[:CHAR_BUDGET] for text in texts]
        order = length_order(texts)
        out: list[list[float] | None] = [None] * len(texts)
        for batch in self._batches(texts, order):
            self._put(model.embed([texts[i] for i in batch], batch_size=len(batch)), batch, out)
        return out  # type: ignore[return-value]

    def _batches(self, texts: Sequence[str], order: Sequence[int]) -> list[list[int]]:
        """``order`` cut into batches of at most ``batch_size`` texts whose padded size fits
        :data:`BATCH_CHARS`: the runtime's memory grows with batch × longest text (32 texts of
        256 tokens took 1.5 GB, 4 took 0.4 GB, in the same time), so long texts go a few at a time."""
        batches: list[list[int]] = []
        for index in order:
            cost = min(len(texts[index]), TEXT_CHARS)
            if batches and len(batches[-1]) < self.batch_size and (len(batches[-1]) + 1) * cost <= BATCH_CHARS:
                batches[-1].append(index)
            else:
                batches.append([index])
        return batches

    @staticmethod
    def _put(vectors, batch: Sequence[int], out: list) -> None:
        import numpy as np

        for index, vector in zip(batch, vectors, strict=True):
            norm = float(np.linalg.norm(vector))
            if norm == 0.0 or not np.isfinite(norm):
                raise ValueError(f"the model returned a zero or non-finite vector for text {index}")
            out[index] = (vector / norm).tolist()

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order. Texts are batched by length."""
        if not texts:
            return []
        return await asyncio.to_thread(self._embed_sync, list(texts))

    async def health_check(self) -> HealthStatus:
        try:
            await asyncio.to_thread(self._load)
        except Exception as exc:  # never raises, by contract
            source = "offline copy" if self.offline else "fastembed cache (needs a network on first use)"
            return HealthStatus(healthy=False, message=f"fastembed {self.model_name}: cannot load from {source}: {exc}")
        return HealthStatus(healthy=True, message=f"fastembed {self.model_name} ({self._dimension}-dim)")
