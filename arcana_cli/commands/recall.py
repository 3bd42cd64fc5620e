from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import AgentOpt, Out
from arcana_cli.render import RECALL_COLUMNS, entry_json, recall_rows
from memory.timespec import parse_since
from memory.types import MemoryEntry, MemoryQuery, MemoryScope, MemoryType, RetrievalMode, pool_scope


async def recall_entries(cli: CliContext, card, query: MemoryQuery, out: Out):
    """Recall through the agent's federation: ranked entries, the tiers asked, the degraded ones."""
    from arcana_cli.federated import agent_federation
    from memory.runtime.assembly import quarantine_events

    async with agent_federation(cli, card, out, reading=True) as federation:
        report = await federation.recall(query)
        report.degraded += quarantine_events(federation)
        return report


_LEG_ORDER = ("semantic", "keyword", "graph")


def legs_of(entries: list[MemoryEntry]) -> list[str]:
    """The retrieval legs (semantic, keyword, graph expansion) that produced at least one result."""
    legs = {leg for entry in entries for leg in entry.matched_by}
    return sorted(legs, key=lambda leg: (_LEG_ORDER.index(leg) if leg in _LEG_ORDER else len(_LEG_ORDER), leg))


@command("recall")
async def recall(
    cli: CliContext,
    out: Out,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    agent: AgentOpt = ...,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, max=1000, help="Most results.")] = None,
    type_: Annotated[list[MemoryType] | None, typer.Option("--type", "-t", help="Only these types.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only memories with this tag (repeatable: every one).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only newer than 7d, 12h, or a date.")] = None,
    min_confidence: Annotated[
        float | None, typer.Option("--min-confidence", min=0.0, max=1.0, help="Confidence floor.")
    ] = None,
    mode: Annotated[
        RetrievalMode | None,
        typer.Option("--mode", "-m", help="keyword, semantic or hybrid [default: recall.mode, else hybrid].", show_default=False),
    ] = None,
    scope: Annotated[
        MemoryScope | None,
        typer.Option("--scope", help="Only this tier: private, shared or global [default: all].", show_default=False),
    ] = None,
    pool: Annotated[str | None, typer.Option("--pool", help="Only this shared pool (implies --scope shared).")] = None,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="What was believed then: 7d, 12h, or an ISO date/time.")
    ] = None,
) -> None:
    """Recall an agent's memories relevant to QUERY, best first."""
    if not query.strip():
        raise typer.BadParameter(
            f"the query is empty; to see every memory use `arcana memory list --agent {agent}`", param_hint="QUERY"
        )
    scope = pool_scope(scope, pool, None)
    cli.known_pool(pool)
    card = cli.agent(agent)
    memory_query = MemoryQuery(
        agent_id=card.id,
        text=query,
        retrieval_mode=cli.config.recall.mode_for(mode),
        types=type_ or None,
        tags=tag or None,
        since=parse_since(since, "--since"),
        as_of=parse_since(as_of, "--as-of"),
        min_confidence=min_confidence,
        limit=limit or cli.config.recall.limit,
        scope=scope,
        pool_name=pool,
    )

    report = await recall_entries(cli, card, memory_query, out)
    entries, legs = report.entries, legs_of(report.entries)
    degraded = [event.as_dict() for event in report.degraded]
    out.data(
        {
            "agent": card.name,
            "query": query,
            "legs": legs,
            "tiers": report.tiers,
            "degraded": degraded,
            "results": [entry_json(e) for e in entries],
        },
        columns=(*RECALL_COLUMNS, "tier"),
        rows=lambda: [(*row, ",".join(e.tiers)) for row, e in zip(recall_rows(entries), entries, strict=True)],
    )
    for event in report.degraded:
        out.warn(f"tier {event.tier} degraded ({event.reason}): {event.detail}; its memories are missing here")
    from memory.embedding.factory import semantic_unavailable

    if why := semantic_unavailable(cli.config.embedding, memory_query.retrieval_mode):
        out.warn(why)
    tiers = ", ".join(report.tiers) or "no tier"
    # Only a result has legs: with none, say what was searched, not which leg "answered"; results
    # no leg found are a listing (a query of punctuation or emoji has no word for keyword to match).
    if legs:
        out.info(f"answered by: {' + '.join(legs)} from {tiers}")
    elif entries:
        out.info(f"the query has no word to search: listed from {tiers}")
    else:
        out.info(f"no memories matched (searched {tiers})")


def register(app: typer.Typer) -> None:
    add_commands(app, recall)
