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
        results = [r.as_dict() for r in await upgrade_home(cli.home, actor="cli", on_progress=bar.update)]
    results += [r.as_dict() for r in await server_versions(cli.home, cli.config, upgrade=True, actor="cli")]
    if out.json_mode or not out.quiet:  # --quiet (a deploy script's line) prints no report, as the cron commands
        out.data(
            results,
            columns=("database", "from", "to", "state", "backup"),
            rows=lambda: [(r["database"], r["from"], r["to"], r["state"], r["backup"] or "-") for r in results],
        )
    migrated = sum(r["state"] == "migrated" for r in results)
    skipped = [r for r in results if r["state"] not in ("migrated", "current")]
    out.info(f"migrated {migrated} database(s)" if migrated else "nothing to migrate")
    if skipped:
        # Trigger: a database newer than this Arcana, or unreadable. Why: the home is not at the latest
        # schema, and a deploy's `migrate up && restart` must not go on as if it were. Outcome: the report
        # as always, an error line even under --quiet, exit 5 (the storage code those states have elsewhere).
        named = "; ".join(f"{r['database']}: {r['state']}" for r in skipped)
        err(f"{len(skipped)} database(s) skipped ({named}); upgrade Arcana for a newer one, "
            "`arcana doctor` for an unreadable one")
        raise typer.Exit(exit_codes.STORAGE)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Schema versions of every database under the home.", no_args_is_help=True)
    app.add_typer(group, name="migrate")
    add_commands(group, status, up)
