"""``arcana vault index``: bring a vault's SQLite index in line with its folder, incrementally.

Plan (read-only): walk the folder in path order — or, for a watcher that knows
which notes changed, stat just those — merged with the manifest read a page at
a time in the same order; a file whose (mtime, size) match the manifest is not
opened; one whose bytes hash the same is only re-stamped; everything else is
parsed. Apply: changed notes are upserted through the store (and embedded,
when an embedder is available — only these), notes that disappeared are
purged through the ledger, the manifest is updated, and wikilink edges are
rebuilt: for the notes read, plus — when notes were added, removed or
re-aliased — the notes with a link those notes' names can answer
(:mod:`memory.vaults.relink`); for the whole vault only when attachments, the
resolution rules or the identity changed, or a killed pass left links pending.

Changed notes are applied in windows (:func:`commit_windows`), each window's
notes read and parsed again when it comes (the plan keeps their manifest
records only, so a first index of 50,000 notes no longer holds 50,000 parsed
notes at once): each window's rows commit, then its vectors, then its manifest records, so a killed pass
keeps every finished window and the next pass neither re-reads nor re-embeds
it. Links are resolved after the last window, so a window also marks the
links pending, and the pass after a kill rebuilds all of them. A record is only written after its row and vector, so the manifest never
claims what is not stored; a row stored without its record is rewritten by the
next pass, and its vector, whose content hash still matches, is kept.

One writer at a time: the apply step holds the vault's lock file, and a second
indexer (cron while a watch runs) waits for it instead of failing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from memory.adapters import opener as stores
from memory.adapters.sqlite import SQLiteAdapter
from memory.config import ArcanaConfig, load_config
from memory.deadline import lock_wait
from memory.errors import LockHeldError, NotFoundError
from memory.graph.edges import EdgeStore
from memory.graph.wikilinks import (
    WIKILINK_SOURCE,
    EdgeIndexReport,
    LinkResolver,
    LinkSource,
    NoteLinks,
    WikilinkEdgeExtractor,
    filing_keys,
    link_graph,
    note_targets,
)
from memory.locks import WaitNotice, exclusive
from memory.markdown.notes import (
    FileStat,
    FolderWalk,
    NoteIdentity,
    ParsedNote,
    excluded,
    note_id,
    read_note,
    stat_note,
    walk_notes,
)
from memory.types import MemoryEntry
from memory.vaults import manifest, relink
from memory.vaults.manifest import FileRecord
from memory.vaults.plan import IndexPlan
from memory.vaults.registry import Vault

LOCK_WAIT_SECONDS = 300.0
# A pass commits about 1/WINDOW_SHARE of its notes at a time, so a kill loses at
# most that share; at least WINDOW_MIN (fewer commits), at most WINDOW_MAX (the
# embedder's length sort works within a window; 1,024 is its best measured size).
WINDOW_SHARE, WINDOW_MIN, WINDOW_MAX = 16, 16, 1024
LINKS_FORMAT = "2"  # bump to force a full link rebuild when resolution or per-note tallies change (2: NFC names)
NOTES_FORMAT = "8"  # bump to read every note again when what a note's text means changes (2: withheld notes; 3: code spans end at a blank line, "```x```" is no fence, text in NFC; 4: an unreadable frontmatter block stays text, and withholds; 5: Markdown links are link targets; 6: so are links in properties; 7: an ended version (superseded_by with valid_to) is withheld; 8: an asserted note keeps its source and confidence)
CHUNKS_FORMAT = "1"  # bump to re-chunk every note (an index from before chunking has none)

Progress = Callable[[int, int], None]


@dataclass
class VaultIndexReport:
    vault: str
    mode: str = "full"  # "full" walk, or "targeted" at paths a watcher named
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "vault": self.vault,
            "mode": self.mode,
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


def open_store(vault: Vault) -> SQLiteAdapter:
    """The vault's index store at ``<home>/vaults/<name>.db``."""
    return stores.open_store(vault.home, stores.StoreKind.VAULT, vault.name, actor=f"vault:{vault.name}")


def _record(note: ParsedNote) -> FileRecord:
    targets = note_targets(note)
    return FileRecord(note.id, note.rel_path, note.mtime_ns, note.size, note.content_hash, note.aliases, targets)


def _identity_key(who: NoteIdentity) -> str:
    return json.dumps([who.agent_id, who.scope.value, who.pool_name, who.default_type.value])


def _fingerprint(paths: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(paths).encode("utf-8", "surrogatepass")).hexdigest()


