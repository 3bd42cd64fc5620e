"""build_federation: an agent id plus the home become a ready MemoryFederation.

The private tier is always there and opened eagerly (migrations run and a
corrupt file is quarantined before first use). The global tier exists only
when an embedder is given, so a zero-config install runs private-only. Shared
pools are registered by name; attached vaults join as read-only shared tiers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memory.adapters.absent import AbsentStore
from memory.adapters.opener import made_yet, open_tier, with_vectors
from memory.adapters.sqlite import SQLiteAdapter
from memory.agent_lock import AgentPresence, connect_agent_store
from memory.agents import AgentCard
from memory.audit import AuditLog
from memory.budgets import ConnectionsConfig
from memory.config import ArcanaConfig, ExtractionConfig, ExtractionSettings, ReconcileSettings
from memory.errors import ConfigError
from memory.federation.events import DegradedSink, MemoryDegradedEvent, audit_sink
from memory.federation.federation import MemoryFederation
from memory.federation.router import MemoryRouter
from memory.federation.shared_tiers import PoolConfig, pool_configs
from memory.home import Home
from memory.operator.edits import GlobalCopies
from memory.protocols import Closeable, Layered
from memory.ranking.decay import DecayProfile, resolve_decay_profiles
from memory.reconcile.reconciler import Reconciler
from memory.store_kinds import StoreKind
from memory.types import MemoryType, now_utc


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
    confidence_cap: float | None = None,
    agent_name: str | None = None,
    notify: Callable[[str], None] | None = None,
    reading: bool = False,
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
    on a PostgreSQL server (see :func:`memory.adapters.opener.open_tier`). ``clock`` is
    what "now" is for decay and ranking (inject it to ask as of a given day).
    ``reconcile`` configures write-time reconciliation against the private
    tier (default: the offline heuristic; strategy ``off`` disables it),
    ``reconcile_model`` is the chat provider of its ``llm`` strategy.
    ``confidence_cap`` (default: config's ``agent_confidence_cap``) is the
    most confidence an agent-asserted write is stored with.
    ``agent_name`` (a stored agent's, from its card) guards the federation with
    the agent's lock (:class:`AgentPresence`): its private store is opened only
    while the card is there, so an agent deleted after it was resolved is not
    made again as an empty store, and its writes stop once it is deleted or its
    store replaced; ``notify`` hears when a write waits on that lock. Raises if the private tier
    cannot be opened — an agent without its durability anchor must not start. ``reading`` (a
    recall, a context block) leaves the home as it was: a private store or a local global tier not
    made yet is not made: each answers empty.
    """
    home = _home(home)
    connections = ConnectionsConfig.load(home.connections_path)
    absent = reading and not home.agent_db(str(agent_id)).exists()
    if absent:  # nothing to open, lock or reconcile against: the agent has stored nothing, and nothing is written
        private, presence = AbsentStore(home.agent_db(str(agent_id))), None
    else:
        private, presence = await _open_private(home, agent_id, agent_name, actor, notify)

    def open_global(config: ArcanaConfig) -> Any:
        return open_tier(
            home, StoreKind.GLOBAL, config=config, embedding=embedding,
            vector_options=vector_options, actor=actor,
            unreachable_degrades=True,
        )

    global_ = None
    if embedding is not None and global_tier:
        unmade = reading and not made_yet(home, config or ArcanaConfig(), StoreKind.GLOBAL)
        global_ = AbsentStore(home.global_db) if unmade else open_global(config or ArcanaConfig())
    private_tier = private if absent else with_vectors(private, embedding, vector_options)
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
    reconciler = None if absent else Reconciler(
        private,
        private_tier if private_tier is not private else None,
        reconcile or ReconcileSettings(),
        provider=reconcile_model,
        audit=audit,
        copies=lambda: GlobalCopies.of_home(home, config or ArcanaConfig(), actor=actor),
        pools=router.pool_tier,
    )
    cap = ExtractionSettings().agent_confidence_cap if confidence_cap is None else confidence_cap
    federation = MemoryFederation(
        router, on_degraded=on_degraded or audit_sink(audit), reconciler=reconciler, confidence_cap=cap,
        recall=(config or ArcanaConfig()).recall,
    )
    federation.presence = presence  # `agent delete` and `restore --force` stop its writes
    federation.open_global = open_global if embedding is not None else None  # `memory.global` switched on later

    async def open_made() -> tuple[Any, AgentPresence | None] | None:
        if not home.agent_db(str(agent_id)).exists():
            return None
        store, guard = await _open_private(home, agent_id, agent_name, actor, notify)
        return with_vectors(store, embedding, vector_options), guard

    federation.open_private = open_made if absent else None
    return federation


async def _open_private(
    home: Home, agent_id: str, agent_name: str | None, actor: str, notify: Callable[[str], None] | None
) -> tuple[SQLiteAdapter, AgentPresence | None]:
    """The agent's private store, connected (made if missing), and with ``agent_name`` the presence
    that guards its writes: then it is opened only while the card is there (NotFoundError, and no
    folder made, once it is gone)."""
    private = SQLiteAdapter.for_agent(agent_id, home=home, actor=actor)
    if agent_name is None:
        await private.connect()
        return private, None
    await connect_agent_store(home, str(agent_id), agent_name, private)
    return private, AgentPresence(home, str(agent_id), agent_name, opened=lambda: private.opened_file, notify=notify)


