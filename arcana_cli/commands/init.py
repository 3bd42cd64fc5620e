from __future__ import annotations

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out
from memory.config import config_lock, load_config, save_config


@command("init")
def init(cli: CliContext, out: Out) -> None:
    """Create the home directory and a default config (idempotent)."""
    home = cli.home
    home.ensure()
    with config_lock(home.config_path):  # a config another command writes meanwhile is never overwritten
        existed = home.config_path.exists()
        if not existed:
            save_config(home.config_path, load_config(home.config_path))
        else:
            load_config(home.config_path)  # validate what is there; never overwrite it
    out.data(
        {"home": str(home.root), "config": str(home.config_path), "created": not existed},
        text=lambda: str(home.root),
    )
    out.info(("created" if not existed else "already initialised:") + f" {home.root}")


def register(app: typer.Typer) -> None:
    add_commands(app, init)
