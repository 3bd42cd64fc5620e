"""`arcana mcp`: serve one agent's memory to an MCP host (stdio, or loopback HTTP with a token)."""

from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.context import ctx_of, run
from arcana_cli.output import AgentOpt, Out
from memory.errors import NotFoundError


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        ctx: typer.Context,
        agent: AgentOpt = ...,
        read_only: Annotated[
            bool, typer.Option("--read-only", help="Serve recall, list, vault_search and context only (no writes).")
        ] = False,
    ) -> None:
        """Serve an agent's memory as MCP tools over stdio (for Claude Desktop, IDE agents, ...)."""
        cli = ctx_of(ctx)
        out = Out(quiet=cli.quiet)
        try:
            card = cli.agent(agent)
        except NotFoundError:
            card = cli.agents.create(agent)
            out.info(f"created agent '{agent}' ({card.id})")

        async def serve():
            from arcana_cli.federated import agent_federation
            from arcana_cli.mcp_server import MemoryTools, attached_vaults, build_server, stderr_logging

            stderr_logging()
            async with agent_federation(cli, card, out) as federation:
                tools = MemoryTools(card, cli.home, cli.config, federation, attached_vaults(cli.config, card))
                for warning in tools.warnings():
                    out.warn(warning)
                server = build_server(tools, read_only=read_only)
                out.info(f"arcana mcp: serving agent '{card.name}' on stdio" + (" (read-only)" if read_only else ""))
                await server.run_stdio_async()

        run(serve())
