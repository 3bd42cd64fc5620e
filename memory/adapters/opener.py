"""The one way to open a store: every kind of database under the home, decided here.

An agent's private tier, a shared pool, the global tier and a vault's index
are all Arcana stores, but they differ in what happens around them: only a
store that belongs to one owner (an agent, a vault index that can be rebuilt)
is quarantined and replaced when corrupt — a shared store must stay put so
its breaker isolates it instead of one agent silently starting it afresh for
everyone. Every kind is backed up before a migration and audited. Outside
``memory/adapters/`` nothing else constructs a store, so a new engine is one
branch here: a pool or the global tier that config puts on a PostgreSQL
server (``pools.<name>.url[_env]``, ``memory.global_url[_env]``) opens as a
:class:`PostgresAdapter` in :func:`open_tier`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory.adapters.sqlite import SQLiteAdapter
from memory.audit import AuditLog
from memory.config import EmbeddingConfig
from memory.embedding.factory import build_gateway, vector_options
from memory.home import Home
from memory.protocols import MemoryAdapter
from memory.store_kinds import StoreKind, kind_of, store_options, store_path


def open_store(
    home: Home,
    kind: StoreKind,
    name: str | None = None,
    *,
    actor: str = "library",
    path: Path | None = None,
    repair: bool = True,
    **options: Any,
) -> SQLiteAdapter:
    """A (not yet connected) store of ``kind``; ``path`` overrides the home's layout for it (see
    :func:`store_options` for ``repair``)."""
    options = store_options(home, kind, repair=repair, **options)
    return SQLiteAdapter(path or store_path(home, kind, name), actor=actor, **options)


def open_database(home: Home, path: Path, *, actor: str = "library") -> SQLiteAdapter:
    """A store for a database file under the home, treated as the kind its place says it is."""
    return open_store(home, kind_of(home, path), actor=actor, path=path)


def scratch_store(path: Path) -> SQLiteAdapter:
    """A throwaway store outside any home (doctor's round trip): no quarantine, backups or audit."""
    return SQLiteAdapter(path, actor="scratch")


def with_vectors(store: SQLiteAdapter, embedding: Any | None, options: Mapping[str, Any] | None = None) -> MemoryAdapter:
    """``store`` behind a :class:`VectorAdapter` when an embedder is given, else as is.

    The vector layer shares the store's file, so semantic and hybrid reads work
    on every tier and fall back to keyword when the embedder is down.
    """
    if embedding is None:
        return store
    from memory.adapters.vector import VectorAdapter

    return VectorAdapter(store, embedding, **dict(options or {}))


def vector_adapter(store, config: EmbeddingConfig, home: Home, *, notify=None, gateway=None, chunk_long: bool = False,
                   embed_later: str | None = None):
    """A :class:`VectorAdapter` over an open SQLite store, wired from config.

    Pass ``gateway`` to reuse already-built embedders (a watch keeps one warm);
    ``chunk_long`` embeds long memories in chunks too (vault notes); ``embed_later``
    is what a notice of rows left without vectors tells to run (default: `arcana reindex`).
    """
    options = {**vector_options(config), "notify": notify, "chunk_long": chunk_long}
    if embed_later is not None:
        options["embed_later"] = embed_later
    return with_vectors(store, gateway or build_gateway(config, home), options)


def server_url(config: Any, kind: StoreKind, name: str | None = None) -> str | None:
    """The server URL ``config`` gives a pool or the global tier (an env var read now), or None: SQLite."""
    if kind is StoreKind.POOL:
        settings = config.pools.get(name)
        return settings.server_url(name) if settings else None
    if kind is StoreKind.GLOBAL:
        return config.memory.global_server_url()
    return None


def made_yet(home: Home, config: Any, kind: StoreKind, name: str | None = None) -> bool:
    """Whether ``kind``'s store is there to read: a server tier always is (one whose URL cannot be
    had says so when opened), a local one once its file exists. A read never makes one."""
    from memory.errors import ConfigError, UnsetVariableError

    try:
        if server_url(config, kind, name) is not None:
            return True
    except (UnsetVariableError, ConfigError):
        return True
    return store_path(home, kind, name).exists()


def open_tier(
    home: Home,
    kind: StoreKind,
    name: str | None = None,
    *,
    config: Any,
    embedding: Any | None = None,
    vector_options: Mapping[str, Any] | None = None,
    actor: str = "library",
    repair: bool = True,
    unreachable_degrades: bool = False,
) -> MemoryAdapter:
    """A pool's or the global tier's store (not yet connected), semantic when an embedder is given.

    The engine branch: on the server ``config`` names — a :class:`PostgresAdapter`
    that is semantic itself, with connect and statement timeouts inside the
    tier's budget in the home's ``connections/memory-adapters.json``, read here so
    that recall, remember and every operator command (prune, migrate, export…)
    wait on that tier alike, connecting only when first used —
    else the home's SQLite file behind :func:`with_vectors`. A server URL that
    cannot be had (its ``url_env`` unset or not a postgresql:// URL) raises, or
    with ``unreachable_degrades`` (a federation's tiers) gives an
    :class:`UnreachableTier` that fails every call, so that tier degrades as a
    down server does instead of taking every recall with it.
    """
    from memory.errors import ConfigError, UnsetVariableError

    try:
        url = server_url(config, kind, name)
    except (UnsetVariableError, ConfigError) as exc:
        if not unreachable_degrades:
            raise
        from memory.adapters.unreachable import UnreachableTier

        return UnreachableTier(exc)
    if url is None:
        return with_vectors(open_store(home, kind, name, actor=actor, repair=repair), embedding, vector_options)
    from memory.adapters.postgres import PostgresAdapter  # asyncpg only for server tiers
    from memory.budgets import ConnectionsConfig
    from memory.types import MemoryScope

    scope = MemoryScope.GLOBAL if kind is StoreKind.GLOBAL else MemoryScope.SHARED
    budget = ConnectionsConfig.load(home.connections_path).for_tier(scope, name)
    return PostgresAdapter(
        url,
        gateway=embedding,
        actor=actor,
        audit=AuditLog(home.audit_log),
        connect_timeout=min(budget.read_timeout_ms, budget.write_timeout_ms) / 1000,
        statement_timeout_ms=max(budget.read_timeout_ms, budget.write_timeout_ms, budget.semantic_timeout_ms),
        **dict(options_for_server(vector_options)),
    )


def configured_on_server(config: Any, kind: StoreKind, name: str | None = None) -> bool:
    """Whether ``config`` puts a pool or the global tier on a server; reads no environment variable,
    so a tier whose ``url_env`` is unset in this shell is still known for a server one."""
    if kind is StoreKind.POOL:
        settings = config.pools.get(name)
        return settings is not None and (settings.url is not None or settings.url_env is not None)
    if kind is StoreKind.GLOBAL:
        return config.memory.global_url is not None or config.memory.global_url_env is not None
    return False


def on_server(store: Any) -> bool:
    """Whether ``store`` lives on a server (semantic itself: no SQLite file, no vector layer)."""
    from memory.adapters.postgres import PostgresAdapter

    return isinstance(store, PostgresAdapter)


def options_for_server(vector_options: Mapping[str, Any] | None) -> dict:
    """The vector-layer options a server store shares (fusion weights, floor, notices)."""
    keep = ("vector_weight", "bm25_weight", "min_similarity", "notify")
    return {k: v for k, v in (vector_options or {}).items() if k in keep}


def server_tiers(home: Home, config: Any, *, actor: str = "cli") -> list[tuple[str, MemoryAdapter | Exception]]:
    """(label, store or the ConfigError that stopped it) for every tier configured on a server.

    An unset ``url_env`` appears as its error, so a status listing reports it rather than stop.
    """
    from memory.errors import ConfigError, UnsetVariableError

    found: list[tuple[str, MemoryAdapter | Exception]] = []
    for name in sorted(config.pools):
        label, kind = f"pool:{name}", StoreKind.POOL
        if not configured_on_server(config, kind, name):
            continue
        try:
            found.append((label, open_tier(home, kind, name, config=config, actor=actor)))
        except (ConfigError, UnsetVariableError) as exc:
            found.append((label, exc))
    if configured_on_server(config, StoreKind.GLOBAL):
        try:
            found.append(("global", open_tier(home, StoreKind.GLOBAL, config=config, actor=actor)))
        except (ConfigError, UnsetVariableError) as exc:
            found.append(("global", exc))
    return found
