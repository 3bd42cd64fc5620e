"""What each page shows, gathered through the core calls the CLI makes (no SQL here).

Recall is the agent's federation, as ``arcana recall``; a store's listing and
one memory are the operator's editor, as ``arcana memory list / show /
history``. Lists come a page at a time from SQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from arcana_cli.context import CliContext
from arcana_cli.ui.targets import Target
from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentCard, AgentRegistry
from memory.config import ArcanaConfig, load_config
from memory.errors import ArcanaMemoryError
from memory.home import Home
from memory.inspection import Activity, Census, Growth
from memory.operator.edits import NoStoreYet, Originals, open_editor
from memory.types import Audience
from memory.adapters.opener import open_store, open_tier, server_url
from memory.store_kinds import StoreKind, store_path
from memory.types import MAX_QUERY_LIMIT, LedgerRecord, MemoryEntry, MemoryQuery, MemoryType, RetrievalMode

ACTOR = "ui"


class Notices:
    """Collects what the core would have warned about on stderr, to show on the page."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def warn(self, message: str) -> None:
        self.lines.append(message)


@dataclass
class Reader:
    """The server's view of one home: config read per request, one embedder kept warm; ``root`` is
    the path its pages are served under (every link starts with it)."""

    home: Home
    root: str = ""
    _gateway: tuple[str, Any] | None = None  # (the embedding config it was built for, the gateway)
    _growth: dict[tuple, Growth] = field(default_factory=dict)

    @property
    def config(self) -> ArcanaConfig:
        return load_config(self.home.config_path)

    def gateway(self, config: ArcanaConfig):
        """The embedder for ``config``, kept while its embedding section stays as it is: config.json
        is read per request, and a changed model or provider list must not be answered by the old one."""
        key = config.embedding.model_dump_json()
        if self._gateway is None or self._gateway[0] != key:
            from memory.embedding.factory import build_gateway

            self._gateway = (key, build_gateway(config.embedding, self.home))
        return self._gateway[1]

    # -- the home -----------------------------------------------------------

    async def overview(self, page: int = 1, per: int = 50) -> dict:
        """Agents, pools, the global tier and vaults, each store with its census (None: no store yet).

        A page of each list: every census opens its store (a pool's may be a server), so a home
        of thousands of agents would keep the one event loop busy for seconds on every visit."""
        from memory.federation.shared_tiers import agent_pools
        from memory.federation.pools import PoolRegistry
        from memory.vaults.registry import VaultRegistry
        from memory.vaults.status import vault_status

        config = self.config
        roster = AgentRegistry(self.home).scan()  # an unreadable card is named on the page, the rest shown
        pools_registry = PoolRegistry(self.home)
        cards, pool_names, registered = roster.cards, pools_registry.names(), VaultRegistry(self.home).list()
        shown = slice((page - 1) * per, page * per)
        agents = []
        for card in cards[shown]:
            path = self.home.agent_db(card.id)
            census = await _census(lambda: open_store(self.home, StoreKind.PRIVATE, card.id, actor=ACTOR)) if path.exists() else None
            agents.append({"card": card, "census": census, "pools": agent_pools(config, card)})
        pools = []
        for name in pool_names[shown]:  # the census counts it (a bad file says why in its row): not counted twice
            info = await pools_registry.show(name, count=False)
            pools.append({"info": info, "census": await self._tier_census(config, StoreKind.POOL, name)})
        vaults = []
        for vault in registered[shown]:
            try:
                vaults.append({"status": await vault_status(vault), "name": vault.name, "path": str(vault.root)})
            except ArcanaMemoryError as exc:  # its index not readable: that row says why, the rest stays
                vaults.append({"status": None, "name": vault.name, "path": str(vault.root), "error": str(exc)})
        return {
            "agents": agents,
            "unreadable": [str(card) for card in roster.unreadable],
            "pools": pools,
            "global": await self._tier_census(config, StoreKind.GLOBAL, None),
            "vaults": vaults,
            "counts": {"agents": len(cards), "pools": len(pool_names), "vaults": len(registered)},
            "more": max(len(cards), len(pool_names), len(registered)) > page * per,
        }

    async def _tier_census(self, config: ArcanaConfig, kind: StoreKind, name: str | None) -> Census | str | None:
        if server_url(config, kind, name) is None and not store_path(self.home, kind, name).exists():
            return None
        return await _census(lambda: open_tier(self.home, kind, name, config=config, actor=ACTOR))

    def card(self, target: Target) -> AgentCard:
        return AgentRegistry(self.home).resolve(target.name)

    # -- memory lists -------------------------------------------------------

    async def memories(self, target: Target, ask: ListRequest) -> Listing:
        if ask.text and not ask.operator:
            return await self._recall(target, ask)
        query = MemoryQuery(types=ask.types or None, tags=ask.tags or None, since=ask.since, limit=ask.per + 1)
        audience = Audience.OPERATOR if ask.operator else Audience.LISTING
        try:
            async with open_editor(self.home, self.config, target.operator, actor=ACTOR) as editor:
                if ask.text:  # the operator's search: every row of the store, by keyword (as `memory list --all`)
                    searched = MemoryQuery(  # built, not copied: the core's bounds are checked
                        text=ask.text, types=query.types, tags=query.tags, since=query.since,
                        limit=min(ask.page * ask.per + 1, MAX_QUERY_LIMIT),
                    )
                    found = await editor.store.search(searched, audience=audience, include_archived=ask.archived)
                    return Listing.cut(found[(ask.page - 1) * ask.per :], ask.per, how="keyword, every row (operator view)")
                found = await editor.store.page(query, offset=(ask.page - 1) * ask.per, audience=audience, include_archived=ask.archived)
        except NoStoreYet:  # an agent that has stored nothing: empty (a read makes no store); a shared tier: 404
            if target.kind != "agent":
                raise
            return Listing.cut([], ask.per, how="no memories yet")
        return Listing.cut(found, ask.per, how="operator listing" if ask.operator else "listing")

    async def _recall(self, target: Target, ask: ListRequest) -> Listing:
        """The CLI's recall: the agent's federation (every tier it sees), or one tier on its own."""
        config = self.config
        mode = config.recall.mode_for(ask.mode)
        query = MemoryQuery(
            text=ask.text, retrieval_mode=mode, types=ask.types or None, tags=ask.tags or None, since=ask.since,
            limit=ask.page * ask.per + 1,
        )
        notices = Notices()
        from memory.embedding.factory import semantic_unavailable

        if why := semantic_unavailable(config.embedding, mode):
            notices.warn(why)
        if target.kind == "agent":
            from arcana_cli.federated import agent_federation
            from memory.runtime.assembly import quarantine_events

            card = self.card(target)
            query = query.model_copy(update={"agent_id": card.id})
            async with agent_federation(
                CliContext(self.home), card, notices, embedding=self.gateway(config), actor=ACTOR, reading=True
            ) as federation:
                report = await federation.recall(query)
                degraded = report.degraded + quarantine_events(federation)
            listing = Listing.cut(report.entries[(ask.page - 1) * ask.per :], ask.per, how=f"recall ({mode.value})")
            listing.tiers = report.tiers
            listing.notices = notices.lines + [f"tier {d.tier} degraded ({d.reason}): {d.detail}" for d in degraded]
            return listing
        kind = StoreKind.POOL if target.kind == "pool" else StoreKind.GLOBAL
        async with open_editor(self.home, config, target.operator, actor=ACTOR):  # refuses an unknown or empty tier
            pass
        from memory.embedding.factory import vector_options

        store = open_tier(
            self.home, kind, target.name, config=config, embedding=self.gateway(config),
            vector_options={**vector_options(config.embedding), "notify": notices.warn}, actor=ACTOR,
        )
        try:
            found = await store.search(query)
        finally:
            await store.aclose()
        listing = Listing.cut(found[(ask.page - 1) * ask.per :], ask.per, how=f"recall of {target.label} ({mode.value})")
        listing.notices = notices.lines
        return listing

    # -- one memory ----------------------------------------------------------

    async def memory(self, target: Target, memory_id: str) -> MemoryView:
        from memory.graph.edges import EdgeStore

        async with open_editor(self.home, self.config, target.operator, actor=ACTOR) as editor:
            entry = await editor.resolve(memory_id)
            chain = await editor.store.versions(entry.id, audience=Audience.OPERATOR, include_archived=True)
            ledger = await editor.store.history(entry.id)
            view = MemoryView(target, entry, chain, ledger)
            if editor.copies is not None:
                try:
                    copy = await editor.copies.copy_of(entry)
                except ArcanaMemoryError as exc:  # the global tier not readable: the memory is still shown
                    view.copies_unread = f"the global tier was not read: {exc}"
                else:
                    if copy is not None:
                        view.copies.append(("global", Target("global"), copy))
            if isinstance(editor.store, SQLiteAdapter):  # edges live beside the rows in SQLite stores
                edges = EdgeStore(editor.store)
                view.edges = [("to", e) for e in await edges.outgoing(entry.id)] + [("from", e) for e in await edges.incoming(entry.id)]
        if target.kind == "global":
            try:
                view.copies += await self._original(entry)
            except ArcanaMemoryError as exc:  # the agent's store not readable: likewise
                view.copies_unread = f"the agent's own store was not read: {exc}"
        return view

    async def _original(self, copy: MemoryEntry) -> list[tuple[str, Target, MemoryEntry]]:
        """The agent's own memory a global copy was promoted from, if the agent is still here."""
        found = await Originals(self.home, self.config, actor=ACTOR).find(copy)
        if found is None:
            return []
        card, original = found
        return [(f"agent {card.name} (private)", Target("agent", card.name), original)]

    # -- activity -------------------------------------------------------------

    async def activity(self, target: Target) -> Activity:
        """Growth (the ledger summed once, then only its new rows) and recall activity of one store."""
        try:
            async with open_editor(self.home, self.config, target.operator, actor=ACTOR) as editor:
                store = editor.store
                key = (str(store.path), _inode(store.path))
                growth = self._growth.get(key, Growth())
                growth = growth.extend(await store.growth(growth.seq))
                self._growth[key] = growth
                return Activity(growth, await store.recall_activity())
        except NoStoreYet:  # as in memories()
            if target.kind != "agent":
                raise
            return Activity(Growth())


