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
from memory.adapters.sqlite import SQLiteAdapter
from memory.config import ArcanaConfig, load_config
from memory.embedding.chunking import snippet_for
from memory.errors import NotFoundError
from memory.graph.edges import EdgeStore
from memory.graph.expand import DEFAULT_DECAY, expand_one_hop
from memory.home import file_id
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode
from memory.vaults import manifest
from memory.vaults.indexer import open_store, vector_store
from memory.vaults.registry import Vault, VaultRegistry


@dataclass
class VaultHits:
    entries: list[MemoryEntry]
    paths: dict[str, str]  # entry id → root-relative path
    source: str  # "index" or "folder"
    notices: list[str] = field(default_factory=list)


class VaultReader:
    """One vault's read side, kept open: a folder adapter (with its parse cache) and the index store.

    Both are opened on first need and reused by every later search, so a
    federation tier neither re-parses the folder nor reopens the index per
    query. ``aclose`` closes the index.
    """

    def __init__(self, vault: Vault, *, config: ArcanaConfig | None = None, gateway: Any = None,
                 notify: Callable[[str], None] | None = None):
        self.config = config
        self.gateway = gateway
        self.notify = notify
        self._follow(vault)
        self._store: SQLiteAdapter | None = None
        self._opened: tuple[int, int] | None = None  # the index file the store was opened on
        self._vectors: Any = None
        self._notices: list[str] = []

    def _follow(self, vault: Vault) -> None:
        self.vault = vault
        self.folder = MarkdownFolderAdapter(
            vault.root, f"vault:{vault.name}", ignore_globs=vault.ignore_globs,
            max_file_bytes=vault.max_note_bytes, on_degraded=self._note,
        )

    def _note(self, message: str) -> None:
        self._notices.append(message)
        if self.notify is not None:
            self.notify(message)

    async def index(self) -> SQLiteAdapter | None:
        """The index store, or None while the vault has never been indexed.

        An index deleted or replaced since it was opened (`vault remove`, perhaps then `vault add`
        of another folder under the same name) is closed and the registration read again, as it is
        before each scan of a vault not indexed yet: a long-lived reader (an MCP server's) never
        answers from a removed vault's unlinked index or its folder.
        """
        if self._store is not None and file_id(self.vault.db_path) != self._opened:
            await self.aclose()
            self._registered_again()
        elif self._store is None:  # a folder scan: a vault removed (or moved) since answers from nothing (or the new one)
            self._registered_again()
        self.vault.check_apart("read")  # as index and watch refuse it: the home's files are no notes
        if self._store is None and self.vault.db_path.exists():
            self._opened = file_id(self.vault.db_path)
            self._store = open_store(self.vault)
        return self._store

    def _registered_again(self) -> None:
        """Follow the vault's registration as it is now; :class:`NotFoundError` once it is removed."""
        try:
            current = VaultRegistry(self.vault.home).get(self.vault.name)
        except NotFoundError:
            raise NotFoundError(f"vault '{self.vault.name}' was removed; its index is gone") from None
        if current.config != self.vault.config:
            self._follow(current)

    def _vector_store(self, store: SQLiteAdapter):
        if self._vectors is None:
            config = self.config or load_config(self.vault.home.config_path)
            self._vectors = vector_store(store, config, self.vault, self.gateway, self._note)
        return self._vectors

    async def search(self, query: MemoryQuery, *, expand: bool = True, decay: float = DEFAULT_DECAY) -> VaultHits:
        """Search the vault (read-only); results carry ``tiers=["vault:<name>"]``."""
        self._notices = []
        tier = f"vault:{self.vault.name}"
        store = await self.index()
        if store is None:
            self._note(
                f"vault '{self.vault.name}' is not indexed yet; scanning the folder "
                f"(run `arcana vault index {self.vault.name}`)"
            )
            scan = await self.folder.scan()
            paths = {n.id: n.rel_path for n in scan.notes}
            # The notice above already says this is a keyword scan of the folder: ask for one, say it once.
            entries = await self.folder.search(query.model_copy(update={"retrieval_mode": RetrievalMode.keyword}))
            return VaultHits([_annotated(e, tier, query) for e in entries], paths, "folder", self._notices)
        if query.retrieval_mode is RetrievalMode.keyword:
            seeds = await store.search(query)
        else:
            seeds = await self._vector_store(store).search(query)
        entries = seeds
        if expand and seeds:

            async def fetch(ids: list[str]) -> dict[str, MemoryEntry]:
                return await store.admitted_by_id(query, ids)

            entries = await expand_one_hop(seeds, EdgeStore(store), fetch, decay=decay, limit=query.limit)
        paths = await store.run(manifest.paths_for, [e.id for e in entries])
        return VaultHits([_annotated(e, tier, query) for e in entries], paths, "index", self._notices)

    async def get(self, entry_id: str) -> MemoryEntry | None:
        store = await self.index()
        return await (self.folder.get(entry_id) if store is None else store.get(entry_id))

    async def aclose(self) -> None:
        store, self._store, self._vectors, self._opened = self._store, None, None, None
        if store is not None:
            await store.aclose()


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
    """Search one vault once (see :class:`VaultReader`, which a long-lived caller keeps instead).

    ``gateway`` (see :func:`memory.vaults.indexer.embedding_gateway`) lets a
    long-lived caller such as the federation keep the embedding model loaded.
    """
    reader = VaultReader(vault, config=config, gateway=gateway, notify=notify)
    try:
        return await reader.search(query, expand=expand, decay=decay)
    finally:
        await reader.aclose()


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

    Reads go through one :class:`VaultReader` (the index, or the folder when
    not indexed yet), kept for the adapter's life and closed by ``aclose``;
    writes raise, because the folder is the user's, not ours.
    """

    read_only = True

    def __init__(self, vault: Vault, *, expand: bool = True, gateway: Any = None, notify: Callable[[str], None] | None = None):
        self.vault = vault
        self.expand = expand
        self.reader = VaultReader(vault, gateway=gateway, notify=notify)

    async def connect(self) -> None:
        return None

    async def aclose(self) -> None:
        await self.reader.aclose()

    async def health_check(self):
        return await self.reader.folder.health_check()

    async def write(self, entry: MemoryEntry) -> None:
        from memory.errors import MemoryWriteError

        raise MemoryWriteError(f"vault '{self.vault.name}' is read-only memory; write to another tier")

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]:
        return (await self.reader.search(query, expand=self.expand)).entries

    async def get(self, entry_id: str) -> MemoryEntry | None:
        return await self.reader.get(entry_id)
