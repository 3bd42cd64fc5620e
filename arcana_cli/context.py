"""Per-invocation state: the home, the config, and opening an agent's store."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import typer

from memory.agents import AgentCard, AgentRegistry
from memory.audit import AuditLog
from memory.config import ArcanaConfig, load_config
from memory.home import Home

T = TypeVar("T")


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
        return self.agents.resolve(name_or_id)

    def select_agents(self, agent: str | None, all_: bool) -> list[AgentCard]:
        """The agents a maintenance command (prune, reindex) works on: --agent A or --all."""
        if bool(agent) == all_:
            raise typer.BadParameter("give exactly one of --agent or --all")
        return self.agents.list() if all_ else [self.agent(agent)]

    @asynccontextmanager
    async def private_store(self, card: AgentCard):
        """The agent's private SQLiteAdapter, closed on exit; loud if it was quarantined."""
        from memory.adapters.sqlite import SQLiteAdapter

        store = SQLiteAdapter.for_agent(card.id, home=self.home, actor="cli")
        try:
            await store.connect()
            yield store
        finally:
            await store.aclose()
            report_quarantine(card, store)


def report_quarantine(card: AgentCard, store) -> None:
    """Say — even under --quiet, it is cron's business too — that a corrupt store was moved aside.

    Called on the way out, so a store quarantined mid-command is reported as
    well as one found corrupt at connect.
    """
    if store.quarantined_to is not None:
        from arcana_cli.output import err

        err(
            f"agent '{card.name}': its memory database was corrupt and was moved to "
            f"{store.quarantined_to}; a fresh store was started (nothing was deleted)"
        )


def ctx_of(ctx: typer.Context) -> CliContext:
    return ctx.find_root().obj


def run(awaitable: Awaitable[T]) -> T:
    return asyncio.run(awaitable)
