from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli import exit_codes
from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, err, left_out


@command("reindex", quiet=True)
async def reindex(
    cli: CliContext,
    out: Out,
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Reindex one agent (name or id).")] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Reindex every agent, every pool and the global tier.")
    ] = False,
    pool: Annotated[list[str] | None, typer.Option("--pool", help="Reindex a shared pool (repeatable).")] = None,
    global_: Annotated[bool, typer.Option("--global", help="Reindex the global tier.")] = False,
    embeddings: Annotated[
        bool, typer.Option("--embeddings", help="Only vectors: skip rebuilding the keyword index.")
    ] = False,
    re_embed: Annotated[
        bool, typer.Option("--re-embed", help="Rebuild every vector with --model, then re-pin to it.")
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", help="Model for --re-embed (a fastembed name, or ollama:NAME).")
    ] = None,
) -> None:
    """Backfill missing vectors (and rebuild the keyword index) of agents, pools, global; safe under cron."""
    from memory.operations.reindex import reindex_home
    from memory.operator.targets import Selection

    if re_embed != bool(model):
        raise typer.BadParameter("--re-embed and --model go together", param_hint="--model")
    selection = Selection(agent=agent, all=all_, pools=pool or (), global_=global_)
    with out.progress_per_store("embedding") as on_progress:
        result = await reindex_home(
            cli.home, cli.config, selection, keyword=not embeddings, model=model,
            notify=out.warn, on_progress=on_progress, actor="cli",
        )
    if not cli.config.embedding.providers and model is None:
        out.info("keyword-only home (embedding.providers is empty): vectors left alone")
    for done in result.stores:
        if done.error is not None:  # a failure, not a warning: said even under --quiet (cron mails stderr)
            err(f"{done.name}: {done.error}")
        for entry_id, reason in done.report.vectors.skipped if done.report and done.report.vectors else ():
            out.warn(f"{done.name}: skipped {entry_id}: {reason}")
    out.report(
        result.as_dict(),
        columns=("store", "model", "index", "to embed", "embedded", "skipped", "error"),
        rows=lambda: [_row(done) for done in result.stores],
    )
    left_out(result.unreadable)
    if result.failed:
        raise typer.Exit(exit_codes.STORAGE)
    if result.unreadable:
        raise typer.Exit(exit_codes.CONFIG)


def _row(done) -> tuple:
    vectors = done.report.vectors if done.report else None
    return (
        done.name,
        vectors and vectors.model,
        vectors and vectors.vec_table,
        vectors and vectors.total,
        vectors and vectors.embedded,
        len(vectors.skipped) if vectors else 0,
        done.error or "",
    )


def register(app: typer.Typer) -> None:
    add_commands(app, reindex)
