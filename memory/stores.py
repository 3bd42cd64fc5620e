"""The one way to open a store: every kind of database under the home, decided here.

An agent's private tier, a shared pool, the global tier and a vault's index
are all Arcana stores, but they differ in what happens around them: only a
store that belongs to one owner (an agent, a vault index that can be rebuilt)
is quarantined and replaced when corrupt — a shared store must stay put so
its breaker isolates it instead of one agent silently starting it afresh for
everyone. Every kind is backed up before a migration and audited. Outside
``memory/adapters/`` nothing else constructs a store, so a new engine is one
branch here.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from memory.adapters.sqlite import SQLiteAdapter
from memory.audit import AuditLog
from memory.home import Home


class StoreKind(str, Enum):
    PRIVATE = "private"
    POOL = "pool"
    GLOBAL = "global"
    VAULT = "vault"


_QUARANTINED = {StoreKind.PRIVATE, StoreKind.VAULT}


def store_path(home: Home, kind: StoreKind, name: str | None = None) -> Path:
    """Where ``kind`` (named ``name``: an agent id, a pool, a vault) lives under ``home``."""
    if kind is StoreKind.GLOBAL:
        return home.global_db
    if not name:
        raise ValueError(f"a {kind.value} store needs a name")
    if kind is StoreKind.PRIVATE:
        return home.agent_db(name)
    if kind is StoreKind.POOL:
        return home.pool_db(name)
    return home.vaults_dir / f"{name}.db"


def kind_of(home: Home, path: Path) -> StoreKind:
    """The kind of a database found under the home (see :meth:`Home.databases`)."""
    path = Path(path)
    if path == home.global_db:
        return StoreKind.GLOBAL
    if path.parent == home.pools_dir:
        return StoreKind.POOL
    if path.parent == home.vaults_dir:
        return StoreKind.VAULT
    return StoreKind.PRIVATE


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
    """A (not yet connected) store of ``kind``; ``path`` overrides the home's layout for it.

    ``repair=False`` is for diagnosis (doctor): a corrupt store is reported and
    left where it is, whatever its kind.
    """
    options.setdefault("quarantine_dir", home.quarantine_dir if repair and kind in _QUARANTINED else None)
    options.setdefault("backup_dir", home.backups_dir)
    options.setdefault("audit", AuditLog(home.audit_log))
    return SQLiteAdapter(path or store_path(home, kind, name), actor=actor, **options)


def open_database(home: Home, path: Path, *, actor: str = "library") -> SQLiteAdapter:
    """A store for a database file under the home, treated as the kind its place says it is."""
    return open_store(home, kind_of(home, path), actor=actor, path=path)


def scratch_store(path: Path) -> SQLiteAdapter:
    """A throwaway store outside any home (doctor's round trip): no quarantine, backups or audit."""
    return SQLiteAdapter(path, actor="scratch")


def with_vectors(store: SQLiteAdapter, embedding: Any | None, options: Mapping[str, Any] | None = None) -> Any:
    """``store`` behind a :class:`VectorAdapter` when an embedder is given, else as is.

    The vector layer shares the store's file, so semantic and hybrid reads work
    on every tier and fall back to keyword when the embedder is down.
    """
    if embedding is None:
        return store
    from memory.adapters.vector import VectorAdapter

    return VectorAdapter(store, embedding, **dict(options or {}))
