from __future__ import annotations

import typer

from arcana_cli import exit_codes
from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out
from memory.diagnostics import run_checks


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """Check the home, config, every database and a real write → search round trip."""
        cli = ctx_of(ctx)
        checks = run(run_checks(cli.home))
        out = Out(json_mode=json_, quiet=cli.quiet)
        healthy = all(c.ok for c in checks)
        out.data(
            {"healthy": healthy, "checks": [c.as_dict() for c in checks]},
            columns=("", "check", "detail"),
            rows=lambda: [("ok" if c.ok else "FAIL", c.name, c.detail) for c in checks],
        )
        if not healthy:
            raise typer.Exit(exit_codes.FAILURE)
