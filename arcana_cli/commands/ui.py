"""`arcana ui`: the local web view (arcana_cli/ui/), on loopback, behind a token printed once."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out


@command("ui", json=False)
async def ui(
    cli: CliContext,
    out: Out,
    bind: Annotated[
        str,
        typer.Option("--bind", help="Loopback HOST:PORT to serve on (port 0 picks a free one)."),
    ] = "127.0.0.1:8765",
) -> None:
    """Serve a local web view of agents, pools and memories (search, history, graph, audit; hide, forget, restore, pin)."""
    from arcana_cli.loopback import new_token, parse_bind
    from arcana_cli.ui.server import bind as listen
    from arcana_cli.ui.server import serve

    try:
        host, port = parse_bind(bind, "--bind", any_port=True)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--bind") from None
    try:
        sock = listen(host, port)
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another port, or 0 for a free one", param_hint="--bind"
        ) from None

    def announce(url: str) -> None:  # printed once, to stderr even under --quiet: without it nobody can connect
        sys.stderr.write(f"arcana ui: serving {cli.home.root} on {url}\n")
        sys.stderr.flush()

    await serve(cli.home, sock, new_token(), announce)


def register(app: typer.Typer) -> None:
    add_commands(app, ui)
