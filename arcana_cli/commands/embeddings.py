from __future__ import annotations

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli.output import Out


@command("status")
async def status(cli: CliContext, out: Out) -> None:
    """Per database: pinned model, family, dimension, rows embedded and missing."""
    from memory.operations.embedding_status import database_status

    rows = await database_status(cli.home)
    out.data(
        {"databases": [r.as_dict() for r in rows]},
        columns=("database", "model", "family", "dim", "rows", "embedded", "missing", "note"),
        rows=lambda: [
            (r.agent or r.database, r.model, r.family, r.dimension, r.rows, r.embedded, r.missing, r.note)
            for r in rows
        ],
    )
    if not rows:
        out.info("no databases yet")


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Inspect vector indexes and model pins.", no_args_is_help=True)
    app.add_typer(group, name="embeddings")
    add_commands(group, status)
