"""``arcana vault index``: bring a vault's SQLite index in line with its folder, incrementally.

Plan (read-only): walk the folder; a file whose (mtime, size) match the
manifest is not opened; one whose bytes hash the same is only re-stamped;
everything else is parsed. Apply: changed notes are upserted through the store
(and embedded, when an embedder is available — only these), notes that
disappeared are purged through the ledger, the manifest is updated, and the
wikilink edge set is rebuilt from every note's cached link targets.

One writer at a time: the apply step holds the vault's lock file, and a second
indexer (cron while a watch runs) waits for it instead of failing.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory import audit as audit_mod
from memory.adapters.markdown import FolderWalk, NoteIdentity, ParsedNote, read_note, walk_folder
from memory.adapters.sqlite import SQLiteAdapter
from memory.config import ArcanaConfig, load_config
from memory.errors import LockHeldError, NotFoundError
from memory.graph.edges import EdgeStore
from memory.graph.wikilinks import WIKILINK_SOURCE, EdgeIndexReport, LinkSource, link_graph, parse_wikilinks
from memory.locks import exclusive
from memory.types import MemoryEntry
from memory.vaults import manifest
from memory.vaults.manifest import FileRecord
from memory.vaults.registry import Vault
from memory.vaults.state import update_state

LOCK_WAIT_SECONDS = 300.0

Progress = Callable[[int, int], None]


@dataclass
class VaultIndexReport:
    vault: str
    scanned: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    embedding: str = "keyword-only"
    skipped: list[tuple[str, str]] = field(default_factory=list)
    frontmatter_problems: list[str] = field(default_factory=list)
    links: EdgeIndexReport = field(default_factory=EdgeIndexReport)
    notices: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed

    def skipped_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(reason for _, reason in self.skipped).items()))

    def to_json(self) -> dict[str, Any]:
        return {
            "vault": self.vault,
            "scanned": self.scanned,
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "skipped": self.skipped_counts(),
            "skipped_files": [{"path": p, "reason": r} for p, r in self.skipped],
            "frontmatter_problems": self.frontmatter_problems,
            "embedded": self.embedded,
            "embedding": self.embedding,
            "links": self.links.counts(),
            "notices": self.notices,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class IndexPlan:
    """What an index pass would do; computing it never writes anything."""

    walk: FolderWalk
    records: dict[str, FileRecord]  # the manifest as it will be: current notes only
    changed: list[ParsedNote]
    touched: list[FileRecord]
    skipped: list[tuple[str, str]]
    frontmatter_problems: list[str]
    removed_ids: list[str]
    removed_paths: list[str]
    stored_ids: set[str]

    def link_sources(self) -> list[LinkSource]:
        return [LinkSource(r.rel_path, r.id, r.aliases, r.targets) for r in self.records.values()]


def open_store(vault: Vault) -> SQLiteAdapter:
    """The vault's index store at ``<home>/vaults/<name>.db``."""
    home = vault.home
    return SQLiteAdapter(
        vault.db_path,
        actor=f"vault:{vault.name}",
        quarantine_dir=home.quarantine_dir,
        backup_dir=home.backups_dir,
        audit=audit_mod.AuditLog(home.audit_log),
    )


def _record(note: ParsedNote) -> FileRecord:
    targets = tuple(link.target for link in parse_wikilinks(note.body))
    return FileRecord(note.id, note.rel_path, note.mtime_ns, note.size, note.content_hash, note.aliases, targets)


def _identity_key(who: NoteIdentity) -> str:
    return json.dumps([who.agent_id, who.scope.value, who.pool_name, who.default_type.value])


def plan_index(vault: Vault, who: NoteIdentity, stored: tuple[dict[str, FileRecord], dict[str, str], set[str]]) -> IndexPlan:
    """Compare the folder with the manifest; read only files that may have changed."""
    records, meta, stored_ids = stored
    cfg = vault.config
    if not vault.root.is_dir():
        raise NotFoundError(f"vault '{vault.name}': folder {vault.root} is missing; the index was left as it was")
    walk = walk_folder(vault.root, ignore_globs=cfg.ignore, max_file_bytes=cfg.max_file_bytes)
    force = meta.get("identity") != _identity_key(who)
    current: dict[str, FileRecord] = {}
    changed: list[ParsedNote] = []
    touched: list[FileRecord] = []
    skipped = list(walk.skipped)
    problems: list[str] = []
    for info in walk.notes:
        old = records.get(info.rel_path)
        if not force and old is not None and (old.mtime_ns, old.size) == (info.mtime_ns, info.size) and old.id in stored_ids:
            current[info.rel_path] = old
            continue
        parsed = read_note(vault.root, info, who, cfg.max_file_bytes)
        if isinstance(parsed, str):
            skipped.append((info.rel_path, parsed))
            continue
        if parsed.frontmatter_problem:
            problems.append(parsed.rel_path)
        record = _record(parsed)
        current[info.rel_path] = record
        if not force and old is not None and old.content_hash == record.content_hash and old.id in stored_ids:
            touched.append(record)
        else:
            changed.append(parsed)
    live_ids = {r.id for r in current.values()}
    removed_ids = sorted((stored_ids | {r.id for r in records.values()}) - live_ids)
    removed_paths = sorted(set(records) - set(current))
    return IndexPlan(walk, current, changed, touched, sorted(skipped), sorted(problems), removed_ids, removed_paths, stored_ids)


