"""`arcana ui`: a local web view of the home — a skin over the core, like the CLI and MCP.

Pages read through the same core calls as the CLI (the agent's federation for
recall, the operator's editor for one store) and act through the same
:class:`~memory.operator.edits.MemoryEditor`. Served on loopback only, behind
a token (arcana_cli/loopback.py); every asset comes from this package.
"""
