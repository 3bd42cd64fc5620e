"""`arcana mcp`: serve one agent's memory to an MCP host (stdio, or loopback HTTP with a token)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import AgentOpt, Out


@command("mcp", json=False)
async def mcp(
    cli: CliContext,
    out: Out,
    agent: AgentOpt = ...,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Serve the read tools only: recall, list, vault_search, context, get, history.")
    ] = False,
    http: Annotated[
        str | None,
        typer.Option("--http", help="Serve streamable HTTP on loopback HOST:PORT instead, with a bearer token.", show_default=False),
    ] = None,
    create: Annotated[
        bool, typer.Option("--create", help="Create the agent if no agent has that name (else exit 3).")
    ] = False,
) -> None:
    """Serve an agent's memory as MCP tools over stdio, or loopback HTTP (for Claude Desktop, IDE agents, ...)."""
    from arcana_cli.federated import agent_federation
    from arcana_cli.loopback import bind as listen
    from arcana_cli.loopback import parse_bind, saved_token, url_host
    from arcana_cli.mcp.server import MemoryTools, attached_vaults, build_server, serve_http, stderr_logging
    from arcana_cli.mcp.wire import serve_stdio

    bind = None
    if http is not None:
        try:
            bind = parse_bind(http, "--http")
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--http") from None
    # A host config is written once and its stderr rarely read: a typo must fail, not serve an empty memory.
    card = cli.agent_to_store_for(agent) if create else cli.agent(agent)
    if bind is not None:  # listening first: a taken port is one usage error, not uvicorn's log line and exit 3
        try:
            sock = listen(*bind)
        except OSError as exc:
            raise typer.BadParameter(
                f"cannot listen on {bind[0]}:{bind[1]} ({exc.strerror}); pick another port", param_hint="--http"
            ) from None

    stderr_logging()
    # --read-only is a read: an agent with no store yet gets none made (the ledger says who wrote otherwise).
    async with agent_federation(cli, card, out, actor="mcp", reading=read_only) as federation:
        tools = MemoryTools(card, cli.home, cli.config, federation, attached_vaults(cli.config, card))
        for warning in tools.warnings():
            out.warn(warning)
        server = build_server(tools, read_only=read_only)
        mode = " (read-only)" if read_only else ""
        if bind is None:
            out.info(f"arcana mcp: serving agent '{card.name}' on stdio{mode}")
            await serve_stdio(server)
            return
        token, new = saved_token(cli.home.root / "mcp" / "token")
        if new:  # printed once, to stderr even under --quiet: without it nobody can connect
            sys.stderr.write(f"arcana mcp: bearer token (saved in {cli.home.root / 'mcp' / 'token'}): {token}\n")
        else:
            out.info(f"arcana mcp: bearer token in {cli.home.root / 'mcp' / 'token'}")
        host, port = bind
        out.info(f"arcana mcp: serving agent '{card.name}' on http://{url_host(host)}:{port}/mcp{mode}")
        await serve_http(server, host, sock, token)


def register(app: typer.Typer) -> None:
    add_commands(app, mcp)
