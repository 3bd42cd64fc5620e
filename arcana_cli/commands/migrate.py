from __future__ import annotations

import typer

from arcana_cli import exit_codes
from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, err
from memory.operations.schema import home_status, server_versions, upgrade_home


@command("status")
async def status(cli: CliContext, out: Out) -> None:
    """Show each database's schema version against this Arcana's."""
    rows = [row.as_dict() for row in home_status(cli.home)]
    rows += [
        {"database": r.database, "version": r.from_version, "head": r.head, "state": r.state}
        for r in await server_versions(cli.home, cli.config)
    ]
    out.data(rows, columns=("database", "version", "head", "state"), rows=lambda: [tuple(r.values()) for r in rows])


@command("up", quiet=True)
async def up(cli: CliContext, out: Out) -> None:
    """Migrate every database to the latest schema, copying each aside first."""
    with out.progress("migrating databases") as bar:
        done = await upgrade_home(cli.home, actor="cli", on_progress=bar.update)
    done += await server_versions(cli.home, cli.config, upgrade=True, actor="cli")
    results = [r.as_dict() for r in done]
    out.report(  # --quiet (a deploy script's line) prints no report, as the cron commands
        results,
        columns=("database", "from", "to", "state", "backup"),
        rows=lambda: [(r["database"], r["from"], r["to"], r["state"], r["backup"] or "-") for r in results],
    )
    migrated = sum(r.state == "migrated" for r in done)
    skipped = [r for r in done if r.state not in ("migrated", "current")]
    out.info(f"migrated {migrated} database(s)" if migrated else "nothing to migrate")
    if skipped:
        # Trigger: a database newer than this Arcana, or unreadable, or a server tier the config could not
        # open (an unset url_env). Why: the home is not at the latest schema, and a deploy's `migrate up &&
        # restart` must not go on as if it were. Outcome: the report as always, an error line even under
        # --quiet, and the code such a failure has elsewhere: 5 for a store's state; for a server not
        # checked, its config error's (2 for an unset variable, as `memory list --pool`; 4 for a bad config).
        named = "; ".join(f"{r.database}: {r.state}" for r in skipped)
        stored = [r for r in skipped if r.error is None]
        fixes = []
        if stored:
            fixes.append("upgrade Arcana for a newer one, `arcana doctor` for an unreadable one")
        if len(stored) < len(skipped):
            fixes.append("do what a not-checked one says and run again")
        err(f"{len(skipped)} database(s) skipped ({named}); {'; '.join(fixes)}")
        if stored:
            raise typer.Exit(exit_codes.STORAGE)
        codes = {exit_codes.for_error(r.error) for r in skipped}
        raise typer.Exit(exit_codes.CONFIG if exit_codes.CONFIG in codes else exit_codes.USAGE)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Schema versions of every database under the home.", no_args_is_help=True)
    app.add_typer(group, name="migrate")
    add_commands(group, status, up)
