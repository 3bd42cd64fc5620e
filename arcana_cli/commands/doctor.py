from __future__ import annotations

import typer

from arcana_cli import exit_codes
from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out, err
from memory.operations.doctor import run_checks


@command("doctor")
async def doctor(cli: CliContext, out: Out) -> None:
    """Check the home, config, every database and a real write → search round trip."""
    with out.progress("checking databases") as bar:
        checks = await run_checks(cli.home, on_progress=bar.update)
    healthy = all(c.ok for c in checks)
    out.data(
        {"healthy": healthy, "checks": [c.as_dict() for c in checks]},
        columns=("", "check", "detail"),
        rows=lambda: [("ok" if c.ok else "FAIL", c.name, c.detail) for c in checks],
    )
    if not healthy:  # the report is data; the failure is also one line on stderr, --quiet or not
        failed = [c.name for c in checks if not c.ok]
        err(f"{len(failed)} check(s) failed: {', '.join(failed)}; each FAIL row says what is wrong and how to fix it")
        raise typer.Exit(exit_codes.FAILURE)


def register(app: typer.Typer) -> None:
    add_commands(app, doctor)
