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


@asynccontextmanager
async def http_session(home, *args: str, stderr, before: tuple[str, ...] = ()):
    """An initialised ClientSession on `arcana BEFORE mcp ARGS --http` over streamable HTTP, a real
    process on a free port of 127.0.0.1, with the token it wrote; stopped when the block ends."""
    import subprocess

    import anyio
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from model_server import free_port

    port = free_port()
    argv = [sys.executable, "-m", "arcana_cli.main", *before, "mcp", *args, "--http", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, env=dict(os.environ))
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx2.AsyncClient() as raw:
            for _ in range(300):  # a guard against a server that never starts, not a measurement
                try:
                    await raw.post(url, json={})
                    break
                except httpx2.TransportError:
                    await anyio.sleep(0.1)
        headers = {"Authorization": f"Bearer {(home.root / 'mcp' / 'token').read_text().strip()}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as authed, \
                streamable_http_client(url, http_client=authed) as (read, write, *_), \
                ClientSession(read, write) as client:
            await client.initialize()
            yield client
    finally:
        proc.terminate()
        proc.wait(timeout=30)


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
