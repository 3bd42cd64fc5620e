from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.commands.memory_cmd import confirm
from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out, YesOpt

PoolArg = Annotated[str, typer.Argument(help="Pool name.")]
POOL_COLUMNS = ("name", "backend", "members", "vaults", "entries", "database")


def _row(info) -> tuple:
    return (
        info.name,
        info.backend if info.reachable is not False else f"{info.backend} (unreachable)",
        ", ".join(info.members) or "-",
        ", ".join(info.vaults) or "-",
        "-" if info.entries is None else info.entries,
        info.database,
    )


def register(app: typer.Typer) -> None:
    from memory.federation.pools import PoolRegistry

    group = typer.Typer(help="Shared memory pools that groups of agents read and write.", no_args_is_help=True)
    app.add_typer(group, name="pool")

    @group.command("create")
    def create(
        ctx: typer.Context,
        name: PoolArg,
        url: Annotated[
            str | None,
            typer.Option(help="Put the pool on a PostgreSQL server: postgresql://USER@HOST[:PORT]/DB (no password)."),
        ] = None,
        url_env: Annotated[
            str | None,
            typer.Option(help="Environment variable holding the server URL (may include a password; read at run time)."),
        ] = None,
        json_: JsonOpt = False,
    ) -> None:
        """Create a shared pool (a local file, or a server database); add agents with `arcana agent join`."""
        cli = ctx_of(ctx)
        cli.home.ensure()
        info = run(PoolRegistry(cli.home).create(name, url=url, url_env=url_env))
        out = Out(json_mode=json_, quiet=cli.quiet)
        out.data(info.as_dict(), text=lambda: info.database)
        out.info(f"pool '{name}' created; add agents with `arcana agent join AGENT {name}`")

    @group.command("list")
    def list_(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """List pools with their members, attached vaults and entry counts."""
        cli = ctx_of(ctx)
        pools = run(PoolRegistry(cli.home).list())
        Out(json_mode=json_, quiet=cli.quiet).data(
            [p.as_dict() for p in pools], columns=POOL_COLUMNS, rows=lambda: [_row(p) for p in pools]
        )

    @group.command("show")
    def show(ctx: typer.Context, name: PoolArg, json_: JsonOpt = False) -> None:
        """Show one pool: database, members, attached vaults, entries."""
        cli = ctx_of(ctx)
        info = run(PoolRegistry(cli.home).show(name))
        data = info.as_dict()
        Out(json_mode=json_, quiet=cli.quiet).data(
            data,
            text=lambda: "\n".join(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in data.items()),
        )

    @group.command("remove")
    def remove(ctx: typer.Context, name: PoolArg, yes: YesOpt = False, json_: JsonOpt = False) -> None:
        """Remove a pool; its database is moved to the trash under the home, not deleted."""
        cli = ctx_of(ctx)
        registry = PoolRegistry(cli.home)
        info = run(registry.show(name, count=False))
        confirm(f"remove pool '{name}' (database moved to {cli.home.trash_dir})", yes)
        moved = registry.remove(name)
        out = Out(json_mode=json_, quiet=cli.quiet)
        out.data({"name": info.name, "moved_to": None if moved is None else str(moved)}, text=lambda: str(moved or "-"))
        if moved is not None:
            out.info(f"pool '{name}' removed; its database is in {moved}")
