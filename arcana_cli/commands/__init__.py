"""One module per command or command group; each exposes ``register(app)``."""