def plan_index(
    raw, vault: Vault, who: NoteIdentity, paths: Sequence[str] | None = None, *, reread: bool = False,
    page: int | None = None,
) -> IndexPlan:
    """Compare the folder (all of it, or just ``paths``) with the manifest on connection ``raw`` (None: no
    index yet); read only what may have changed (every note under ``reread``: what the manifest does not
    keep, such as bad frontmatter, is seen again).

    Both sides are walked in path order and merge-joined, the manifest ``page`` records at a time, so an
    unchanged vault of a million notes is compared holding one page and one directory listing.
    """
    if not vault.root.is_dir():
        raise NotFoundError(f"vault '{vault.name}': folder {vault.root} is missing; the index was left as it was")
    meta = manifest.load_meta(raw) if raw is not None else {}
    force = reread or meta.get("identity") != _identity_key(who) or meta.get("notes_format") != NOTES_FORMAT
    found = FolderWalk()
    # A watcher names a folder called like a note (``Proj.md/``) moved out of the vault as one gone
    # path, as it would a note: the notes recorded inside it are only found gone by a full walk.
    if paths is None or force or (raw is not None and manifest.holds_under(raw, set(paths))):
        infos = walk_notes(vault.root, found, ignore_globs=vault.ignore_globs, max_file_bytes=vault.max_note_bytes)
        attachments, mode, looked = found.attachments, "full", None
    else:
        looked = sorted(set(paths))
        infos = _stat_paths(vault, looked, found)
        attachments, mode = json.loads(meta.get("attachments", "[]")), "targeted"
    plan = IndexPlan(mode, meta, {}, 0, 0, 0, [], [], 0, found.skipped, [], [], [], attachments, force, force)
    leftover: list[str] = []  # ids of records not kept as they are: removed unless a note read now has them
    records = manifest.rows(raw, page or manifest.PAGE_ROWS) if raw is not None else iter(())
    old, exists = next(records, (None, False))
    for info in _then_none(infos):
        # Records before this note (all of them after the last) are notes not seen: gone, or not looked at.
        while old is not None and (info is None or old.rel_path < info.rel_path):
            plan.recorded += 1
            if looked is None or old.rel_path in looked:  # ``looked`` is small: a watcher's batch
                plan.removed_paths.append(old.rel_path)
                leftover.append(old.id)
                _moves(plan, old)
            else:
                plan.notes += 1
            old, exists = next(records, (None, False))
        if info is None:
            break
        plan.scanned += 1
        mine, row = (old, exists) if old is not None and old.rel_path == info.rel_path else (None, False)
        if mine is not None:
            plan.recorded += 1
            old, exists = next(records, (None, False))
        fresh = not force and mine is not None and row
        if fresh and (mine.mtime_ns, mine.size) == (info.mtime_ns, info.size):
            plan.notes += 1
            continue
        parsed = read_note(vault.root, info, who, vault.max_note_bytes)
        if mine is not None:
            leftover.append(mine.id)
        if isinstance(parsed, str):
            found.skipped.append((info.rel_path, parsed))
            if mine is not None:
                plan.removed_paths.append(mine.rel_path)
                _moves(plan, mine)
            else:  # no record, yet a killed pass may have left its row: a targeted pass sweeps no orphans
                leftover.append(note_id(info.rel_path))
            continue
        if parsed.frontmatter_problem:
            plan.frontmatter_problems.append(parsed.rel_path)
        record = _record(parsed)
        plan.notes += 1
        plan.read[info.rel_path] = record
        if mine is None:
            _moves(plan, record)
        if fresh and mine.content_hash == record.content_hash:
            plan.touched.append(record)
        else:
            plan.changed.append(record)
            if mine is not None and record.aliases != mine.aliases:
                _moves(plan, mine, record)
    if mode == "full" and not plan.notes and plan.recorded:
        # An unmounted drive often leaves its empty mount point behind: never empty an index over that.
        raise NotFoundError(
            f"vault '{vault.name}': {vault.root} has no notes now but the index holds {plan.recorded}; "
            "the index was left as it was (is the folder mounted? to forget the vault: `arcana vault remove`)"
        )
    live = {r.id for r in plan.read.values()}
    if mode == "full" and raw is not None:
        leftover += manifest.orphan_ids(raw)  # a full pass sweeps every row no note owns
    plan.removed_ids = sorted(set(leftover) - live)
    new = [r.id for r in plan.changed]
    existing = manifest.stored_ids(raw, new) if raw is not None else set()
    plan.added = sum(1 for i in new if i not in existing)
    plan.skipped.sort()
    plan.frontmatter_problems.sort()
    plan.attachments.sort()
    plan.relink_all = (
        plan.relink_all
        or meta.get("attachments_fp") != _fingerprint(plan.attachments)
        or meta.get("links_format") != LINKS_FORMAT
        or meta.get("links_pending") == "1"  # a pass stored notes, then died before their links
    )
    plan.structural = plan.structural or plan.relink_all
    return plan


