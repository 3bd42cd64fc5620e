from __future__ import annotations

import json
from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out
from memory.config import dump_config, editing_config, get_key, load_config, parse_value, set_key, valid_keys

KeyArg = Annotated[str, typer.Argument(help="Dotted key, e.g. recall.limit.")]


@command("path")
def path(cli: CliContext, out: Out) -> None:
    """Print the config file's path."""
    out.data({"path": str(cli.home.config_path)}, text=lambda: str(cli.home.config_path))


@command("show")
def show(cli: CliContext, out: Out) -> None:
    """Print the effective config (defaults filled in)."""
    out.data(dump_config(cli.config))


@command("get")
def get(cli: CliContext, out: Out, key: KeyArg) -> None:
    """Print one value."""
    value = get_key(cli.config, key)
    out.data(value, text=lambda: value if isinstance(value, str) else json.dumps(value))


@command("set")
def set_(
    cli: CliContext,
    out: Out,
    key: KeyArg,
    value: Annotated[str, typer.Argument(help="JSON value, or a plain string (comma-separated for a list key).")],
) -> None:
    """Validate and set one value; the file is replaced atomically."""
    from memory.vaults.registry import VaultRegistry

    parsed = parse_value(value)
    vaults = VaultRegistry(cli.home)
    parts = key.split(".")

    def changed(config):
        """The config with the key set, a vault's held to `vault add`'s rules (its agent stored by id)."""
        config = set_key(config, key, parsed)
        if key == "memory.extraction.language" and isinstance(parsed, str):
            from memory.extraction.signals import check_language

            check_language(parsed)
        return vaults.settled(config, parts[1], parts[2]) if parts[0] == "vaults" and len(parts) == 3 else config

    changed(load_config(cli.home.config_path))  # a bad key or value is refused before the home is made
    cli.home.ensure()
    with editing_config(cli.home.config_path) as edit:  # another command's change made meanwhile is kept
        edit.config = changed(edit.config)
    new = get_key(edit.config, key)
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
