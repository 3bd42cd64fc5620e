"""Per-invocation state: the home, the config, and opening an agent's store."""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import typer

from memory import moved_aside
from memory.agents import AgentCard, AgentRegistry
from memory.audit import AuditLog
from memory.config import ArcanaConfig, load_config
from memory.errors import ArcanaMemoryError
from memory.home import Home
from memory.store_kinds import StoreKind


@dataclass
class CliContext:
    home: Home
    quiet: bool = False
    _config: ArcanaConfig | None = field(default=None, repr=False)

    @property
    def config(self) -> ArcanaConfig:
        if self._config is None:
            self._config = load_config(self.home.config_path)
        return self._config

    @property
    def agents(self) -> AgentRegistry:
        return AgentRegistry(self.home)

    @property
    def audit(self) -> AuditLog:
        return AuditLog(self.home.audit_log)

    def agent(self, name_or_id: str) -> AgentCard:
        """An existing agent; an unknown name is exit 3 (reading never creates an agent)."""
        return self.agents.resolve(name_or_id)

    def known_pool(self, name: str | None) -> None:
        """An unregistered pool is exit 3 (as everywhere a pool is named), before any agent is made."""
        if name is not None:
            from memory.federation.pools import PoolRegistry

            PoolRegistry(self.home).show_settings(name)

    def agent_to_store_for(self, name_or_id: str) -> AgentCard:
        """The agent a command stores something for, created when no agent has that name.

        The rule (man/memory.md#agents): a command that stores for an agent
        (remember, import --agent, run, agent join) creates it; a read refuses.
        The creation is said on stderr even under --quiet — a typo must not make
        an agent unseen — with the nearest existing names.
        """
        near = self.agents.near(name_or_id)
        card, created = self.agents.resolve_or_create(name_or_id)
        if created:
            import sys

            sys.stderr.write(
                f"created agent '{card.name}' ({card.id}): no agent had that name{near}; "
                f"`arcana agent delete {card.name}` removes it\n"
            )
        return card

    @asynccontextmanager
    async def private_store(self, card: AgentCard):
        """The agent's private SQLiteAdapter, closed on exit (a corrupt one is quarantined: see below)."""
        from memory.adapters.opener import open_store

        store = open_store(self.home, StoreKind.PRIVATE, card.id, actor="cli")
        try:
            await store.connect()
            yield store
        finally:
            await store.aclose()


def quarantine_mark() -> int:
    """How many stores this process had quarantined so far."""
    return moved_aside.count()


def announce_quarantines(cli: CliContext | None, mark: int) -> bool:
    """Say — even under --quiet, it is cron's business too — which stores were moved aside since ``mark``.

    Called once a command is over, so a store quarantined mid-command is
    reported as well as one found corrupt at connect. True if any was.
    """
    moved = moved_aside.since(mark)
    if not moved or cli is None:
        return bool(moved)
    from arcana_cli.output import err
    from memory.operations.quarantine import load

    try:
        names = {cli.home.agent_db(card.id): card.name for card in cli.agents.scan().cards}
    except ArcanaMemoryError:
        names = {}
    for folder in moved:
        item = load(cli.home, folder)
        what = f"agent '{names[item.database]}': its memory database" if item.database in names else str(item.database)
        err(
            f"{what} was corrupt and was moved to {folder}; a fresh store was started (nothing was deleted); "
            "see `arcana quarantine list`"
        )
    return True


def ctx_of(ctx: typer.Context) -> CliContext:
    return ctx.find_root().obj
