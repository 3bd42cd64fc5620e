from __future__ import annotations

import time
from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, confirm

IdArg = Annotated[str, typer.Argument(help="The quarantined store's id (see `arcana quarantine list`).", metavar="ID")]


@command("list")
def list_(cli: CliContext, out: Out) -> None:
    """Every quarantined store: where it came from, why, and when."""
    from memory.operations.quarantine import list_quarantined

    items = [item.as_dict() for item in list_quarantined(cli.home)]
    out.data(
        {"quarantined": items},
        columns=("id", "database", "reason", "quarantined at", "bytes"),
        rows=lambda: [(i["id"], i["database"], i["reason"], _when(i["at"]), i["bytes"]) for i in items],
    )
    if not items:
        out.info("nothing in quarantine")


@command("restore")
async def restore(cli: CliContext, out: Out, quarantine_id: IdArg) -> None:
    """Salvage every readable row into the live store (ledgered; ids it has are skipped), then trash the file."""
    from memory.operations import quarantine

    report = (await quarantine.restore(cli.home, quarantine.find(cli.home, quarantine_id))).as_dict()
    out.data(report, columns=("restored", "duplicates", "unreadable", "database"),
             rows=lambda: [(report["restored"], report["duplicates"], report["unreadable"], report["database"])])
    if report["unreadable"]:
        out.warn(f"{report['unreadable']} row(s) could not be read ({report['damaged']})")
    out.info(f"quarantined file moved to {report['trashed_to']}; run `arcana reindex` to embed restored rows")


@command("dismiss")
def dismiss(
    cli: CliContext,
    out: Out,
    quarantine_id: IdArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm without asking.")] = False,
) -> None:
    """Deal with a quarantined store without restoring it: move it to the trash."""
    from memory.operations import quarantine

    item = quarantine.find(cli.home, quarantine_id)
    confirm(f"dismiss quarantined store '{item.id}' (moved to {cli.home.trash_dir}, not restored)", yes)
    trashed = quarantine.dismiss(cli.home, item)
    out.data({"id": item.id, "trashed_to": str(trashed)}, text=lambda: str(trashed))


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + "Z" if at else "?"


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Corrupt databases moved aside: list them, salvage them back, or dismiss them.", no_args_is_help=True
    )
    app.add_typer(group, name="quarantine")
    add_commands(group, list_, restore, dismiss)
