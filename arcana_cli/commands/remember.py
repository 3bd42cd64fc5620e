from __future__ import annotations

import sys
from typing import Annotated

import typer

from arcana_cli.context import ctx_of, run
from arcana_cli.output import AgentOpt, JsonOpt, Out
from memory.errors import NotFoundError
from memory.types import MemoryEntry, MemoryType, Visibility


def read_text(text: str | None) -> str:
    """TEXT, or standard input when TEXT is absent or '-'."""
    if text is None or text == "-":
        if sys.stdin.isatty():
            raise typer.BadParameter("give TEXT or pipe it on stdin", param_hint="TEXT")
        text = sys.stdin.read()
    if not text.strip():
        raise typer.BadParameter("nothing to remember: the text is empty", param_hint="TEXT")
    return text.strip()


def register(app: typer.Typer) -> None:
    @app.command("remember")
    def remember(
        ctx: typer.Context,
        text: Annotated[str | None, typer.Argument(help="What to remember; '-' or omitted reads stdin.")] = None,
        agent: AgentOpt = ...,
        type_: Annotated[MemoryType, typer.Option("--type", "-t", help="Memory type.")] = MemoryType.SEMANTIC,
        importance: Annotated[float, typer.Option("--importance", "-i", min=0.0, max=1.0, help="0..1.")] = 0.5,
        pin: Annotated[bool, typer.Option("--pin", help="Pin: never pruned, ranked first.")] = False,
        tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
        visibility: Annotated[
            Visibility | None, typer.Option("--visibility", help="visible, private or hidden.")
        ] = None,
        json_: JsonOpt = False,
    ) -> None:
        """Store a memory for an agent and print its id."""
        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        body = read_text(text)
        try:
            card = cli.agent(agent)
        except NotFoundError:
            card = cli.agents.create(agent)
            out.info(f"created agent '{agent}' ({card.id})")
        entry = MemoryEntry(
            agent_id=card.id,
            type=type_,
            content=body,
            importance=importance,
            pinned=pin,
            tags=tag or [],
            visibility=visibility,
        )

        async def go() -> None:
            from memory.embedding.factory import vector_adapter

            async with cli.private_store(card) as store:
                # Stored through the SQLite store either way; the vector is added when an embedder is up.
                await vector_adapter(store, cli.config.embedding, cli.home, notify=out.warn).write(entry)

        run(go())
        out.data({"id": entry.id, "agent": card.name, "agent_id": card.id}, text=lambda: entry.id)
