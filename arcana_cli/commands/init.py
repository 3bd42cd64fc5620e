from __future__ import annotations

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out
from memory.config import editing_config


@command("init")
def init(cli: CliContext, out: Out) -> None:
    """Create the home directory and an empty config.json (idempotent)."""
    home = cli.home
    home.ensure()
    # Validates what is there, never rewrites it; a missing file is written as {}: every default stays
    # implicit, so a better one in a later version reaches this user (`config show` prints them all).
    with editing_config(home.config_path):
        existed = home.config_path.exists()
    out.data(
        {"home": str(home.root), "config": str(home.config_path), "created": not existed},
        text=lambda: str(home.root),
    )
    out.info(("created" if not existed else "already initialised:") + f" {home.root}")


def register(app: typer.Typer) -> None:
    add_commands(app, init)
