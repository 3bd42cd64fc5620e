"""The official MCP client on `arcana mcp` over stdio, and a store seeded without the CLI."""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager

from mcp import ClientSession, StdioServerParameters, stdio_client

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.types import MemoryEntry


@asynccontextmanager
async def session(*args: str, stderr=None, env: dict[str, str] | None = None):
    """An initialised ClientSession on `arcana mcp ARGS`; ``env`` adds variables."""
    argv = ["-m", "arcana_cli.main", "mcp", *args]
    params = StdioServerParameters(command=sys.executable, args=argv, env={**os.environ, **(env or {})})
    errlog = stderr if stderr is not None else sys.stderr
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def call(client, tool: str, **arguments):
    """(is_error, the tool's JSON answer or its error text)."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text
    return result.is_error, (text if result.is_error else json.loads(text))


async def seed(home, name: str, entries: list[dict]) -> tuple[str, dict[str, str]]:
    """Write ``entries`` straight into agent ``name``'s store; (its id, first word -> memory id)."""
    registry = AgentRegistry(home)
    card = registry.resolve(name) if registry.exists(name) else registry.create(name)
    store = SQLiteAdapter.for_agent(card.id, home=home, actor="test")
    made = [MemoryEntry(agent_id=card.id, **fields) for fields in entries]
    await store.write_many(made)
    await store.aclose()
    return card.id, {e.content.split()[0]: e.id for e in made}