@asynccontextmanager
async def writer_lock(vault: Vault, wait_seconds: float = LOCK_WAIT_SECONDS):
    """Hold the vault's writer lock, waiting (not failing) while another writer finishes."""
    deadline = time.monotonic() + wait_seconds
    while True:
        stack = ExitStack()
        try:
            stack.enter_context(exclusive(vault.lock_path, f"index of vault '{vault.name}'"))
            break
        except LockHeldError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.05)
    with stack:
        yield


def vector_store(store: SQLiteAdapter, config: ArcanaConfig, vault: Vault, gateway: Any, notify: Callable[[str], None]):
    """A VectorAdapter over ``store``; ``gateway`` (from :func:`embedding_gateway`) keeps a loaded model warm across passes."""
    from memory.adapters.vector import VectorAdapter

    return VectorAdapter(
        store,
        gateway or embedding_gateway(config, vault),
        vector_weight=config.embedding.vector_weight,
        bm25_weight=config.embedding.keyword_weight,
        notify=notify,
    )


def embedding_gateway(config: ArcanaConfig, vault: Vault):
    """Build the configured embedders once; a watch reuses this so each batch does not reload the model."""
    from memory.embedding.factory import build_gateway

    return build_gateway(config.embedding, vault.home)


async def write_entries(
    store: SQLiteAdapter,
    entries: list[MemoryEntry],
    *,
    embed: bool,
    backfill: bool,
    config: ArcanaConfig,
    vault: Vault,
    notices: list[str],
    on_progress: Progress | None,
    gateway: Any = None,
) -> tuple[int, str, bool | None]:
    """The one embed step: rows, and with ``embed`` vectors for exactly these rows.

    ``backfill`` also embeds rows left without a vector by an earlier
    keyword-only pass. Returns (vectors written, what embedded them, whether
    every row now has a vector — None when unknown/unchanged). Without a
    usable embedder the rows are still written and a notice says why.
    """
    if not embed:
        if entries:
            await store.write_many(entries, on_progress=on_progress)
        return 0, "keyword-only", (False if entries else None)
    from memory.errors import MemoryStorageError

    vectors = vector_store(store, config, vault, gateway, notices.append)
    embedded, model = 0, None
    if entries:
        report = await vectors.write_many(entries, on_progress=on_progress)
        embedded, model = report.embedded, report.model
    if notices:
        return embedded, "keyword-only", False
    if backfill:
        try:
            fill = await vectors.backfill(on_progress)
        except MemoryStorageError as exc:
            notices.append(str(exc))
            return embedded, "keyword-only", False
        embedded += fill.embedded
        model = model or fill.model
    return embedded, model or "up to date", True


async def index_vault(
    vault: Vault,
    *,
    embed: bool = True,
    config: ArcanaConfig | None = None,
    on_progress: Progress | None = None,
    lock_wait: float = LOCK_WAIT_SECONDS,
    gateway: Any = None,
) -> VaultIndexReport:
    """Make the vault's index match its folder now; the folder is only read."""
    started = time.perf_counter()
    config = config or load_config(vault.home.config_path)
    agent_id, scope, pool = vault.identity()
    who = NoteIdentity(agent_id, scope, pool)
    report = VaultIndexReport(vault=vault.name)
    async with writer_lock(vault, lock_wait):
        store = open_store(vault)
        try:
            stored = await store.run(manifest.load)
            plan = await asyncio.to_thread(plan_index, vault, who, stored)
            entries = [note.entry for note in plan.changed]
            report.added = sum(1 for e in entries if e.id not in plan.stored_ids)
            report.updated = len(entries) - report.added
            stored_meta = stored[1]
            report.embedded, report.embedding, complete = await write_entries(
                store, entries, embed=embed, backfill=stored_meta.get("vectors") != "complete", config=config,
                vault=vault, notices=report.notices, on_progress=on_progress, gateway=gateway,
            )
            vectors_state = stored_meta.get("vectors", "partial") if complete is None else ("complete" if complete else "partial")
            if plan.removed_ids:
                await store.purge(plan.removed_ids)
            report.removed = len(plan.removed_ids)
            await store.run(
                manifest.save,
                [_record(n) for n in plan.changed] + plan.touched,
                plan.removed_paths,
                {"identity": _identity_key(who), "root": str(vault.root), "vectors": vectors_state},
            )
            edges, report.links = link_graph(plan.link_sources(), plan.walk.attachments)
            report.links.edges_written = await EdgeStore(store).replace_source(WIKILINK_SOURCE, edges)
        finally:
            await store.aclose()
    report.scanned = len(plan.walk.notes)
    report.unchanged = len(plan.records) - len(plan.changed)
    report.skipped = plan.skipped
    report.frontmatter_problems = plan.frontmatter_problems
    report.seconds = time.perf_counter() - started
    update_state(vault.state_path, last_indexed_at=time.time(), last_index=_summary(report))
    return report


def _summary(report: VaultIndexReport) -> dict[str, Any]:
    return {k: v for k, v in report.to_json().items() if k != "skipped_files"}


async def check_vault(vault: Vault) -> tuple[IndexPlan, EdgeIndexReport]:
    """The folder as an index pass would see it now — dangling/ambiguous links, skipped files — writing nothing."""
    agent_id, scope, pool = vault.identity()
    who = NoteIdentity(agent_id, scope, pool)
    stored: tuple[dict, dict, set] = ({}, {}, set())
    if Path(vault.db_path).exists():
        store = open_store(vault)
        try:
            stored = await store.run(manifest.load)
        finally:
            await store.aclose()
    plan = await asyncio.to_thread(plan_index, vault, who, stored)
    _, links = link_graph(plan.link_sources(), plan.walk.attachments)
    return plan, links
