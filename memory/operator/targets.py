"""Which stores a maintenance run works on: agents, pools and the global tier a selection names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memory.adapters.opener import configured_on_server
from memory.agents import AgentRegistry, UnreadableCard
from memory.errors import InvalidRequestError, NotFoundError
from memory.home import Home
from memory.store_kinds import StoreKind


@dataclass(frozen=True)
class Selection:
    """What the operator named: one agent (name or id) or every agent, pools, the global tier."""

    agent: str | None = None
    all: bool = False
    pools: Sequence[str] = ()
    global_: bool = False

    def check(self, verb: str) -> None:
        if not (self.agent or self.all or self.pools or self.global_):
            raise InvalidRequestError(f"nothing to {verb}; name a store: --agent A, --all, --pool P or --global")
        if self.agent and self.all:
            does = f"{verb}es" if verb.endswith(("x", "s", "sh", "ch")) else f"{verb}s"  # reindexes, prunes
            raise InvalidRequestError(f"give --agent or --all, not both; --all already {does} every agent")


@dataclass(frozen=True)
class Target:
    """One store of a run: its kind and name (agent id, pool), its audit label and its report fields."""

    kind: StoreKind
    name: str | None
    label: str
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def agent_id(self) -> str | None:
        return self.name if self.kind is StoreKind.PRIVATE else None

    @property
    def shown(self) -> str:
        """How reports name the store: the agent's name, else the tier label."""
        return self.fields.get("agent") or self.label


def _agents(home: Home, selection: Selection) -> list[Target]:
    """The readable agents the selection names; --all leaves out the unreadable cards (see :func:`unreadable_cards`)."""
    registry = AgentRegistry(home)
    cards = registry.scan().cards if selection.all else [registry.resolve(selection.agent)] if selection.agent else []
    return [Target(StoreKind.PRIVATE, c.id, f"agent:{c.id}", {"agent": c.name, "agent_id": c.id}) for c in cards]


def unreadable_cards(home: Home, selection: Selection) -> list[UnreadableCard]:
    """The agent cards an --all run cannot read: it works on every other agent and reports these
    (a cron run never skips an agent silently). A named agent with such a card is its ConfigError instead."""
    return AgentRegistry(home).scan().unreadable if selection.all else []


def _known_pools(home: Home, names: Sequence[str]) -> list[str]:
    """``names`` once each, in order; NotFoundError (exit 3) for one that is not registered."""
    from memory.federation.pools import PoolRegistry

    registry = PoolRegistry(home)
    for name in names:
        registry.show_settings(name)
    return list(dict.fromkeys(names))


def _pool(name: str) -> Target:
    return Target(StoreKind.POOL, name, f"pool:{name}", {"tier": f"pool:{name}"})


_GLOBAL = Target(StoreKind.GLOBAL, None, "global", {"tier": "global"})


def _global_exists(home: Home, config: Any) -> bool:
    return configured_on_server(config, StoreKind.GLOBAL) or home.global_db.exists()


def prune_targets(home: Home, config: Any, selection: Selection) -> list[Target]:
    """The stores ``arcana prune`` works on.

    --agent/--all pick private stores; --pool and --global add shared tiers. A
    global tier that does not exist yet has nothing to prune and is left out
    (cron stays quiet).
    """
    selection.check("prune")
    targets = _agents(home, selection) + [_pool(n) for n in _known_pools(home, selection.pools)]
    if selection.global_ and _global_exists(home, config):
        targets.append(_GLOBAL)
    return targets


def reindex_targets(home: Home, config: Any, selection: Selection, verb: str = "reindex") -> list[Target]:
    """The stores ``arcana reindex`` (and ``consolidate``: ``verb``, which its errors name) works on:
    --all is every agent, every pool and the global tier.

    A local pool with no database yet has nothing to index and is left out; a
    tier on a server always exists. ``--global`` before the global tier exists
    is NotFoundError; ``--all`` then just has nothing global to do.
    """
    from memory.federation.pools import PoolRegistry

    selection.check(verb)
    every = PoolRegistry(home).names() if selection.all else []
    named = _known_pools(home, selection.pools)
    pools = [
        _pool(n)
        for n in dict.fromkeys([*every, *named])
        if configured_on_server(config, StoreKind.POOL, n) or home.pool_db(n).exists()
    ]
    targets = _agents(home, selection) + pools
    if selection.global_ and not _global_exists(home, config):
        raise NotFoundError("there is no global tier yet (it appears with the first promoted or global memory)")
    if (selection.global_ or selection.all) and _global_exists(home, config):
        targets.append(_GLOBAL)
    return targets
