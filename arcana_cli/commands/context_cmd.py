"""`arcana context`: the memory block a prompt gets, for a shell, a script or a host's hook."""

from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import AgentOpt, Out


@command("context")
async def context(
    cli: CliContext,
    out: Out,
    query: Annotated[
        str | None, typer.Argument(help="The message or task to recall for; omitted: the agent's top memories.")
    ] = None,
    agent: AgentOpt = ...,
    budget_tokens: Annotated[
        int, typer.Option("--budget-tokens", min=50, max=100_000, help="Token budget for the block.")
    ] = 1000,
) -> None:
    """Print the attributed memory block `arcana run` puts before the model (a session-start hook's briefing)."""
    from arcana_cli.federated import agent_federation
    from memory.models.context import recall_context

    card = cli.agent(agent)
    text = query.strip() if query else None
    async with agent_federation(cli, card, out, reading=True) as federation:
        rendered = await recall_context(federation, card.id, text, recall=cli.config.recall, budget_tokens=budget_tokens)
    if not rendered.text:
        out.info(f"no memories of agent '{card.name}' to put in context")
    out.data(
        {"agent": card.name, "query": text, "context": rendered.text, "ids": rendered.ids,
         "tokens": rendered.tokens, "omitted": rendered.omitted},
        text=lambda: rendered.text,
    )


def register(app: typer.Typer) -> None:
    add_commands(app, context)
