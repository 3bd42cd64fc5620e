"""build_federation: an agent id plus the home become a ready MemoryFederation.

The private tier is always there and opened eagerly (migrations run and a
corrupt file is quarantined before first use). The global tier exists only
when an embedder is given, so a zero-config install runs private-only. Shared
pools are registered by name; attached vaults join as read-only shared tiers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memory.adapters.base import Layered, MemoryAdapter
from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentCard
from memory.audit import AuditLog
from memory.config import ArcanaConfig
from memory.federation.budgets import ConnectionsConfig
from memory.federation.decay import DecayProfile, resolve_decay_profiles
from memory.federation.events import DegradedSink, MemoryDegradedEvent, audit_sink
from memory.federation.federation import MemoryFederation
from memory.federation.router import MemoryRouter
from memory.home import Home
from memory.operator_edits import GlobalCopies
from memory.reconcile.reconciler import Reconciler
from memory.reconcile.settings import ReconcileSettings
from memory.stores import StoreKind, open_tier, with_vectors
from memory.types import MemoryScope, MemoryType, now_utc


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


def _home(home: Home | Path | str | None) -> Home:
    return home if isinstance(home, Home) else Home.resolve(home)


async def build_federation(
    agent_id: Any,
    *,
    home: Home | Path | str | None = None,
    embedding: Any | None = None,
    pools: Sequence[PoolConfig] | None = None,
    decay_profiles: Mapping[MemoryType, DecayProfile] | None = None,
    on_degraded: DegradedSink | None = None,
    weights: Mapping[MemoryType, float] | None = None,
    actor: str = "library",
    vector_options: Mapping[str, Any] | None = None,
    global_tier: bool = True,
    config: ArcanaConfig | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    clock: Callable[[], datetime] = now_utc,
    reconcile: ReconcileSettings | None = None,
    reconcile_model: Any | None = None,
) -> MemoryFederation:
    """Assemble the tier stack for one agent and return its federation.

    With ``embedding`` (an :class:`EmbeddingGateway`) the private and global
    tiers are semantic (:class:`VectorAdapter`, options from
    ``vector_options``); the global tier at ``vector/global.db`` exists only
    then. It is shared by every agent, so it is never quarantined at open —
    corruption shows on read and its breaker isolates it. Budgets come from
    ``connections/memory-adapters.json`` (defaults when missing,
    :class:`ConfigError` when malformed); ``on_degraded`` defaults to the
    home's audit log; ``global_tier=False`` keeps global off even with an
    embedder; ``config`` (default: none, all SQLite) may put the global tier
    on a PostgreSQL server (see :func:`memory.stores.open_tier`). ``clock`` is
    what "now" is for decay and ranking (inject it to ask as of a given day).
    ``reconcile`` configures write-time reconciliation against the private
    tier (default: the offline heuristic; strategy ``off`` disables it),
    ``reconcile_model`` is the chat provider of its ``llm`` strategy.
    Raises if the private tier cannot be opened — an agent
    without its durability anchor must not start.
    """
    home = _home(home)
    connections = ConnectionsConfig.load(home.connections_path)
    private = SQLiteAdapter.for_agent(agent_id, home=home, actor=actor)
    await private.connect()
    global_ = None
    if embedding is not None and global_tier:
        global_ = open_tier(
            home, StoreKind.GLOBAL, config=config or ArcanaConfig(), embedding=embedding,
            vector_options=vector_options, budget=connections.for_tier(MemoryScope.GLOBAL), actor=actor,
        )
    private_tier = with_vectors(private, embedding, vector_options)
    router = MemoryRouter(
        private=private_tier,
        global_=global_,
        weights=weights,
        decay_profiles=decay_profiles,
        clock=clock,
        resilience=connections,
        monotonic=monotonic,
    )
    for pool in pools or ():
        router.register_pool(pool.name, pool.adapter, read_only=pool.read_only or None, label=pool.label)
    audit = AuditLog(home.audit_log)
    reconciler = Reconciler(
        private,
        private_tier if private_tier is not private else None,
        reconcile or ReconcileSettings(),
        provider=reconcile_model,
        audit=audit,
        copies=lambda: GlobalCopies.of_home(home, config or ArcanaConfig(), actor=actor),
    )
    return MemoryFederation(router, on_degraded=on_degraded or audit_sink(audit), reconciler=reconciler)


def agent_pools(config: ArcanaConfig, card: AgentCard) -> list[str]:
    """Pools ``card`` belongs to: ``memory.pools`` (everyone's) plus pools listing it as a member."""
    names = set(config.memory.pools)
    names |= {name for name, pool in config.pools.items() if card.id in pool.members or card.name in pool.members}
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
    connections = ConnectionsConfig.load(home.connections_path)
    found = []
    for name in joined:
        store = open_tier(
            home, StoreKind.POOL, name, config=config, embedding=embedding, vector_options=vector_options,
            budget=connections.for_tier(MemoryScope.SHARED, name), actor=actor,
        )
        found.append(PoolConfig(name, store))
    for vault_name, vault in sorted(config.vaults.items()):
        if vault.agent in (card.id, card.name):
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


async def federation_for_agent(
    card: AgentCard,
    *,
    home: Home | Path | str | None = None,
    config: ArcanaConfig | None = None,
    embedding: Any | None = None,
    on_degraded: DegradedSink | None = None,
    notify: Callable[[str], None] | None = None,
    actor: str = "library",
) -> MemoryFederation:
    """The federation a stored agent runs with, from its card and ``config.json``.

    Weights and decay come from the card; pools and vaults from the config;
    hybrid fusion weights from ``embedding``. ``memory.global = "none"``
    switches the global tier off. (``memory.enabled`` is not read here: it
    decides whether ``arcana run`` uses memory at all, while explicit memory
    commands always reach the agent's tiers.) ``notify`` receives the vector
    layer's fallback notices.
    """
    from memory.config import load_config

    home = _home(home)
    config = config or load_config(home.config_path)
    from memory.embedding.factory import vector_options as configured

    vector_options = {**configured(config.embedding), "notify": notify}
    return await build_federation(
        card.id,
        home=home,
        embedding=embedding,
        pools=pool_configs(
            home, config, card, embedding=embedding, vector_options=vector_options, notify=notify, actor=actor
        ),
        decay_profiles=resolve_decay_profiles(card.decay, source=f"agent '{card.name}' decay"),
        on_degraded=on_degraded,
        weights=card.memory_weights,
        actor=actor,
        vector_options=vector_options,
        global_tier=config.memory.global_ != "none",
        reconcile=reconcile_settings(config, card),
        reconcile_model=_reconcile_model(config, card),
        config=config,
    )


def reconcile_settings(config: ArcanaConfig, card: AgentCard) -> ReconcileSettings:
    """``memory.reconcile`` from config.json, in the language the agent's extraction uses."""
    block = config.memory.reconcile
    return ReconcileSettings(
        strategy=block.strategy,
        min_similarity=block.min_similarity,
        timeout_seconds=block.timeout_seconds,
        language=config.memory.extraction.effective().language,
    )


def _reconcile_model(config: ArcanaConfig, card: AgentCard) -> Any | None:
    """The agent's model for the ``llm`` strategy; None (the heuristic decides) when none is configured."""
    if config.memory.reconcile.strategy != "llm":
        return None
    from memory.errors import ConfigError, NotFoundError
    from memory.models.registry import provider_for, resolve_model_name

    try:
        return provider_for(config, resolve_model_name(config, card))
    except (ConfigError, NotFoundError):
        return None


def quarantine_events(federation: MemoryFederation) -> list[MemoryDegradedEvent]:
    """The private tier's quarantine, if it happened, as a read's degraded event.

    Trigger: the private store was found corrupt and moved aside during this
    federation's life. Why: the read was then answered by a fresh, empty store,
    so whatever it held is missing from the answer — as with any tier that
    dropped out. Outcome: one ``corruption`` event naming where the file went.
    """
    store = private_store(federation)
    if store.quarantined_to is None:
        return []
    tier = federation.router.private
    return [
        MemoryDegradedEvent(
            tier=tier.name,
            scope=tier.scope.value,
            op="read",
            reason="corruption",
            detail=f"{store.path} was corrupt and was moved to {store.quarantined_to}; answered from a fresh, empty store",
        )
    ]


def private_store(federation: MemoryFederation) -> SQLiteAdapter:
    """The private tier's SQLite store, under any vector layer (e.g. to see ``quarantined_to``)."""
    backend = federation.router.private.backend
    return backend.store if isinstance(backend, Layered) else backend
