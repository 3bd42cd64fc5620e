"""The kinds of store under a home, where each lives, and what opening one implies.

An agent's private tier, a shared pool, the global tier and a vault's index
are all Arcana stores, but they differ in what happens around them: only a
store that belongs to one owner (an agent, a vault index that can be rebuilt)
is quarantined and replaced when corrupt — a shared store must stay put so
its breaker isolates it instead of one agent silently starting it afresh for
everyone. Every kind is backed up before a migration and audited.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

from memory.audit import AuditLog
from memory.home import Home


class StoreKind(str, Enum):
    PRIVATE = "private"
    POOL = "pool"
    GLOBAL = "global"
    VAULT = "vault"


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
    return home.vault_db(name)


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


_QUARANTINED = {StoreKind.PRIVATE, StoreKind.VAULT}


def store_options(home: Home, kind: StoreKind, *, repair: bool = True, **options: Any) -> dict[str, Any]:
    """``options`` for a SQLite store of ``kind`` with the home's defaults filled in.

    ``repair=False`` is for diagnosis (doctor): a corrupt store is reported and
    left where it is, whatever its kind.
    """
    options.setdefault("quarantine_dir", home.quarantine_dir if repair and kind in _QUARANTINED else None)
    options.setdefault("backup_dir", home.backups_dir)
    options.setdefault("audit", AuditLog(home.audit_log))
    if kind is StoreKind.VAULT:  # a note's size is bounded by the vault's max_file_bytes, not the memory limit
        options.setdefault("max_content_bytes", None)
    return options
