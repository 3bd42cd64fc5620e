"""Opening an agent's federation for a command: the one place the CLI wires tiers."""

from __future__ import annotations

from contextlib import asynccontextmanager

from arcana_cli.output import Out
from memory.agents import AgentCard


@asynccontextmanager
async def agent_federation(cli, card: AgentCard, out: Out, *, embedding=None, actor: str = "cli", reading: bool = False):
    """The agent's federation (private, its pools and vaults, global when an embedder is configured).

    Closed on exit. A private store found corrupt is moved aside; the command
    then says so and exits 5 (see :func:`arcana_cli.context.announce_quarantines`).
    ``embedding``: a gateway kept across calls (the web view's, whose model
    stays loaded); by default one is built from the config for this call. ``reading``: a read's
    federation, which makes no store that is not there yet (recall, context, the web view's search).
    """
    from memory.embedding.factory import build_gateway
    from memory.runtime.assembly import federation_for_agent

    federation = await federation_for_agent(
        card,
        home=cli.home,
        config=cli.config,
        embedding=embedding if embedding is not None else build_gateway(cli.config.embedding, cli.home),
        notify=out.warn,
        actor=actor,
        reading=reading,
    )
    try:
        yield federation
    finally:
        await federation.aclose()
