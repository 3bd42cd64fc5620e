"""The composition root: a federation assembled for an agent, its sessions, and one turn of a run.

Imported only by the skins (the CLI, the MCP server) and by library users.
"""
