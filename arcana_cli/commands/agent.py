from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.command import add_commands, command
from arcana_cli.context import CliContext
from arcana_cli import exit_codes
from arcana_cli.output import Out, YesOpt, confirm, left_out

NameArg = Annotated[str, typer.Argument(help="Agent name or id.")]
PoolArg = Annotated[str, typer.Argument(help="Pool name.")]


@command("create")
def create(cli: CliContext, out: Out, name: Annotated[str, typer.Argument(help="A new agent name.")]) -> None:
    """Create an agent with its own private memory."""
    cli.home.ensure()
    card = cli.agents.create(name)
    out.data(card.as_dict(), text=lambda: card.id)


@command("list")
def list_(cli: CliContext, out: Out) -> None:
    """List agents."""
    roster = cli.agents.scan()
    cards = roster.cards
    out.data(
        [c.as_dict() for c in cards],
        columns=("name", "id", "model", "created"),
        rows=lambda: [(c.name, c.id, c.model or "-", c.created_at.date().isoformat()) for c in cards],
    )
    left_out(roster.unreadable)  # the readable agents are listed; each unreadable card is named, exit 4
    if roster.unreadable:
        raise typer.Exit(exit_codes.CONFIG)


@command("show")
def show(cli: CliContext, out: Out, name: NameArg) -> None:
    """Show an agent's card and where its memory lives."""
    from memory.federation.shared_tiers import agent_pools

    card = cli.agent(name)
    data = {
        **card.as_dict(),
        "pools": agent_pools(cli.config, card),  # membership lives in config.json, not the card
        "memory_db": str(cli.home.agent_db(card.id)),
    }
    out.data(data, text=lambda: "\n".join(f"{k}: {v}" for k, v in data.items()))


@command("set")
def set_(
    cli: CliContext,
    out: Out,
    name: NameArg,
    model: Annotated[str | None, typer.Option("--model", help="Model name from `arcana model list` ('' clears).")] = None,
    system_prompt: Annotated[str | None, typer.Option("--system-prompt", help="The agent's system prompt ('' clears).")] = None,
    weight: Annotated[
        list[str] | None, typer.Option("--weight", help="TYPE=W (0..1) recall weight per memory type; repeatable.")
    ] = None,
    extraction: Annotated[
        list[str] | None, typer.Option("--extraction", help="KEY=VALUE over memory.extraction; repeatable.")
    ] = None,
    decay: Annotated[
        list[str] | None,
        typer.Option("--decay", help="TYPE.FIELD=VALUE, e.g. episodic.half_life_days=3; repeatable."),
    ] = None,
) -> None:
    """Change an agent's model, system prompt, memory weights, decay or extraction settings."""
    from memory.config import parse_value, unknown_model
    from memory.types import MemoryType

    with cli.agents.editing(name) as card:  # a rename or another change made meanwhile is kept
        if model is not None:
            if model and model not in cli.config.models:
                raise unknown_model(model)
            card.model = model or None
        if system_prompt is not None:
            card.system_prompt = system_prompt or None
        for item in weight or ():
            kind, _, value = item.partition("=")
            try:
                memory_type, parsed = MemoryType(kind.strip()), float(value)
                if not 0.0 <= parsed <= 1.0:
                    raise ValueError
            except ValueError:
                types = ", ".join(t.value for t in MemoryType)
                raise typer.BadParameter(f"'{item}': use TYPE=W with W in 0..1 and TYPE one of {types}", param_hint="--weight") from None
            card.memory_weights[memory_type] = parsed
        updates = dict(item.partition("=")[::2] for item in extraction or ())
        if updates:
            from memory.operations.settings import extraction_with

            card.extraction = extraction_with(card.extraction, {k.strip(): parse_value(v, f"extraction.{k.strip()}") for k, v in updates.items()})
        if decay:
            from memory.ranking.decay import decay_block_with
            from memory.runtime.assembly import card_decay

            changes = []
            for item in decay:
                path, _, value = item.partition("=")
                kind, _, field = path.strip().partition(".")
                if not (kind and field and value.strip()):
                    raise typer.BadParameter(f"'{item}': use TYPE.FIELD=VALUE, e.g. episodic.half_life_days=3", param_hint="--decay")
                changes.append((kind, field, parse_value(value.strip(), f"{kind}.{field}")))
            card.decay = decay_block_with(card.decay, changes)  # a bad option: exit 2
            card_decay(cli.home, card)  # what the card still holds wrong, named (exit 4): nothing saved
    data = card.as_dict()
    out.data(data, text=lambda: "\n".join(f"{k}: {v}" for k, v in data.items()))


@command("rename")
def rename(cli: CliContext, out: Out, name: NameArg, new_name: Annotated[str, typer.Argument(help="The new name.")]) -> None:
    """Rename an agent (its id and memory stay)."""
    card = cli.agents.rename(name, new_name)
    out.data(card.as_dict(), text=lambda: card.name)


@command("delete")
async def delete(cli: CliContext, out: Out, name: NameArg, yes: YesOpt = False) -> None:
    """Move an agent and its memory to the trash under the home; withdraw its global copies."""
    from memory.operator.edits import delete_agent

    card = cli.agent(name)
    confirm(f"delete agent '{card.name}' (moved to {cli.home.trash_dir})", yes)
    removal = await delete_agent(cli.home, cli.config, card.id, actor="cli")
    out.data(removal.as_dict(), text=lambda: str(removal.moved_to))
    if removal.copies is not None and removal.copies.changed:
        out.info(f"withdrew {removal.copies.count} promoted copies from the global tier")
    out.info(f"agent '{card.name}' moved to {removal.moved_to}; delete that folder to free the space")


def _membership(cli: CliContext, out: Out, name: str, pool: str, *, member: bool) -> None:
    from memory.federation.pools import PoolRegistry

    registry = PoolRegistry(cli.home)
    if member:
        registry.show_settings(pool)  # an unknown pool is exit 3 before any agent is created
    card = cli.agent_to_store_for(name) if member else cli.agent(name)
    changed = registry.join(card, pool) if member else registry.leave(card, pool)
    out.data({"agent": card.name, "pool": pool, "member": member, "changed": changed}, text=lambda: pool)
    if not changed:
        out.info(f"agent '{card.name}' was {'already' if member else 'not'} in pool '{pool}'")


@command("join")
def join(cli: CliContext, out: Out, name: NameArg, pool: PoolArg) -> None:
    """Let an agent read and write a shared pool (an unknown agent is created, as remember does)."""
    _membership(cli, out, name, pool, member=True)


@command("leave")
def leave(cli: CliContext, out: Out, name: NameArg, pool: PoolArg) -> None:
    """Stop an agent reading and writing a shared pool (the pool keeps its memories)."""
    _membership(cli, out, name, pool, member=False)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Create, list, rename and delete agents.", no_args_is_help=True)
    app.add_typer(group, name="agent")
    add_commands(group, create, list_, show, set_, rename, delete, join, leave)
