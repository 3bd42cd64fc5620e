from __future__ import annotations

import json
from typing import Annotated

import typer

from arcana_cli.context import ctx_of
from arcana_cli.output import JsonOpt, Out
from memory.config import dump_config, get_key, load_config, parse_value, save_config, set_key, valid_keys


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Read, change and validate ~/.arcana/config.json.", no_args_is_help=True)
    app.add_typer(group, name="config")

    @group.command("path")
    def path(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """Print the config file's path."""
        cli = ctx_of(ctx)
        Out(json_mode=json_).data({"path": str(cli.home.config_path)}, text=lambda: str(cli.home.config_path))

    @group.command("show")
    def show(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """Print the effective config (defaults filled in)."""
        cli = ctx_of(ctx)
        Out(json_mode=json_).data(dump_config(cli.config))

    @group.command("get")
    def get(ctx: typer.Context, key: Annotated[str, typer.Argument(help="Dotted key, e.g. recall.limit.")], json_: JsonOpt = False) -> None:
        """Print one value."""
        value = get_key(ctx_of(ctx).config, key)
        Out(json_mode=json_).data(
            value, text=lambda: value if isinstance(value, str) else json.dumps(value)
        )

    @group.command("set")
    def set_(
        ctx: typer.Context,
        key: Annotated[str, typer.Argument(help="Dotted key, e.g. recall.limit.")],
        value: Annotated[str, typer.Argument(help="JSON value, or a plain string.")],
        json_: JsonOpt = False,
    ) -> None:
        """Validate and set one value; the file is replaced atomically."""
        cli = ctx_of(ctx)
        updated = set_key(load_config(cli.home.config_path), key, parse_value(value))
        cli.home.ensure()
        save_config(cli.home.config_path, updated)
        new = get_key(updated, key)
        Out(json_mode=json_, quiet=cli.quiet).data({"key": key, "value": new}, text=lambda: f"{key} = {json.dumps(new)}")

    @group.command("validate")
    def validate(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """Check the config file; exit 4 with the file and field when it is invalid."""
        cli = ctx_of(ctx)
        load_config(cli.home.config_path)
        exists = cli.home.config_path.exists()
        Out(json_mode=json_).data(
            {"path": str(cli.home.config_path), "valid": True, "exists": exists},
            text=lambda: f"{cli.home.config_path}: ok" + ("" if exists else " (missing: defaults apply)"),
        )

    @group.command("keys")
    def keys(json_: JsonOpt = False) -> None:
        """List every settable key (<name> is yours to choose)."""
        names = valid_keys()
        Out(json_mode=json_).data(names, text=lambda: "\n".join(names))
