from __future__ import annotations

import json
from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out
from memory.config import dump_config, get_key, load_config, parse_value, set_part, valid_keys

KeyArg = Annotated[str, typer.Argument(help="Dotted key, e.g. recall.limit.")]


@command("path")
def path(cli: CliContext, out: Out) -> None:
    """Print the config file's path."""
    out.data({"path": str(cli.home.config_path)}, text=lambda: str(cli.home.config_path))


@command("show")
def show(
    cli: CliContext,
    out: Out,
    explicit: Annotated[bool, typer.Option("--explicit", help="Only the keys config.json sets (no defaults).")] = False,
) -> None:
    """Print the effective config (defaults filled in)."""
    out.data(set_part(cli.config) if explicit else dump_config(cli.config))


@command("get")
def get(cli: CliContext, out: Out, key: KeyArg) -> None:
    """Print one value."""
    value = get_key(cli.config, key)
    out.data(value, text=lambda: value if isinstance(value, str) else json.dumps(value))


@command("set")
async def set_(
    cli: CliContext,
    out: Out,
    key: KeyArg,
    value: Annotated[str, typer.Argument(help="JSON value, or a plain string (comma-separated for a list key).")],
) -> None:
    """Validate and set one value; the file is replaced atomically."""
    from memory.operations.settings import apply_config_key

    new = await apply_config_key(cli.home, key, parse_value(value, key), notify=out.warn)
    out.data({"key": key, "value": new}, text=lambda: f"{key} = {json.dumps(new)}")


@command("validate")
def validate(cli: CliContext, out: Out) -> None:
    """Check the config file; exit 4 with the file and field when it is invalid."""
    load_config(cli.home.config_path)
    exists = cli.home.config_path.exists()
    out.data(
        {"path": str(cli.home.config_path), "valid": True, "exists": exists},
        text=lambda: f"{cli.home.config_path}: ok" + ("" if exists else " (missing: defaults apply)"),
    )


@command("keys")
def keys(cli: CliContext, out: Out) -> None:
    """List every settable key (<name> is yours to choose)."""
    names = valid_keys()
    out.data(names, text=lambda: "\n".join(names))


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Read, change and validate ~/.arcana/config.json.", no_args_is_help=True)
    app.add_typer(group, name="config")
    add_commands(group, path, show, get, set_, validate, keys)
