from __future__ import annotations

import typer

from arcana_cli.context import ctx_of
from arcana_cli.output import JsonOpt, Out
from memory.config import load_config, save_config


def register(app: typer.Typer) -> None:
    @app.command("init")
    def init(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """Create the home directory and a default config (idempotent)."""
        cli = ctx_of(ctx)
        out = Out(json_mode=json_, quiet=cli.quiet)
        home = cli.home
        existed = home.config_path.exists()
        home.ensure()
        if not existed:
            save_config(home.config_path, load_config(home.config_path))
        else:
            load_config(home.config_path)  # validate what is there; never overwrite it
        out.data(
            {"home": str(home.root), "config": str(home.config_path), "created": not existed},
            text=lambda: str(home.root),
        )
        out.info(("created" if not existed else "already initialised:") + f" {home.root}")
