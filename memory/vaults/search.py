"""Searching one vault: the core call behind ``arcana vault search`` and the federation's vault tier.

An indexed vault is searched through its SQLite index (BM25, plus vectors
when it has them), then expanded one hop along wikilinks. A vault never
indexed is still searchable: the live folder is scanned, with a notice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory.adapters.markdown import MarkdownFolderAdapter
from memory.config import ArcanaConfig, load_config
from memory.embedding.chunking import snippet_for
from memory.graph.edges import EdgeStore
from memory.graph.expand import DEFAULT_DECAY, expand_one_hop
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode
from memory.vaults import manifest
from memory.vaults.indexer import open_store, vector_store
from memory.vaults.registry import Vault


@dataclass
class VaultHits:
    entries: list[MemoryEntry]
    paths: dict[str, str]  # entry id → root-relative path
    source: str  # "index" or "folder"
    notices: list[str] = field(default_factory=list)


async def search_vault(
    vault: Vault,
    query: MemoryQuery,
    *,
    expand: bool = True,
    decay: float = DEFAULT_DECAY,
    config: ArcanaConfig | None = None,
    notify: Callable[[str], None] | None = None,
    gateway: Any = None,
) -> VaultHits:
    """Search one vault (read-only); results carry ``tiers=["vault:<name>"]``.

    ``gateway`` (see :func:`memory.vaults.indexer.embedding_gateway`) lets a
    long-lived caller such as the federation keep the embedding model loaded.
    """
    notices: list[str] = []

    def note(message: str) -> None:
        notices.append(message)
        if notify is not None:
            notify(message)

    tier = f"vault:{vault.name}"
    if not vault.db_path.exists():
        note(f"vault '{vault.name}' is not indexed yet; scanning the folder (run `arcana vault index {vault.name}`)")
        folder = MarkdownFolderAdapter(
            vault.root, f"vault:{vault.name}", ignore_globs=vault.ignore_globs,
            max_file_bytes=vault.config.max_file_bytes, on_degraded=note,
        )
        scan = await folder.scan()
        paths = {n.id: n.rel_path for n in scan.notes}
        entries = await folder.search(query)
        return VaultHits([_annotated(e, tier, query) for e in entries], paths, "folder", notices)
    config = config or load_config(vault.home.config_path)
    store = open_store(vault)
    try:
        if query.retrieval_mode is RetrievalMode.keyword:
            seeds = await store.search(query)
        else:
            seeds = await vector_store(store, config, vault, gateway, note).search(query)
        entries = seeds
        if expand and seeds:

            async def fetch(ids: list[str]) -> dict[str, MemoryEntry]:
                return await store.admitted_by_id(query, ids)

            entries = await expand_one_hop(seeds, EdgeStore(store), fetch, decay=decay, limit=query.limit)
        paths = await store.run(manifest.paths_for, [e.id for e in entries])
    finally:
        await store.aclose()
    return VaultHits([_annotated(e, tier, query) for e in entries], paths, "index", notices)


def _annotated(entry: MemoryEntry, tier: str, query: MemoryQuery) -> MemoryEntry:
    """The hit as a vault returns it: its tier, and for a long note the chunk to show.

    A semantic hit already carries the chunk that won; any other hit on a long
    note shows the chunk sharing most words with the query.
    """
    update: dict = {"tiers": [tier]}
    if entry.snippet is None:
        update["snippet"] = snippet_for(entry.content, query.text)
    return entry.model_copy(update=update)


class VaultAdapter:
    """A vault as a read-only :class:`MemoryAdapter` tier, for the federation to register.

    Reads go through :func:`search_vault` (the index, or the folder when not
    indexed yet); writes raise, because the folder is the user's, not ours.
    """

    def __init__(self, vault: Vault, *, expand: bool = True, gateway: Any = None, notify: Callable[[str], None] | None = None):
        self.vault = vault
        self.expand = expand
        self.gateway = gateway
        self.notify = notify

    async def connect(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def health_check(self):
        return await MarkdownFolderAdapter(self.vault.root, f"vault:{self.vault.name}").health_check()

    async def write(self, entry: MemoryEntry) -> None:
        from memory.errors import MemoryWriteError

        raise MemoryWriteError(f"vault '{self.vault.name}' is read-only memory; write to another tier")

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]:
        hits = await search_vault(self.vault, query, expand=self.expand, gateway=self.gateway, notify=self.notify)
        return hits.entries

    async def get(self, entry_id: str) -> MemoryEntry | None:
        if not self.vault.db_path.exists():
            folder = MarkdownFolderAdapter(
                self.vault.root, f"vault:{self.vault.name}", ignore_globs=self.vault.ignore_globs,
                max_file_bytes=self.vault.config.max_file_bytes,
            )
            return await folder.get(entry_id)
        store = open_store(self.vault)
        try:
            return await store.get(entry_id)
        finally:
            await store.aclose()
