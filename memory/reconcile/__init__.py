"""Facts that evolve: write-time reconciliation (add / noop / update / delete), entities, versions.

``reconciler`` is the entry point; ``candidates``, ``slots`` (+ ``languages``),
``heuristic``, ``llm`` and ``entities`` are its parts; ``settings`` holds the
tunables config.json sets. Nothing is imported here so config can read the
settings without loading the rest.
"""
