"""``arcana vault status``: the folder, the index and the watch, in one read-only look."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from memory.graph.edges import EdgeStore
from memory.graph.wikilinks import WIKILINK_SOURCE
from memory.types import stored_moment
from memory.vaults.indexer import open_store
from memory.vaults.registry import Vault
from memory.vaults.state import damaged, load_state, pid_alive


@dataclass(frozen=True)
class WatchStatus:
    running: bool
    pid: int | None
    started_at: float | None
    stopped_at: float | None
    last_event_at: float | None
    folder_missing_since: float | None


@dataclass(frozen=True)
class VaultStatus:
    """The folder, the index and the watch of one vault, as ``arcana vault status`` shows them."""

    name: str
    path: str
    folder_present: bool
    index: str
    indexed: bool
    notes_indexed: int
    edges: int
    last_indexed_at: float | None
    last_index: Any
    last_error: str | None
    state_damaged: str | None  # why the state file cannot be read: its times are unknown, not "never"
    watch: WatchStatus

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def vault_status(vault: Vault) -> VaultStatus:
    state, damage = load_state(vault.state_path)
    notes = edges = 0
    if vault.db_path.exists():
        store = open_store(vault)
        try:
            notes = await store.count()
            edges = await EdgeStore(store).count(WIKILINK_SOURCE)
        finally:
            await store.aclose()
    pid = state.get("watch_pid")
    return VaultStatus(
        name=vault.name,
        path=str(vault.root),
        folder_present=vault.root.is_dir(),
        index=str(vault.db_path),
        indexed=vault.db_path.exists(),
        notes_indexed=notes,
        edges=edges,
        last_indexed_at=stored_moment(state.get("last_indexed_at")),
        last_index=state.get("last_index") if isinstance(state.get("last_index"), dict) else None,
        last_error=state.get("last_error") if isinstance(state.get("last_error"), str) else None,
        state_damaged=None if damage is None else damaged(vault.state_path, vault.name, damage),
        watch=WatchStatus(
            running=pid_alive(pid),
            pid=pid if pid_alive(pid) else None,
            started_at=stored_moment(state.get("watch_started_at")),
            stopped_at=stored_moment(state.get("watch_stopped_at")),
            last_event_at=stored_moment(state.get("last_event_at")),
            folder_missing_since=stored_moment(state.get("folder_missing_since")),
        ),
    )
