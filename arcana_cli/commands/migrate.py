from __future__ import annotations

import typer

from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out, QuietOpt
from memory.migrations.status import home_status, server_versions, upgrade_home
from memory.postgres.migrations import head_version as server_head


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Schema versions of every database under the home.", no_args_is_help=True)
    app.add_typer(group, name="migrate")

    @group.command("status")
    def status(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """Show each database's schema version against this Arcana's."""
        cli = ctx_of(ctx)
        rows = [row.as_dict() for row in home_status(cli.home)]
        rows += [
            {"database": r.database, "version": r.from_version, "head": server_head(), "state": r.state}
            for r in run(server_versions(cli.home, cli.config))
        ]
        Out(json_mode=json_).data(
            rows, columns=("database", "version", "head", "state"), rows=lambda: [tuple(r.values()) for r in rows]
        )

    @group.command("up")
    def up(ctx: typer.Context, json_: JsonOpt = False, quiet: QuietOpt = False) -> None:
        """Migrate every database to the latest schema, copying each aside first."""
        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=quiet or cli.quiet)
        results = [r.as_dict() for r in run(upgrade_home(cli.home, actor="cli"))]
        results += [r.as_dict() for r in run(server_versions(cli.home, cli.config, upgrade=True, actor="cli"))]
        out.data(
            results,
            columns=("database", "from", "to", "state", "backup"),
            rows=lambda: [(r["database"], r["from"], r["to"], r["state"], r["backup"] or "-") for r in results],
        )
        migrated = sum(r["state"] == "migrated" for r in results)
        skipped = sum(r["state"] not in ("migrated", "current") for r in results)
        out.info(f"migrated {migrated} database(s)" if migrated else "nothing to migrate")
        if skipped:
            out.warn(f"{skipped} database(s) skipped (newer than this Arcana, or unreadable); see the table")
