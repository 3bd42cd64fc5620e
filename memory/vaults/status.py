"""``arcana vault status``: the folder, the index and the watch, in one read-only look."""

from __future__ import annotations

from typing import Any

from memory.graph.edges import EdgeStore
from memory.graph.wikilinks import WIKILINK_SOURCE
from memory.vaults.indexer import open_store
from memory.vaults.registry import Vault
from memory.vaults.state import pid_alive, read_state


async def vault_status(vault: Vault) -> dict[str, Any]:
    state = read_state(vault.state_path)
    notes = edges = 0
    if vault.db_path.exists():
        store = open_store(vault)
        try:
            notes = await store.count()
            edges = await EdgeStore(store).count(WIKILINK_SOURCE)
        finally:
            await store.aclose()
    pid = state.get("watch_pid")
    return {
        "name": vault.name,
        "path": str(vault.root),
        "folder_present": vault.root.is_dir(),
        "index": str(vault.db_path),
        "indexed": vault.db_path.exists(),
        "notes_indexed": notes,
        "edges": edges,
        "last_indexed_at": state.get("last_indexed_at"),
        "last_index": state.get("last_index"),
        "last_error": state.get("last_error"),
        "watch": {
            "running": pid_alive(pid),
            "pid": pid if pid_alive(pid) else None,
            "started_at": state.get("watch_started_at"),
            "stopped_at": state.get("watch_stopped_at"),
            "last_event_at": state.get("last_event_at"),
            "folder_missing_since": state.get("folder_missing_since"),
        },
    }
