from __future__ import annotations

import typer

from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out, QuietOpt
from memory.adapters.sqlite import SQLiteAdapter
from memory.errors import ArcanaMemoryError, SchemaTooNewError
from memory.migrations.runner import head_version
from memory.schema import read_version


async def _server_rows(cli, upgrade: bool) -> list[dict]:
    """One row per tier on a PostgreSQL server: its version against this Arcana's (upgraded with ``upgrade``)."""
    from memory.federation.assembly import server_stores
    from memory.postgres.migrations import head_version as server_head

    rows = []
    for label, store in server_stores(cli.home, cli.config):
        row = {"database": label, "version": None, "head": server_head(), "state": ""}
        if isinstance(store, Exception):
            rows.append({**row, "state": f"not checked: {store}"})
            continue
        row["database"] = f"{label} {store.path}"
        try:
            version, head = await store.pending_version()
            if upgrade and version < head:
                await store.connect()  # migrates under the server's advisory lock
                row.update(version=await store.schema_version(), state="migrated", **{"from": version})
            else:
                row.update(version=version, state="current" if version == head else "pending")
        except SchemaTooNewError:
            row["state"] = "newer than this Arcana"
        except ArcanaMemoryError as exc:
            row["state"] = f"unreachable: {exc}"
        finally:
            await store.aclose()
        rows.append(row)
    return rows


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Schema versions of every database under the home.", no_args_is_help=True)
    app.add_typer(group, name="migrate")

    @group.command("status")
    def status(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """Show each database's schema version against this Arcana's."""
        cli = ctx_of(ctx)
        head = head_version()
        rows = []
        for db in cli.home.databases():
            version, problem = read_version(db)
            state = problem or ("current" if version == head else "newer than this Arcana" if version > head else "pending")
            rows.append({"database": str(db.relative_to(cli.home.root)), "version": version, "head": head, "state": state})
        rows += run(_server_rows(cli, upgrade=False))
        Out(json_mode=json_).data(
            rows, columns=("database", "version", "head", "state"), rows=lambda: [tuple(r.values()) for r in rows]
        )

    @group.command("up")
    def up(ctx: typer.Context, json_: JsonOpt = False, quiet: QuietOpt = False) -> None:
        """Migrate every database to the latest schema, copying each aside first."""
        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=quiet or cli.quiet)
        head = head_version()
        todo = [(db, read_version(db)) for db in cli.home.databases()]

        async def go():
            results = []
            for db, (version, problem) in todo:
                entry = {"database": str(db.relative_to(cli.home.root)), "from": version, "to": version, "backup": None}
                if problem or version >= head:
                    entry["state"] = problem or ("current" if version == head else "newer than this Arcana: skipped")
                else:
                    store = SQLiteAdapter(db, backup_dir=cli.home.backups_dir, actor="cli")
                    try:
                        await store.connect()
                        entry["to"] = await store.schema_version()
                        entry["backup"] = str(store.backed_up_to) if store.backed_up_to else None
                        entry["state"] = "migrated"
                    finally:
                        await store.aclose()
                results.append(entry)
            for row in await _server_rows(cli, upgrade=True):  # servers keep no local backup: the DBA's job
                before = row.get("from", row["version"])
                results.append({"database": row["database"], "from": before, "to": row["version"], "backup": None,
                                "state": row["state"]})
            return results

        results = run(go())
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
