from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, YesOpt, confirm

PoolArg = Annotated[str, typer.Argument(help="Pool name.")]
POOL_COLUMNS = ("name", "backend", "members", "vaults", "entries", "database")


def _row(info) -> tuple:
    return (
        info.name,
        info.backend if info.error is None else f"{info.backend} ({'unreachable' if info.reachable is False else 'unreadable'})",
        ", ".join(info.members) or "-",
        ", ".join(info.vaults) or "-",
        "-" if info.entries is None else info.entries,
        info.database,
    )


def _registry(cli: CliContext):
    from memory.federation.pools import PoolRegistry

    return PoolRegistry(cli.home)


@command("create")
async def create(
    cli: CliContext,
    out: Out,
    name: PoolArg,
    url: Annotated[
        str | None,
        typer.Option(help="Put the pool on a PostgreSQL server: postgresql://USER@HOST[:PORT]/DB (no password)."),
    ] = None,
    url_env: Annotated[
        str | None,
        typer.Option(help="Environment variable holding the server URL (may include a password; read at run time)."),
    ] = None,
) -> None:
    """Create a shared pool (a local file, or a server database); add agents with `arcana agent join`."""
    cli.home.ensure()
    info = await _registry(cli).create(name, url=url, url_env=url_env)
    out.data(info.as_dict(), text=lambda: info.database)
    out.info(f"pool '{name}' created; add agents with `arcana agent join AGENT {name}`")


@command("list")
async def list_(cli: CliContext, out: Out) -> None:
    """List pools with their members, attached vaults and entry counts."""
    pools = await _registry(cli).list()
    for info in pools:
        if info.error is not None and info.reachable is None:  # a pool file that could not be read
            out.warn(f"pool '{info.name}': {info.error}")
    out.data([p.as_dict() for p in pools], columns=POOL_COLUMNS, rows=lambda: [_row(p) for p in pools])


@command("show")
async def show(cli: CliContext, out: Out, name: PoolArg) -> None:
    """Show one pool: database, members, attached vaults, entries."""
    data = (await _registry(cli).show(name)).as_dict()
    out.data(data, text=lambda: "\n".join(f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in data.items()))


@command("remove")
async def remove(cli: CliContext, out: Out, name: PoolArg, yes: YesOpt = False) -> None:
    """Remove a pool; its database is moved to the trash under the home, not deleted."""
    registry = _registry(cli)
    info = await registry.show(name, count=False)
    confirm(f"remove pool '{name}' (database moved to {cli.home.trash_dir})", yes)
    removal = registry.remove(name)
    moved = removal.moved_to
    data = {"name": info.name, "moved_to": None if moved is None else str(moved), "detached_vaults": removal.detached_vaults}
    out.data(data, text=lambda: str(moved or "-"))
    if moved is not None:
        out.info(f"pool '{name}' removed; its database is in {moved}")
    if removal.detached_vaults:
        out.info(f"detached vault(s) {', '.join(removal.detached_vaults)}: still registered, attached to nothing")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Shared memory pools that groups of agents read and write.", no_args_is_help=True)
    app.add_typer(group, name="pool")
    add_commands(group, create, list_, show, remove)
