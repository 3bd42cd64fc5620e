"""Embedders, the gateway that honours a database's model pin, and hybrid fusion.

Importing this package is cheap: fastembed and onnxruntime load only when an
embedder is first health-checked or asked to embed.
"""

from memory.embedding.base import Embedder, EmbeddingMeta, model_family
from memory.embedding.gateway import EmbeddingGateway

__all__ = ["Embedder", "EmbeddingGateway", "EmbeddingMeta", "model_family"]
