from __future__ import annotations

from typing import Annotated

import typer

from arcana_cli.commands.memory_cmd import confirm
from arcana_cli.context import ctx_of, run
from arcana_cli.output import JsonOpt, Out, YesOpt
from memory.agents import AgentRegistry

NameArg = Annotated[str, typer.Argument(help="Agent name or id.")]


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Create, list, rename and delete agents.", no_args_is_help=True)
    app.add_typer(group, name="agent")

    @group.command("create")
    def create(ctx: typer.Context, name: Annotated[str, typer.Argument(help="A new agent name.")], json_: JsonOpt = False) -> None:
        """Create an agent with its own private memory."""
        cli = ctx_of(ctx)
        cli.home.ensure()
        card = cli.agents.create(name)
        Out(json_mode=json_, quiet=cli.quiet).data(AgentRegistry.describe(card), text=lambda: card.id)

    @group.command("list")
    def list_(ctx: typer.Context, json_: JsonOpt = False) -> None:
        """List agents."""
        cli = ctx_of(ctx)
        cards = cli.agents.list()
        Out(json_mode=json_, quiet=cli.quiet).data(
            [AgentRegistry.describe(c) for c in cards],
            columns=("name", "id", "model", "created"),
            rows=lambda: [(c.name, c.id, c.model or "-", c.created_at.date().isoformat()) for c in cards],
        )

    @group.command("show")
    def show(ctx: typer.Context, name: NameArg, json_: JsonOpt = False) -> None:
        """Show an agent's card and where its memory lives."""
        cli = ctx_of(ctx)
        card = cli.agent(name)
        from memory.federation.assembly import agent_pools

        data = {
            **AgentRegistry.describe(card),
            "pools": agent_pools(cli.config, card),  # membership lives in config.json, not the card
            "memory_db": str(cli.home.agent_db(card.id)),
        }
        Out(json_mode=json_, quiet=cli.quiet).data(
            data, text=lambda: "\n".join(f"{k}: {v}" for k, v in data.items())
        )

    @group.command("set")
    def set_(
        ctx: typer.Context,
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
        json_: JsonOpt = False,
    ) -> None:
        """Change an agent's model, system prompt, memory weights, decay or extraction settings."""
        from memory.config import ExtractionConfig, parse_value
        from memory.errors import ConfigError, NotFoundError
        from memory.types import MemoryType

        cli = ctx_of(ctx)
        card = cli.agent(name)
        if model is not None:
            if model and model not in cli.config.models:
                raise NotFoundError(f"no model named '{model}'; add it with `arcana model add {model} ...`")
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
            merged = {**card.extraction, **{k.strip(): parse_value(v) for k, v in updates.items()}}
            try:
                ExtractionConfig.model_validate(merged)
            except ValueError as exc:
                raise ConfigError(f"agent '{card.name}' extraction: {str(exc).splitlines()[-1].strip()}") from None
            card.extraction = merged
        if decay:
            from memory.federation.decay import resolve_decay_profiles

            overrides = {kind: dict(fields) for kind, fields in card.decay.items()}
            for item in decay:
                path, _, value = item.partition("=")
                kind, _, field = path.strip().partition(".")
                if not (kind and field and value.strip()):
                    raise typer.BadParameter(f"'{item}': use TYPE.FIELD=VALUE, e.g. episodic.half_life_days=3", param_hint="--decay")
                overrides.setdefault(kind, {})[field] = parse_value(value.strip())
            resolve_decay_profiles(overrides, source=f"agent '{card.name}' decay")  # ConfigError names the field
            card.decay = overrides
        cli.agents.save(card)
        Out(json_mode=json_, quiet=cli.quiet).data(
            AgentRegistry.describe(card), text=lambda: "\n".join(f"{k}: {v}" for k, v in AgentRegistry.describe(card).items())
        )

    @group.command("rename")
    def rename(ctx: typer.Context, name: NameArg, new_name: Annotated[str, typer.Argument(help="The new name.")], json_: JsonOpt = False) -> None:
        """Rename an agent (its id and memory stay)."""
        cli = ctx_of(ctx)
        card = cli.agents.rename(name, new_name)
        Out(json_mode=json_, quiet=cli.quiet).data(AgentRegistry.describe(card), text=lambda: card.name)

    @group.command("delete")
    def delete(ctx: typer.Context, name: NameArg, yes: YesOpt = False, json_: JsonOpt = False) -> None:
        """Move an agent and its memory to the trash under the home; withdraw its global copies."""
        from memory.operator_edits import delete_agent

        cli = ctx_of(ctx)
        card = cli.agent(name)
        confirm(f"delete agent '{card.name}' (moved to {cli.home.trash_dir})", yes)
        removal = run(delete_agent(cli.home, cli.config, card.id, actor="cli"))
        out = Out(json_mode=json_, quiet=cli.quiet)
        out.data(removal.as_dict(), text=lambda: str(removal.moved_to))
        if removal.copies is not None and removal.copies.changed:
            out.info(f"withdrew {removal.copies.count} promoted copies from the global tier")
        out.info(f"agent '{card.name}' moved to {removal.moved_to}; delete that folder to free the space")

    def _membership(ctx: typer.Context, name: str, pool: str, json_: bool, *, member: bool) -> None:
        from memory.federation.pools import PoolRegistry

        cli = ctx_of(ctx)
        card = cli.agent(name)
        registry = PoolRegistry(cli.home)
        changed = registry.join(card, pool) if member else registry.leave(card, pool)
        out = Out(json_mode=json_, quiet=cli.quiet)
        out.data({"agent": card.name, "pool": pool, "member": member, "changed": changed}, text=lambda: pool)
        if not changed:
            out.info(f"agent '{card.name}' was {'already' if member else 'not'} in pool '{pool}'")

    @group.command("join")
    def join(ctx: typer.Context, name: NameArg, pool: Annotated[str, typer.Argument(help="Pool name.")], json_: JsonOpt = False) -> None:
        """Let an agent read and write a shared pool."""
        _membership(ctx, name, pool, json_, member=True)

    @group.command("leave")
    def leave(ctx: typer.Context, name: NameArg, pool: Annotated[str, typer.Argument(help="Pool name.")], json_: JsonOpt = False) -> None:
        """Stop an agent reading and writing a shared pool (the pool keeps its memories)."""
        _membership(ctx, name, pool, json_, member=False)
