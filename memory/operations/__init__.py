"""Whole-home services a skin calls: prune, reindex, doctor, backup, bulk import, export, status.

Nothing in ``memory/`` imports this package; the CLI and the MCP server do.
"""