async def follow_private(federation: MemoryFederation) -> None:
    """A reading federation built before its agent stored anything reads the store once another
    process has made it: a long-running reader (`arcana mcp --read-only`) answered empty for good."""
    if federation.open_private is None or (opened := await federation.open_private()) is None:
        return
    adapter, federation.presence = opened
    federation.router.set_private(adapter)  # the AbsentStore it replaces holds nothing to close
    federation.open_private = None


async def federation_for_agent(
    card: AgentCard,
    *,
    home: Home | Path | str | None = None,
    config: ArcanaConfig | None = None,
    embedding: Any | None = None,
    on_degraded: DegradedSink | None = None,
    notify: Callable[[str], None] | None = None,
    actor: str = "library",
    reading: bool = False,
) -> MemoryFederation:
    """The federation a stored agent runs with, from its card and ``config.json``.

    Weights and decay come from the card; pools and vaults from the config;
    hybrid fusion weights from ``embedding``. ``memory.global = "none"``
    switches the global tier off. (``memory.enabled`` is not read here: it
    decides whether ``arcana run`` uses memory at all, while explicit memory
    commands always reach the agent's tiers.) ``notify`` receives the vector
    layer's fallback notices and says when a write waits on the agent's lock. ``reading``:
    see :func:`build_federation`.
    """
    from memory.config import load_config

    home = _home(home)
    config = config or load_config(home.config_path)
    from memory.embedding.factory import vector_options as configured

    vector_options = {**configured(config.embedding), "notify": notify}
    decay_profiles = card_decay(home, card)  # before any tier is opened: a bad card leaves none open
    return await build_federation(
        card.id,
        home=home,
        embedding=embedding,
        pools=pool_configs(
            home, config, card, embedding=embedding, vector_options=vector_options, notify=notify, actor=actor
        ),
        decay_profiles=decay_profiles,
        on_degraded=on_degraded,
        weights=card.memory_weights,
        actor=actor,
        vector_options=vector_options,
        global_tier=config.memory.global_ != "none",
        reconcile=reconcile_settings(config, card),
        reconcile_model=_reconcile_model(config, card),
        config=config,
        confidence_cap=extraction_settings(config, card).agent_confidence_cap,
        agent_name=card.name,
        notify=notify,
        reading=reading,
    )


def card_decay(home: Home, card: AgentCard) -> dict[MemoryType, DecayProfile]:
    """The card's ``decay`` block over the defaults. A bad value is set by editing the card (`agent set
    --decay` refuses one), so its error names the card's file and the command that replaces the value."""
    try:
        return resolve_decay_profiles(card.decay, source=f"agent '{card.name}' decay")
    except ConfigError as exc:
        raise ConfigError(f"{home.agent_dir(card.id) / 'agent.json'}: {exc}; fix it there, or with "
                          f"`arcana agent set {card.name} --decay TYPE.FIELD=VALUE` (VALUE null clears it; "
                          "man/federation.md)") from None


async def follow_settings(federation: MemoryFederation, home: Home, config: ArcanaConfig, card: AgentCard) -> None:
    """Set ``federation`` as :func:`federation_for_agent` would build it from ``config`` and ``card`` now.

    A long-running process (the MCP server) kept its start's: its writes reconciled with the old
    strategy, it read the global tier after `config set memory.global none`, and named the agent
    by its old name. Pools and vaults are followed apart (``withdraw_pools``).
    """
    federation.router.rank_by(card.memory_weights, card_decay(home, card))
    federation.confidence_cap = extraction_settings(config, card).agent_confidence_cap
    federation.recall_settings = config.recall
    if federation.reconciler is not None:
        federation.reconciler.configure(reconcile_settings(config, card), _reconcile_model(config, card))
    if federation.presence is not None:
        federation.presence.name = card.name
    wanted = federation.open_global is not None and config.memory.global_ != "none"
    if wanted and federation.router.global_ is None:
        federation.router.set_global(federation.open_global(config))
    elif not wanted and federation.router.global_ is not None:
        dropped = federation.router.set_global(None)
        if isinstance(dropped.backend, Closeable):
            await dropped.backend.aclose()


def extraction_settings(config: ArcanaConfig, card: AgentCard) -> ExtractionSettings:
    """The agent card's ``extraction`` block over config.json's, then env, then defaults."""
    file_values = config.memory.extraction.model_dump(exclude_none=True)
    try:  # each value is valid alone (the card and the file are checked when read); together they may not be
        settings = ExtractionConfig.model_validate({**file_values, **card.extraction}).effective()
    except ValidationError as exc:
        why = exc.errors()[0]["msg"].removeprefix("Value error, ").removeprefix("memory.extraction: ")
        raise ConfigError(f"agent '{card.name}' extraction over config.json's memory.extraction: {why}; change "
                          f"one with `arcana agent set {card.name} --extraction KEY=VALUE` or `arcana config set`") from None
    return replace(settings, max_content_bytes=config.memory.max_content_bytes)


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
    from memory.errors import InvalidRequestError, NotFoundError
    from memory.models.registry import provider_for, resolve_model_name

    try:
        return provider_for(config, resolve_model_name(config, card))
    except (InvalidRequestError, NotFoundError):
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


def private_store(federation: MemoryFederation) -> SQLiteAdapter | AbsentStore:
    """The private tier's SQLite store, under any vector layer (e.g. to see ``quarantined_to``); a
    reading federation's for an agent with no store yet stands in for it, empty."""
    backend = federation.router.private.backend
    return backend.store if isinstance(backend, Layered) else backend