def _moves(plan: IndexPlan, *records: FileRecord) -> None:
    """Note that ``records`` (a note's old and new self) came, went or changed aliases: links looked up by
    the keys they are filed under are resolved again (unless every link is)."""
    plan.structural = True
    if not plan.relink_all:
        plan.moved.update(*(filing_keys(relink.source(r)) for r in records))


def _stat_paths(vault: Vault, looked: list[str], found: FolderWalk) -> Iterator[FileStat]:
    """The notes among ``looked`` (sorted), as a full walk would list them."""
    for rel in looked:
        stat = stat_note(vault.root, rel, ignore_globs=vault.ignore_globs, max_file_bytes=vault.max_note_bytes)
        if isinstance(stat, str):
            found.skipped.append((rel, stat))
        elif stat is not None:
            yield stat


def _then_none(items: Iterable[FileStat]) -> Iterator[FileStat | None]:
    yield from items
    yield None


def current_records(raw, plan: IndexPlan) -> list[FileRecord]:
    """Every note after ``plan``, in path order, with targets: the manifest less removed paths, overlaid with
    the notes read this pass. Only a link rebuild needs them all (it resolves against every note)."""
    return sorted(relink.current(raw, plan, targets=True), key=lambda r: r.rel_path)


@asynccontextmanager
async def writer_lock(vault: Vault, notify: Callable[[str], None] | None = None):
    """Hold the vault's writer lock, waiting (not failing) while another writer finishes, for the
    command's lock wait (:data:`LOCK_WAIT_SECONDS` by default); a long wait is said through ``notify``."""
    wait_seconds = lock_wait(LOCK_WAIT_SECONDS)
    deadline = time.monotonic() + wait_seconds
    notice = WaitNotice(notify, f"waiting for another index run of vault '{vault.name}' to finish "
                                f"(lock {vault.lock_path}; at most {wait_seconds:g}s)")
    while True:
        stack = ExitStack()
        try:
            stack.enter_context(exclusive(vault.lock_path, f"index of vault '{vault.name}'"))
            break
        except LockHeldError:
            if time.monotonic() >= deadline:
                raise
            notice.still_waiting()
            await asyncio.sleep(0.05)
    with stack:
        yield


def embedding_gateway(config: ArcanaConfig, vault: Vault):
    """Build the configured embedders once; a watch reuses this so each batch does not reload the model."""
    from memory.embedding.factory import build_gateway

    return build_gateway(config.embedding, vault.home)


def vector_store(store: SQLiteAdapter, config: ArcanaConfig, vault: Vault, gateway: Any, notify: Callable[[str], None]):
    """A VectorAdapter over ``store``; ``gateway`` (from :func:`embedding_gateway`) keeps a loaded model warm.

    Notes are embedded in chunks too, so a section past the model's window is found. Notes left
    without vectors are embedded by the vault's next index (`arcana reindex` does not open vaults).
    """
    from memory.adapters.opener import vector_adapter

    return vector_adapter(store, config.embedding, vault.home, notify=notify, gateway=gateway, chunk_long=True,
                          embed_later=f"run `arcana vault index {vault.name}` again once it is up")


