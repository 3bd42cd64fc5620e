"""Importing an ``export --all`` file as a whole: every store it holds goes back to its own store.

An ``--all`` export names each line's ``store`` (``agent:NAME``, ``pool:NAME``,
``global``) and its header describes the stores (:func:`describe`): an agent's
id and name, a pool's members. Import restores each into the same kind of
store of this home, creating what is missing: an agent with its id and name
(its settings are not in the file), a pool as a local one with its members
rejoined. A store that exists already is imported into like a one-store
import (upsert by id, an operator's restrictions kept); a pool that exists keeps
its members, whatever the file lists, so a file never lets an agent into a pool
of this home. Nothing is merged
into one target: that is what the single-store import refused to guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from memory.agents import AgentCard, AgentRegistry
from memory.config import ArcanaConfig
from memory.errors import ImportFormatError
from memory.home import Home, check_name
from memory.limits import MAX_IMPORT_STORES
from memory.operations import export as core
from memory.types import MemoryScope

Records = Iterable[tuple[str, dict | str]]


def describe(cards: list[AgentCard], pools: dict[str, list[str]], with_global: bool) -> list[dict]:
    """The header's ``stores``: what :func:`restore` needs to rebuild each store of an --all export."""
    return (
        [{"store": f"agent:{c.name}", "agent_id": c.id} for c in cards]
        + [{"store": f"pool:{name}", "members": members} for name, members in pools.items()]
        + ([{"store": "global"}] if with_global else [])
    )


def stores_of(head: dict) -> list[dict] | None:
    """The stores an --all export holds, each ``{"store", "kind", "name"}`` (plus an agent's
    ``agent_id``, a pool's ``members`` when the header gives them), or None for a one-store export.

    Kind and name are read off the label, whatever else a descriptor says; a file written before
    ``stores`` existed gives its labels only (its agents are then restored by name)."""
    what = head.get("exported")
    if not isinstance(what, dict) or "all" not in what:
        return None
    given = what.get("stores") if isinstance(what.get("stores"), list) else []
    extra = {d["store"]: d for d in given if isinstance(d, dict) and isinstance(d.get("store"), str)}
    listed = what["all"] if isinstance(what["all"], list) else []
    if odd := [label for label in listed if not isinstance(label, str)]:
        kind = {dict: "an object", list: "a list"}.get(type(odd[0]), repr(odd[0]))  # never a whole object echoed
        raise ImportFormatError(f"the header names a store that is {kind}, not agent:NAME, pool:NAME or global")
    labels = dict.fromkeys([*listed, *extra])
    if len(labels) > MAX_IMPORT_STORES:  # each may become an agent or a pool: refused before one is made
        raise ImportFormatError(
            f"the header names {len(labels):,} stores, over the limit of {MAX_IMPORT_STORES:,} one import makes; "
            "export the home in parts (`export --agent NAME`, `--pool NAME`, `--global`) and import each"
        )
    out, ids = [], {}  # the agent ids given so far: each store's label
    for label in labels:
        kind, _, name = str(label).partition(":")
        if (kind, bool(name)) not in (("agent", True), ("pool", True), ("global", False)):
            raise ImportFormatError(f"the header names a store {label!r} that is not agent:NAME, pool:NAME or global")
        if name:
            check_name(kind, name)  # refused here, before any store of the home is touched
        d = extra.get(label, {})
        store = {"store": label, "kind": kind, "name": name or None}
        if kind == "agent" and isinstance(d.get("agent_id"), str):
            store["agent_id"] = check_name("agent id", d["agent_id"])  # it becomes the agent's folder name
            if (twin := ids.setdefault(store["agent_id"], label)) != label:  # both would go into one store
                raise ImportFormatError(
                    f"the header gives {twin} and {label} the same agent id {store['agent_id']!r}; "
                    "each agent store needs its own"
                )
        if kind == "pool" and isinstance(d.get("members"), list):
            store["members"] = [m for m in d["members"] if isinstance(m, str)]
        out.append(store)
    return out


def refusal(source: str, stores: list[dict]) -> str:
    """Why an --all export is not imported into one target, and how to import it."""
    names = ", ".join(d["store"] for d in stores) or "no stores"
    return (
        f"{source} is an `export --all` of {len(stores)} stores ({names}); give no --agent, --pool or --global "
        "to restore each into its own store, or export one store (`export --agent NAME`) to import it into one"
    )


@dataclass
class StoreImport:
    store: str
    created: bool
    report: core.ImportReport

    def as_dict(self) -> dict:
        return {"store": self.store, "created": self.created, **self.report.as_dict()}


@dataclass
class RestoreReport:
    stores: list[StoreImport] = field(default_factory=list)
    bad: list[tuple[str, str]] = field(default_factory=list)  # lines naming no store of the file
    strict_refused: bool = False
    joined: int = 0  # pool memberships rejoined

    @property
    def read(self) -> int:
        return sum(s.report.read for s in self.stores)

    @property
    def all_bad(self) -> list[tuple[str, str]]:
        return self.bad + [b for s in self.stores for b in s.report.bad]

    def as_dict(self) -> dict:
        return {
            "read": self.read,
            "stores": [s.as_dict() for s in self.stores],
            "joined": self.joined,
            "bad": [{"where": w, "error": e} for w, e in self.all_bad],
            "imported": not self.strict_refused,
        }


def _described_card(described: dict) -> AgentCard | None:
    """The card a described agent is made with when neither its id nor its name is taken here."""
    if described.get("agent_id") is None:
        return None
    try:
        return AgentCard(id=described["agent_id"], name=described["name"])
    except ValueError as exc:
        raise ImportFormatError(f"store {described['store']!r}: {exc}") from None


