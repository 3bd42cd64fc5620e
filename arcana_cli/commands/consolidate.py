from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli import exit_codes
from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, err, left_out


@command("consolidate", quiet=True)
async def consolidate(
    cli: CliContext,
    out: Out,
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Consolidate one agent (name or id).")] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Consolidate every agent, every pool and the global tier.")
    ] = False,
    pool: Annotated[list[str] | None, typer.Option("--pool", help="Consolidate a shared pool (repeatable).")] = None,
    global_: Annotated[bool, typer.Option("--global", help="Consolidate the global tier.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would change (every decision with --json); change nothing.")] = False,
) -> None:
    """Merge restatements and digest aged-out episodes into dated facts; sources archived, never purged. Safe under cron."""
    from memory.operations.consolidate import ON_SERVER, consolidate_home
    from memory.operator.targets import Selection

    selection = Selection(agent=agent, all=all_, pools=pool or (), global_=global_)
    with out.progress_per_store("consolidating") as on_progress:
        result = await consolidate_home(cli.home, cli.config, selection, dry_run=dry_run, decisions=out.json_mode,
                                        on_progress=on_progress, actor="cli")
    for done in result.failed:  # a failure, not a warning: said even under --quiet (cron mails stderr)
        err(f"{done.name}: {done.error}")
    for done in result.stores:
        if done.plan is not None and (changed := done.plan.tally["changed"]):
            out.warn(f"{done.name}: {changed} decision(s) left for the next run: a memory they were made on "
                     "changed meanwhile")
    out.report(
        result.as_dict(),
        columns=("store", "scanned", "merged", "digests", "archived", "error"),
        rows=lambda: [_row(done) for done in result.stores],
    )
    verb = "would archive" if dry_run else "archived"
    done = len(result.stores) - len(result.failed)
    failed = f" ({len(result.failed)} more failed)" if result.failed else ""
    memories = "memory" if result.archived == 1 else "memories"
    out.info(f"{verb} {result.archived} {memories} into consolidated ones across {done} store(s){failed}")
    left_out(result.unreadable)
    for target in result.skipped:  # a known limit, not a failure: a warning (and `skipped` in --json)
        out.warn(f"{target.shown} left out: it is {ON_SERVER}; `arcana prune` bounds it")
    if result.failed:
        raise typer.Exit(exit_codes.STORAGE)
    if result.unreadable:
        raise typer.Exit(exit_codes.CONFIG)


def _row(done) -> tuple:
    counts = done.plan.counts() if done.plan else {}
    return (done.name, done.scanned, counts.get("merged", 0), counts.get("digests", 0), counts.get("archived", 0),
            done.error or "")


def register(app: typer.Typer) -> None:
    add_commands(app, consolidate)