def commit_windows(count: int) -> list[range]:
    """How ``count`` changed notes are cut into commits (see WINDOW_SHARE)."""
    size = min(max(count // WINDOW_SHARE, WINDOW_MIN), WINDOW_MAX)
    return [range(start, min(start + size, count)) for start in range(0, count, size)]


async def write_entries(
    store: SQLiteAdapter,
    sizes: Sequence[int],
    load: Callable[[list[int]], Awaitable[list[tuple[int, MemoryEntry]]]],
    *,
    embed: bool,
    backfill: bool,
    config: ArcanaConfig,
    vault: Vault,
    notices: list[str],
    on_progress: Progress | None,
    gateway: Any = None,
    on_window: Callable[[list[int]], Awaitable[None]] | None = None,
) -> tuple[int, str, bool | None]:
    """The one embed step: rows, and with ``embed`` vectors for exactly these rows.

    ``sizes`` are the notes' byte sizes; they go smallest first (so each
    window pads little), one window at a time, ``load(indices)`` giving a
    window's (index, entry) pairs only when it comes (a note gone since the
    plan is left out), so one window's entries are held, not the folder's.
    After a window's rows and vectors have committed, ``on_window`` gets the
    indices it wrote. ``backfill`` also embeds rows
    left without a vector by an earlier keyword-only or killed pass. Returns
    (vectors written, what embedded them, whether every row now has a vector —
    None when unknown/unchanged). Without a usable embedder the rows are still
    written and a notice says why.
    """
    # A keyword-only home (embedding.providers empty) indexes as --keyword-only does: by choice, no notice.
    embed = embed and bool(config.embedding.providers)
    vectors = vector_store(store, config, vault, gateway, notices.append) if embed else None
    embedded, model = 0, None
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    for window in commit_windows(len(sizes)):
        loaded = await load([order[i] for i in window])
        picked, batch = [i for i, _ in loaded], [entry for _, entry in loaded]
        progress = _from(on_progress, window.start, len(sizes))
        if vectors is None:
            await store.write_many(batch, on_progress=progress)
        else:
            report = await vectors.write_many(batch, on_progress=progress)
            embedded, model = embedded + report.embedded, model or report.model
        if on_window is not None:
            await on_window(picked)
    if vectors is None:
        return 0, "keyword-only", (False if sizes else None)
    from memory.errors import MemoryStorageError

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


def _reread(vault: Vault, who: NoteIdentity, records: list[FileRecord]) -> list[ParsedNote | str]:
    """A window's notes, read and parsed again now that their window has come."""
    return [read_note(vault.root, FileStat(r.rel_path, r.mtime_ns, r.size), who, vault.max_note_bytes) for r in records]


def _kept(plan: IndexPlan, planned: FileRecord, note: ParsedNote | str) -> bool:
    """Whether a re-read note is written now: not when it is unreadable (named as skipped) or now carries
    another id (its old row's removal was not planned): unrecorded, the next pass reads it again."""
    if isinstance(note, str):
        plan.skipped.append((planned.rel_path, note))
        return False
    return note.id == planned.id


async def _remove(store: SQLiteAdapter, ids: Sequence[str], paths: Sequence[str]) -> int:
    """Purge notes' rows (through the ledger) and forget their records at once: `vault links` and the UI's
    graph read the records, so a note made hidden is not named there either while a long pass runs. Links
    to them are rebuilt by this pass or, killed or called outside one, by the next (links_pending)."""
    removed = await store.purge(ids) if ids else 0
    await store.run(manifest.save, [], paths, {"links_pending": "1"}, {})
    return removed


def _dropped(plan: IndexPlan, planned: FileRecord) -> str:
    """Plan the removal of a note the plan meant to write but a window found skipped (a note made
    ``visibility: hidden`` mid-run is withheld): its record goes with its row; returns its id."""
    plan.read.pop(planned.rel_path, None)
    plan.removed_paths.append(planned.rel_path)
    _moves(plan, planned)  # a note left: links to it dangle now
    return planned.id


def _replan(plan: IndexPlan, records: list[FileRecord], i: int, note: ParsedNote) -> MemoryEntry:
    """The entry of a re-read note; a note edited since the plan replaces its record there, so the
    manifest and links say what was written (new aliases: the links either set names are resolved again)."""
    record = _record(note)
    if record != records[i]:
        if record.aliases != records[i].aliases:
            _moves(plan, records[i], record)
        records[i] = plan.read[record.rel_path] = record
        if note.frontmatter_problem and note.rel_path not in plan.frontmatter_problems:
            plan.frontmatter_problems.append(note.rel_path)
    return note.entry


def _from(on_progress: Progress | None, start: int, total: int) -> Progress | None:
    """``on_progress`` for a window beginning at ``start`` of ``total``."""
    if on_progress is None:
        return None
    return lambda done, _window_total: on_progress(start + done, total)


# db path -> (structure token, resolver): a watch re-resolves one edited note without
# re-indexing 10k names, as long as no pass since changed which names exist.
_RESOLVERS: dict[str, tuple[str, LinkResolver]] = {}


async def _resolver(store: SQLiteAdapter, plan: IndexPlan) -> LinkResolver:
    token = plan.meta.get("structure", "")
    cached = _RESOLVERS.get(str(store.path))
    if cached is not None and cached[0] == token:
        return cached[1]
    notes = await store.run(current_records, plan)
    resolver = LinkResolver([LinkSource(r.rel_path, r.id, r.aliases) for r in notes], plan.attachments)
    _RESOLVERS[str(store.path)] = (token, resolver)
    return resolver


async def _rebuild_links(store: SQLiteAdapter, plan: IndexPlan) -> dict[str, tuple[int, ...]]:
    """Rewrite wikilink edges through the extractor; return the per-note tallies that changed."""
    extractor = WikilinkEdgeExtractor(None, EdgeStore(store))
    if plan.relink_all:
        per_note: dict[str, NoteLinks] = {}
        await extractor.replace_all(_sources(await store.run(current_records, plan)), plan.attachments, per_note=per_note)
        return {rel: links.tally() for rel, links in per_note.items()}
    notes = await store.run(relink.affected, plan)
    if not notes and not plan.removed_ids:
        return {}
    # A pass that changed no name keeps a watch's resolver; one that did resolves against the few notes named.
    resolver = await store.run(relink.resolver_for, plan, notes) if plan.structural else await _resolver(store, plan)
    results = await extractor.replace_notes(resolver, notes, gone=plan.removed_ids)
    return {rel: links.tally() for rel, links in results.items()}


def _sources(records: list[FileRecord]) -> list[LinkSource]:
    """Notes as the resolver sees them."""
    return [relink.source(r) for r in records]


def _link_totals(raw) -> EdgeIndexReport:
    totals = manifest.totals(raw)
    edges = raw.execute("SELECT count(*) FROM memory_edges WHERE source = ?", (WIKILINK_SOURCE,)).fetchone()[0]
    return EdgeIndexReport(
        notes_scanned=totals["notes"],
        links_found=totals["links"],
        resolved=totals["resolved"],
        dangling=totals["dangling"],
        ambiguous=totals["ambiguous"],
        edges_written=edges,
        attachments=totals["attachments"],
        self_links=totals["self_links"],
    )


async def index_vault(
    vault: Vault,
    *,
    embed: bool = True,
    config: ArcanaConfig | None = None,
    on_progress: Progress | None = None,
    gateway: Any = None,
    paths: Sequence[str] | None = None,
    notify: Callable[[str], None] | None = None,
) -> VaultIndexReport:
    """Make the vault's index match its folder now; the folder is only read.

    ``paths`` (root-relative note paths a watcher saw change) limits the look
    to those files; without it the whole folder is walked. ``notify`` hears
    when the run has waited a second for another run's lock.
    """
    started = time.perf_counter()
    vault.check_apart()  # before the lock: its file would be one more write into the folder
    config = config or load_config(vault.home.config_path)
    agent_id, scope, pool = vault.identity()
    who = NoteIdentity(agent_id, scope, pool)
    report = VaultIndexReport(vault=vault.name)
    async with writer_lock(vault, notify):
        if not vault.registered():  # removed while this run waited: never recreate its index
            raise NotFoundError(f"vault '{vault.name}' was removed; nothing was indexed")
        store = open_store(vault)
        try:
            plan = await store.run(plan_index, vault, who, paths)  # read-only; on the store's thread
            records, stored_meta = plan.changed, plan.meta
            report.added = plan.added
            report.updated = len(records) - report.added
            # A window's records may carry the identity only when no note is recorded under another one.
            owned = stored_meta.get("identity") == _identity_key(who) or not plan.recorded
            window_meta = {"identity": _identity_key(who), "root": str(vault.root)} if owned else {}
            # A window's notes are recorded as indexed before their links are: until this pass's link step
            # commits, the next pass must rebuild every link (it will see these notes as unchanged).
            window_meta["links_pending"] = "1"

            # Removed notes go before any window: a note made hidden is never found or named while the pass embeds.
            dropped = [await _remove(store, plan.removed_ids, plan.removed_paths)] if plan.removed_ids or plan.removed_paths else []

            async def committed(picked: list[int]) -> None:
                await store.run(manifest.save, [records[i] for i in picked], [], window_meta, {})

            async def load(picked: list[int]) -> list[tuple[int, MemoryEntry]]:
                notes = await asyncio.to_thread(_reread, vault, who, [records[i] for i in picked])
                gone = [records[i] for i, note in zip(picked, notes, strict=True) if isinstance(note, str)]
                if gone:  # hidden, deleted, grown too large since the plan: its old row goes now, not next pass
                    ids = [_dropped(plan, r) for r in gone]
                    dropped.append(await _remove(store, ids, [r.rel_path for r in gone]))
                return [(i, _replan(plan, records, i, note)) for i, note in zip(picked, notes, strict=True)
                        if _kept(plan, records[i], note)]

            report.embedded, report.embedding, complete = await write_entries(
                store, [r.size for r in records], load, embed=embed, config=config,
                backfill=stored_meta.get("vectors") != "complete" or stored_meta.get("chunks") != CHUNKS_FORMAT,
                vault=vault, notices=report.notices, on_progress=on_progress, gateway=gateway, on_window=committed,
            )
            report.notices.extend(vault.obsidian_excluded.problems)
            vectors = stored_meta.get("vectors", "partial") if complete is None else ("complete" if complete else "partial")
            report.removed = sum(dropped)  # rows purged: an id planned only in case a killed pass left its row is none
            counts = await _rebuild_links(store, plan)
            meta = {
                "identity": _identity_key(who),
                "root": str(vault.root),
                "vectors": vectors,
                "links_format": LINKS_FORMAT,
                "notes_format": NOTES_FORMAT,
                "chunks": CHUNKS_FORMAT if vectors == "complete" else "",
                "links_pending": "",
            }
            if plan.structural:
                meta["structure"] = uuid.uuid4().hex
            if plan.mode == "full":
                meta["attachments"] = json.dumps(plan.attachments, ensure_ascii=False)
                meta["attachments_fp"] = _fingerprint(plan.attachments)
            await store.run(manifest.save, plan.touched, plan.removed_paths, meta, counts)  # changed: saved per window
            report.links = await store.run(_link_totals)
        finally:
            await store.aclose()
    report.mode = plan.mode
    report.scanned = plan.scanned
    report.unchanged = plan.notes - len(plan.changed)
    report.skipped = sorted(plan.skipped)
    report.frontmatter_problems = sorted(plan.frontmatter_problems)
    report.seconds = time.perf_counter() - started
    # A success clears an earlier failure (a watch's, or a cron run's): status shows the present.
    if told := vault.record(last_indexed_at=time.time(), last_index=summary(report), last_error=None, last_error_at=None):
        report.notices.append(told)
    return report


async def drop_excluded(vault: Vault, *, notify: Callable[[str], None] | None = None) -> int:
    """Purge the indexed notes ``vault``'s exclusions (its ``ignore``, Obsidian's excluded files) now keep
    out, and return how many: after `config set vaults.NAME.ignore` they answered every search until the
    next pass. Waits for a pass in flight, which may still have written them under the old globs."""
    if not vault.db_path.exists():
        return 0
    async with writer_lock(vault, notify):
        if not vault.registered() or not vault.db_path.exists():
            return 0
        globs = vault.ignore_globs
        store = open_store(vault)
        try:
            gone = await store.run(manifest.matching, lambda rel: excluded(rel, globs)) if globs else []
            if gone:
                await _remove(store, [i for i, _ in gone], [p for _, p in gone])
        finally:
            await store.aclose()
    return len(gone)


def failure(name: str, exc: BaseException) -> str:
    """What a failed index of vault ``name`` says, naming the vault once: most of a vault's own
    errors name it already, a storage error (a busy or damaged index) does not."""
    said, named = str(exc), f"vault '{name}'"
    return said if said.startswith(named) else f"{named}: {said}"


def summary(report: VaultIndexReport) -> dict[str, Any]:
    """The report without its per-file list: what the state file and watch lines carry."""
    return {k: v for k, v in report.as_dict().items() if k != "skipped_files"}


async def check_vault(vault: Vault) -> tuple[IndexPlan, EdgeIndexReport]:
    """The folder as a full index pass would see it now — every dangling/ambiguous link, skipped file — writing nothing."""
    agent_id, scope, pool = vault.identity()
    who = NoteIdentity(agent_id, scope, pool)
    # Every note is read again: an unchanged note's bad frontmatter is still bad after an index.
    if vault.db_path.exists():
        store = open_store(vault)
        try:
            plan = await store.run(lambda raw: plan_index(raw, vault, who, reread=True))
            notes = await store.run(current_records, plan)
        finally:
            await store.aclose()
    else:
        plan = await asyncio.to_thread(lambda: plan_index(None, vault, who, reread=True))
        notes = [plan.read[rel] for rel in sorted(plan.read)]
    _, links = link_graph(_sources(notes), plan.attachments)
    return plan, links