def _label(record: dict | str, labels: set[str]) -> str | None:
    """The store a record belongs to; an unlabelled one in a file of one store is that store's
    (an --all export of a home with one store labelled no line before ``stores`` existed)."""
    if not isinstance(record, dict):
        return None
    if "store" not in record and len(labels) == 1:
        return next(iter(labels))
    return record.get("store")


def _agent_ids(run: Iterator, seen: set[str]) -> Iterator:
    """``run`` as it is read, each line's agent id added to ``seen``: an agent a file describes by name
    only (written before ``stores``) is known by the id its own lines give, so its copies stay its own."""
    for item in run:
        memory = item[1].get("memory") if isinstance(item[1], dict) else None
        if isinstance(memory, dict) and isinstance(memory.get("agent_id"), str):
            seen.add(memory["agent_id"])
        yield item


def _by_store(records: Records, labels: set[str], bad: list) -> Iterator[tuple[str, Iterator]]:
    """Runs of consecutive records of one store (an --all export writes each store's lines together)."""
    def label(item: tuple[str, dict | str]) -> str | None:
        return _label(item[1], labels)

    for store, run in groupby(records, key=label):
        if store in labels:
            yield store, run
            continue
        for where, record in run:
            bad.append((where, record if isinstance(record, str) else f"names no store of this export ({store!r})"))


async def restore(
    home: Home,
    config: ArcanaConfig,
    stores: list[dict],
    records: Callable[[], Records],
    *,
    strict: bool = False,
    model: dict | None = None,
    gateway: Any = None,
    actor: str = "cli",
    max_content_bytes: int | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> RestoreReport:
    """Import every store of an --all export (``records()`` reads its lines again) into this home."""
    from memory.adapters.opener import open_store, open_tier
    from memory.federation.pools import PoolRegistry
    from memory.operator.edits import GlobalCopies, Originals
    from memory.store_kinds import StoreKind

    report = RestoreReport()
    limit = max_content_bytes if max_content_bytes is not None else config.memory.max_content_bytes
    described = {d["store"]: d for d in stores}
    if strict:  # everything is checked before any store is touched
        for where, record in records():
            problem = record if isinstance(record, str) else core._checked(record, limit)
            if isinstance(problem, str):
                report.bad.append((where, problem))
            elif _label(record, set(described)) not in described:
                report.bad.append((where, f"names no store of this export ({record.get('store')!r})"))
        if report.bad:
            report.strict_refused = True
            return report
    agents = AgentRegistry(home)
    pools = PoolRegistry(home)
    restored_ids: dict[str, str] = {}  # the file's agent id -> this home's
    restored: dict[str, AgentCard] = {}  # this home's id -> its card, for the pools to rejoin
    # Every agent first (each by exact id, never a name or an id prefix, which would put one agent's lines
    # into another's store; else by name), so pools can rejoin them and an empty agent is restored too.
    described_agents = [d for d in stores if d["kind"] == "agent"]
    wanted = [(_described_card(d), d["name"]) for d in described_agents]  # all checked before one is made
    for d, (card, created) in zip(described_agents, agents.restore(wanted), strict=True):
        restored_ids[d.get("agent_id") or card.id] = card.id
        restored[card.id] = card
        d["_card"], d["_created"] = card, created
    for d in stores:
        if d["kind"] == "pool":
            d["_created"] = d["name"] not in pools.names()
            if d["_created"]:
                await pools.create(d["name"])
    done = 0
    for label, run in _by_store(records(), set(described), report.bad):
        d = described[label]
        copies = originals = None
        seen: set[str] = set()  # the agent ids of a name-only agent's lines
        if d["kind"] == "agent":
            card = d["_card"]
            if d.get("agent_id") is None:
                run = _agent_ids(run, seen)
            store = open_store(home, StoreKind.PRIVATE, card.id, actor=actor)
            target = core.Target(MemoryScope.PRIVATE, agent_id=card.id)
            copies = GlobalCopies.of_home(home, config, actor=actor)
        elif d["kind"] == "pool":
            store = pools.store(d["name"], actor=actor)
            target = core.Target(MemoryScope.SHARED, pool_name=d["name"], owners=restored_ids)
        else:
            store = open_tier(home, StoreKind.GLOBAL, config=config, actor=actor)
            target = core.Target(MemoryScope.GLOBAL, owners=restored_ids)  # a copy's original is found by its owner here
            originals = Originals(home, config, actor=actor)  # as `import --global`: a changed copy's original follows
        try:
            await store.connect()
            part = await core.import_records(
                run, store, target, model=model, gateway=gateway, copies=copies, originals=originals,
                max_content_bytes=limit,
                on_progress=None if on_progress is None else (lambda n, base=done: on_progress(base + n)),
            )
        finally:
            if copies is not None:
                await copies.aclose()
            await store.aclose()
        done += part.read
        if len(seen) == 1 and (file_id := next(iter(seen))) not in restored_ids:  # its lines agree on one id
            restored_ids[file_id] = d["_card"].id
        report.stores.append(StoreImport(label, bool(d.get("_created")), part))
    imported = {s.store for s in report.stores}
    for d in stores:  # an agent with no memories is in no run, but it was restored
        if d["kind"] == "agent" and d["store"] not in imported:
            report.stores.append(StoreImport(d["store"], bool(d["_created"]), core.ImportReport()))
    for d in stores:  # only a pool made here takes the file's members: a pool of this home keeps its own
        if d["kind"] == "pool" and d["_created"]:
            for member in d.get("members") or []:
                if isinstance(member, str) and member in restored_ids:
                    report.joined += pools.join(restored[restored_ids[member]], d["name"])
    return report
