from __future__ import annotations

import time
from typing import Annotated

import typer

from arcana_cli.commands.memory_cmd import confirm
from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out

IdArg = Annotated[str, typer.Argument(help="The quarantined store's id (see `arcana quarantine list`).", metavar="ID")]


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="Corrupt databases moved aside: list them, salvage them back, or dismiss them.", no_args_is_help=True
    )
    app.add_typer(group, name="quarantine")

    @group.command("list")
    def list_(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """Every quarantined store: where it came from, why, and when."""
        from memory.quarantine import list_quarantined

        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        items = [item.as_dict() for item in list_quarantined(cli.home)]
        out.data(
            {"quarantined": items},
            columns=("id", "database", "reason", "quarantined at", "bytes"),
            rows=lambda: [(i["id"], i["database"], i["reason"], _when(i["at"]), i["bytes"]) for i in items],
        )
        if not items:
            out.info("nothing in quarantine")

    @group.command("restore")
    def restore(ctx: typer.Context, quarantine_id: IdArg, json_: JsonOpt = False) -> None:
        """Salvage every readable row into the live store (ledgered; ids it has are skipped), then trash the file."""
        from memory import quarantine

        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        report = run(quarantine.restore(cli.home, quarantine.find(cli.home, quarantine_id))).as_dict()
        out.data(report, columns=("restored", "duplicates", "unreadable", "database"),
                 rows=lambda: [(report["restored"], report["duplicates"], report["unreadable"], report["database"])])
        if report["unreadable"]:
            out.warn(f"{report['unreadable']} row(s) could not be read ({report['damaged']})")
        out.info(f"quarantined file moved to {report['trashed_to']}; run `arcana reindex` to embed restored rows")

    @group.command("dismiss")
    def dismiss(
        ctx: typer.Context,
        quarantine_id: IdArg,
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Confirm without asking.")] = False,
        json_: JsonOpt = False,
    ) -> None:
        """Deal with a quarantined store without restoring it: move it to the trash."""
        from memory import quarantine

        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        item = quarantine.find(cli.home, quarantine_id)
        confirm(f"dismiss quarantined store '{item.id}' (moved to {cli.home.trash_dir}, not restored)", yes)
        trashed = quarantine.dismiss(cli.home, item)
        out.data({"id": item.id, "trashed_to": str(trashed)}, text=lambda: str(trashed))


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + "Z" if at else "?"