def _inode(path) -> int | None:
    """A replaced file (a quarantined store started afresh) restarts its ledger: a new cache key."""
    try:
        return path.stat().st_ino
    except (AttributeError, OSError):
        return None


async def _census(opener) -> Census | str:
    """The census of the store ``opener`` opens, or why it could not be read (a server out of reach,
    a schema newer than this Arcana, a busy file): one such store must not hide the rest of the home."""
    try:
        store = opener()
        try:
            return await store.census()
        finally:
            await store.aclose()
    except ArcanaMemoryError as exc:
        return str(exc)


@dataclass
class ListRequest:
    text: str = ""
    operator: bool = False
    archived: bool = False
    mode: RetrievalMode | None = None
    types: list[MemoryType] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    since: datetime | None = None
    page: int = 1
    per: int = 50


@dataclass
class Listing:
    entries: list[MemoryEntry]
    more: bool
    how: str
    tiers: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    @classmethod
    def cut(cls, found: list[MemoryEntry], per: int, *, how: str) -> Listing:
        """One page of ``found`` (asked with one row extra, to know whether a next page exists)."""
        return cls(found[:per], len(found) > per, how)


@dataclass
class MemoryView:
    target: Target
    entry: MemoryEntry
    chain: list[MemoryEntry]
    ledger: list[LedgerRecord]
    copies: list[tuple[str, Target, MemoryEntry]] = field(default_factory=list)
    edges: list[tuple[str, Any]] = field(default_factory=list)
    copies_unread: str = ""  # why the tier holding its copy could not be read, if it could not

    @property
    def seq(self) -> int | None:
        """The newest ledger row: what an action carries, so a changed memory is not edited blind."""
        return self.ledger[-1].seq if self.ledger else None
