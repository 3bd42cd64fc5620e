from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from arcana_cli.context import ctx_of, run
from arcana_cli.output import AgentOpt, JsonOpt, Out
from arcana_cli.render import RECALL_COLUMNS, entry_json, recall_rows
from memory.types import MemoryEntry, MemoryQuery, MemoryType, RetrievalMode


def parse_since(value: str | None) -> datetime | None:
    """'7d', '12h', '30m', '2w' or an ISO date/time."""
    if value is None:
        return None
    units = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    if value[-1:] in units and value[:-1].isdigit():
        return datetime.now(UTC) - timedelta(**{units[value[-1]]: int(value[:-1])})
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter("use a duration like 7d, 12h, 2w or an ISO date", param_hint="--since") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def recall_entries(cli, card, query: MemoryQuery, out: Out) -> tuple[list[MemoryEntry], tuple[str, ...]]:
    """Open the agent's store and search it; returns the entries and the legs that answered."""
    from memory.embedding.factory import vector_adapter

    async with cli.private_store(card) as store:
        result = await vector_adapter(store, cli.config.embedding, cli.home, notify=out.warn).recall(query)
    return result.entries, result.legs


def register(app: typer.Typer) -> None:
    @app.command("recall")
    def recall(
        ctx: typer.Context,
        query: Annotated[str, typer.Argument(help="What to look for.")],
        agent: AgentOpt = ...,
        limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, max=1000, help="Most results.")] = None,
        type_: Annotated[list[MemoryType] | None, typer.Option("--type", "-t", help="Only these types.")] = None,
        since: Annotated[str | None, typer.Option("--since", help="Only newer than 7d, 12h, or a date.")] = None,
        min_confidence: Annotated[
            float | None, typer.Option("--min-confidence", min=0.0, max=1.0, help="Confidence floor.")
        ] = None,
        mode: Annotated[
            RetrievalMode | None,
            typer.Option("--mode", "-m", help="keyword, semantic or hybrid [default: recall.mode, else hybrid].", show_default=False),
        ] = None,
        json_: JsonOpt = False,
    ) -> None:
        """Recall an agent's memories relevant to QUERY, best first."""
        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        card = cli.agent(agent)
        memory_query = MemoryQuery(
            agent_id=card.id,
            text=query,
            retrieval_mode=mode or cli.config.recall.mode or RetrievalMode.hybrid,
            types=type_ or None,
            since=parse_since(since),
            min_confidence=min_confidence,
            limit=limit or cli.config.recall.limit,
        )

        entries, legs = run(recall_entries(cli, card, memory_query, out))
        out.data(
            {"agent": card.name, "query": query, "legs": list(legs), "results": [entry_json(e) for e in entries]},
            columns=RECALL_COLUMNS,
            rows=lambda: recall_rows(entries),
        )
        out.info(f"answered by: {' + '.join(legs) or 'filters'}")
        if not entries:
            out.info("no memories matched")
