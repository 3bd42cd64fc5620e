"""The shared tiers an agent sees: the pools it belongs to and the vaults attached to it or them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memory.adapters.opener import open_tier
from memory.agent_links import names_agent
from memory.agents import AgentCard
from memory.config import ArcanaConfig
from memory.home import Home
from memory.protocols import MemoryAdapter
from memory.store_kinds import StoreKind


@dataclass(frozen=True)
class PoolConfig:
    """A shared-pool member to register on the federation: a pool name and its backend.

    ``read_only`` members (an attached vault) answer reads and are refused
    writes; ``label`` names the tier in reports (default ``pool:<name>``).
    """

    name: str
    adapter: MemoryAdapter
    read_only: bool = False
    label: str | None = None


def agent_pools(config: ArcanaConfig, card: AgentCard) -> list[str]:
    """Pools ``card`` belongs to: ``memory.pools`` (everyone's) plus pools listing it as a member."""
    names = set(config.memory.pools)
    names |= {name for name, pool in config.pools.items() if any(names_agent(m, card.id, card.name) for m in pool.members)}
    return sorted(names)


def pool_configs(
    home: Home,
    config: ArcanaConfig,
    card: AgentCard,
    *,
    embedding: Any | None = None,
    vector_options: Mapping[str, Any] | None = None,
    notify: Callable[[str], None] | None = None,
    actor: str = "library",
) -> list[PoolConfig]:
    """The shared tiers ``card`` sees: its pools' databases and the vaults attached to it or them.

    A vault joins read-only through :class:`VaultAdapter`: its index (with
    one-hop link expansion) when built, else a live folder scan — the same
    note ids either way, so a note seen twice is one fact.
    """
    joined = agent_pools(config, card)
    found = []
    for name in joined:
        store = open_tier(
            home, StoreKind.POOL, name, config=config, embedding=embedding, vector_options=vector_options,
            actor=actor, unreachable_degrades=True,
        )
        found.append(PoolConfig(name, store))
    for vault_name, vault in sorted(config.vaults.items()):
        if names_agent(vault.agent, card.id, card.name):
            pool = f"vault:{vault_name}"
        elif vault.pool is not None and vault.pool in joined:
            pool = vault.pool
        else:
            continue
        from memory.vaults.registry import Vault  # only when a vault is attached: ~40 ms of imports
        from memory.vaults.search import VaultAdapter

        adapter = VaultAdapter(Vault(vault_name, vault, home), gateway=embedding, notify=notify)
        found.append(PoolConfig(pool, adapter, read_only=True, label=f"vault:{vault_name}"))
    return found
