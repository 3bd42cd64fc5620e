"""Embedders and the gateway that honours a database's model pin.

Importing this package is cheap: fastembed and onnxruntime load only when an
embedder is first health-checked or asked to embed.
"""
