"""Opening an agent's federation for a command: the one place the CLI wires tiers."""

from __future__ import annotations

from contextlib import asynccontextmanager

from arcana_cli.context import report_quarantine
from arcana_cli.output import Out
from memory.agents import AgentCard


@asynccontextmanager
async def agent_federation(cli, card: AgentCard, out: Out):
    """The agent's federation (private, its pools and vaults, global when an embedder is configured).

    Closed on exit. Says loudly when the private store was found corrupt and
    moved aside.
    """
    from memory.embedding.factory import build_gateway
    from memory.federation.assembly import federation_for_agent, private_store

    federation = await federation_for_agent(
        card,
        home=cli.home,
        config=cli.config,
        embedding=build_gateway(cli.config.embedding, cli.home),
        notify=out.warn,
        actor="cli",
    )
    try:
        yield federation
    finally:
        await federation.aclose()
        report_quarantine(card, private_store(federation))
