from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli import exit_codes
from arcana_cli.output import Out, confirm, left_out
from memory.operations.prune import prune_home
from memory.operator.targets import Selection, prune_targets
from memory.types import PruneMode, PrunePolicy


@command("prune", quiet=True)
async def prune(
    cli: CliContext,
    out: Out,
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Prune one agent (name or id).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Prune every agent.")] = False,
    pool: Annotated[list[str] | None, typer.Option("--pool", help="Prune a shared pool (repeatable).")] = None,
    global_: Annotated[bool, typer.Option("--global", help="Prune the global tier.")] = False,
    min_importance: Annotated[
        float | None, typer.Option("--min-importance", min=0.0, max=1.0, help="Floor: below it goes.")
    ] = None,
    max_entries: Annotated[int | None, typer.Option("--max-entries", min=0, help="Keep at most N live entries.")] = None,
    max_bytes: Annotated[
        int | None, typer.Option("--max-bytes", min=0, help="Keep at most N bytes of live content (UTF-8).")
    ] = None,
    mode: Annotated[PruneMode | None, typer.Option("--mode", help="archive (default, restorable) or purge.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would go; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm a purge without asking (needed when stdin is not a terminal).")] = False,
) -> None:
    """Archive or purge low-value memories of agents, pools or the global tier. Pinned memories are never touched; safe under cron."""
    defaults = cli.config.prune
    # The rule comes from the flags or, when none is given, from prune.* (by default: archive below 0.1).
    flagged = min_importance is not None or max_entries is not None or max_bytes is not None
    floor, cap = (min_importance, max_entries) if flagged else (defaults.min_importance, defaults.max_entries)
    if floor is None and cap is None and max_bytes is None:
        raise typer.BadParameter(
            "no rule: pass --min-importance, --max-entries and/or --max-bytes, "
            "or set prune.min_importance / prune.max_entries"
        )
    policy = PrunePolicy(min_importance=floor, max_entries=cap, max_bytes=max_bytes, mode=mode or defaults.mode,
                         dry_run=dry_run)
    selection = Selection(agent=agent, all=all_, pools=pool or (), global_=global_)
    if policy.mode is PruneMode.PURGE and not dry_run and not yes:
        # A purge deletes for good (an archive is restorable): confirmed like every other destructive command,
        # once the stores it names exist (an unknown agent or pool is exit 3, not a question).
        prune_targets(cli.home, cli.config, selection)
        confirm("purge low-value memories (deleted for good, not archived)", yes)
    with out.progress_per_store("pruning") as on_progress:
        result = await prune_home(cli.home, cli.config, selection, policy, actor="cli", on_progress=on_progress)
    out.report(  # cron (--quiet): silence unless something went wrong
        result.as_dict(),
        columns=("store", "scanned", "archived", "purged", "condensed", "dry run"),
        rows=lambda: [
            (s.name, s.report.scanned, s.report.archived, s.report.purged, s.report.condensed, s.report.dry_run)
            for s in result.stores
        ],
    )
    verb, shortened = ("would remove", "would condense") if dry_run else ("removed", "condensed")
    done = [f"{verb} {result.removed} memories"] if result.removed else []
    done += [f"{shortened} {result.condensed} digests"] if result.condensed else []
    out.info(f"{' and '.join(done)} across {len(result.stores)} store(s)" if done else "nothing to prune")
    left_out(result.unreadable)
    if result.unreadable:
        raise typer.Exit(exit_codes.CONFIG)


def register(app: typer.Typer) -> None:
    add_commands(app, prune)
