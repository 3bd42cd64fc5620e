"""Corrupt stores: moved aside (never deleted), listed until the operator deals with them, salvaged on request.

A store found corrupt is moved — with its -wal and -shm — to its own folder
under ``<home>/quarantine/`` with a ``quarantine.json`` saying where it came
from and why; that folder's name is its id. It stays there, and ``arcana
doctor`` fails on it, until the operator either restores it (every readable
row is copied back into the live store through the ledger, then the folder
goes to the trash) or dismisses it (straight to the trash).

Salvage reads a private copy, never the quarantined file itself: a scan in
rowid order as far as it goes; at a damaged page it steps one rowid past the
one that broke the scan and seeks again, so one bad page costs only its own
rows and an intact stretch is still read as one scan.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memory.audit import AuditLog
from memory.errors import MemoryCorruptError, NotFoundError
from memory.home import Home, private_dir
from memory.sqlite import mutations
from memory.sqlite.batches import select_in
from memory.sqlite.connection import dbapi, transaction
from memory.sqlite.rows import COLUMNS, row_to_entry
from memory.types import MemoryEntry

META = "quarantine.json"
# How many rowids in a row may fail before salvage stops, when the table's largest rowid cannot be read.
PROBE_PAST = 10_000
_LEGACY_NAME = re.compile(r"^(?P<parent>[^-]+)-(?P<stem>.+)-\d{8}T\d{6}(?:-\d+)?$")

# Quarantines made by this process, oldest first: the CLI turns any made during a
# command into exit 5, whichever store (agent, pool, vault index) it was.
_MOVED: list[Path] = []


def quarantine_store(db: Path, quarantine_dir: Path, reason: str, audit: AuditLog | None) -> Path:
    """Move ``db`` and its WAL files to a fresh folder under ``quarantine_dir``; return it."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    dest = quarantine_dir / f"{db.parent.name}-{db.stem}-{stamp}"
    suffix = 1
    while dest.exists():
        suffix += 1
        dest = quarantine_dir / f"{db.parent.name}-{db.stem}-{stamp}-{suffix}"
    private_dir(quarantine_dir)
    dest.mkdir(mode=0o700)
    for extra in ("", "-wal", "-shm"):
        source = Path(f"{db}{extra}")
        if source.exists():
            source.replace(dest / source.name)
    meta = dest / META
    meta.write_text(json.dumps({"database": str(db), "reason": reason, "at": time.time()}, ensure_ascii=False))
    meta.chmod(0o600)
    _MOVED.append(dest)
    if audit is not None:
        audit.append("store_quarantined", database=str(db), moved_to=str(dest), reason=reason)
    return dest


def moved_count() -> int:
    return len(_MOVED)


def moved_since(mark: int) -> list[Path]:
    """Folders this process quarantined after :func:`moved_count` returned ``mark``."""
    return list(_MOVED[mark:])


@dataclass(frozen=True)
class Quarantined:
    """One quarantined store: its folder (named by its id) and where it came from."""

    id: str
    folder: Path
    database: Path | None  # the live path it was moved from (None: unknown)
    reason: str
    at: float | None

    @property
    def file(self) -> Path | None:
        """The quarantined database file itself."""
        if self.database is not None and (self.folder / self.database.name).exists():
            return self.folder / self.database.name
        found = sorted(p for p in self.folder.glob("*.db"))
        return found[0] if found else None

    def as_dict(self) -> dict:
        file = self.file
        return {
            "id": self.id,
            "folder": str(self.folder),
            "database": str(self.database) if self.database else None,
            "reason": self.reason,
            "at": self.at,
            "bytes": file.stat().st_size if file else 0,
        }


def _legacy_origin(home: Home, name: str) -> Path | None:
    """Where a folder quarantined before ``quarantine.json`` existed came from, by its name."""
    match = _LEGACY_NAME.match(name)
    if match is None:
        return None
    parent, stem = match["parent"], match["stem"]
    if (home.agents_dir / parent).is_dir():
        return home.agents_dir / parent / f"{stem}.db"
    places = {"pools": home.pools_dir, "vaults": home.vaults_dir, home.global_db.parent.name: home.global_db.parent}
    return places[parent] / f"{stem}.db" if parent in places else None


def load(home: Home, folder: Path) -> Quarantined:
    """The quarantined store in ``folder``."""
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
        return Quarantined(folder.name, folder, Path(meta["database"]), str(meta.get("reason", "")), meta.get("at"))
    except (OSError, ValueError, KeyError, TypeError):
        return Quarantined(folder.name, folder, _legacy_origin(home, folder.name), "unknown (no quarantine.json)", None)


def list_quarantined(home: Home) -> list[Quarantined]:
    """Every store waiting in quarantine, oldest first."""
    if not home.quarantine_dir.is_dir():
        return []
    found = [load(home, folder) for folder in home.quarantine_dir.iterdir() if folder.is_dir()]
    return sorted(found, key=lambda q: (q.at or 0.0, q.id))


def find(home: Home, quarantine_id: str) -> Quarantined:
    for item in list_quarantined(home):
        if item.id == quarantine_id:
            return item
    raise NotFoundError(f"no quarantined store '{quarantine_id}'; see `arcana quarantine list`")


@dataclass
class Salvage:
    """What could be read back from a quarantined file."""

    entries: list[MemoryEntry] = field(default_factory=list)
    unreadable: int = 0  # rowids that exist but could not be read or made sense of
    damaged: str | None = None  # the first read error, if any


def _entry(row, present: list[str]) -> MemoryEntry | None:
    data = dict(zip(present, row, strict=True))
    values = tuple(data.get(column) for column in COLUMNS)
    try:
        return row_to_entry(values) if data.get("id") and data.get("content") is not None else None
    except (ValueError, TypeError):
        return None


def salvage(file: Path) -> Salvage:
    """Every readable row of ``file``'s ``memories`` table (read from a copy; ``file`` is not touched).

    Raises :class:`MemoryCorruptError` when not even the table can be found.
    """
    driver = dbapi()
    report = Salvage()
    with tempfile.TemporaryDirectory(prefix="arcana-salvage-") as tmp:
        copy = Path(tmp) / file.name
        shutil.copyfile(file, copy)
        if Path(f"{file}-wal").exists():
            shutil.copyfile(f"{file}-wal", f"{copy}-wal")
        raw = driver.connect(str(copy), isolation_level=None)
        try:
            try:
                present = [r[1] for r in raw.execute("PRAGMA table_info(memories)")]
            except driver.Error as exc:
                raise MemoryCorruptError(f"{file}: nothing can be salvaged: {exc}") from None
            if "seq" not in present or "id" not in present:
                raise MemoryCorruptError(f"{file}: nothing can be salvaged: no readable memories table")
            wanted = [c for c in present if c in COLUMNS]
            select = f"SELECT seq, {', '.join(wanted)} FROM memories"

            def take(row) -> None:
                entry = _entry(row[1:], wanted)
                if entry is None:
                    report.unreadable += 1
                else:
                    report.entries.append(entry)

            try:
                top = raw.execute("SELECT max(seq) FROM memories").fetchone()[0] or 0
            except driver.Error:
                top = None  # the rightmost path is damaged: probe until PROBE_PAST rowids in a row fail
            after, failed, streak = 0, 0, 0
            while True:
                try:
                    for row in raw.execute(f"{select} WHERE seq > ? ORDER BY seq", (after,)):
                        after = row[0]
                        take(row)
                        report.unreadable, failed, streak = report.unreadable + failed, 0, 0
                    break  # the scan reached the end
                except driver.Error as exc:
                    report.damaged = report.damaged or str(exc)
                    after, failed, streak = after + 1, failed + 1, streak + 1  # step over the rowid that broke it
                    if (top is not None and after >= top) or streak >= PROBE_PAST:
                        break
            if top is not None:
                report.unreadable += failed  # rowids up to the largest one, all unreadable
            return report
        finally:
            raw.close()


def _insert_missing(raw, entries: list[MemoryEntry], actor: str, removed: set[str]) -> tuple[int, int]:
    """Insert, through the ledger (op ``quarantine_restore``), the entries whose id the live store
    lacks and never removed; (inserted, skipped)."""
    with transaction(raw):
        ids = [e.id for e in entries]
        have = {r[0] for r in select_in(raw, "SELECT id FROM memories WHERE id IN ({marks})", ids)} | removed
        fresh = list({e.id: e for e in entries if e.id not in have}.values())
        if fresh:
            mutations.upsert(raw, fresh, actor, op="quarantine_restore")
        return len(fresh), len(entries) - len(fresh)


def _to_trash(home: Home, item: Quarantined, why: str) -> Path:
    private_dir(home.trash_dir)
    dest = home.trash_dir / f"quarantine-{item.id}-{why}-{int(time.time())}"
    item.folder.replace(dest)
    return dest


@dataclass
class RestoreReport:
    id: str
    database: str
    restored: int
    duplicates: int
    unreadable: int
    damaged: str | None
    trashed_to: str

    def as_dict(self) -> dict:
        return asdict(self)


async def restore(home: Home, item: Quarantined, *, actor: str = "quarantine-restore") -> RestoreReport:
    """Copy every readable row of ``item`` into the live store at its origin, then trash the folder.

    Rows are inserted through the ledger; an id the live store already holds
    is skipped (the live row wins), and so is one it deleted or purged since
    (an operator's removal stands). Vectors are not copied: ``arcana reindex``
    embeds the restored rows.
    """
    from memory.stores import kind_of, open_store

    file = item.file
    if file is None:
        raise NotFoundError(f"quarantined store '{item.id}' holds no database file; dismiss it")
    if item.database is None or not item.database.parent.is_dir():
        raise NotFoundError(
            f"quarantined store '{item.id}': its origin ({item.database or 'unknown'}) no longer exists; "
            f"dismiss it with `arcana quarantine dismiss {item.id} --yes`"
        )
    found = salvage(file)
    audit = AuditLog(home.audit_log)
    # repair=False: a live store that is corrupt too fails the restore; it is never quarantined under it.
    store = open_store(home, kind_of(home, item.database), actor=actor, path=item.database, repair=False)
    try:
        removed = await store.removed([e.id for e in found.entries])
        restored, duplicates = await store.run(_insert_missing, found.entries, actor, removed)
    finally:
        await store.aclose()
    trashed = _to_trash(home, item, "restored")
    report = RestoreReport(
        item.id, str(item.database), restored, duplicates, found.unreadable, found.damaged, str(trashed)
    )
    audit.append("quarantine_restored", **report.as_dict())
    return report


def dismiss(home: Home, item: Quarantined) -> Path:
    """Deal with ``item`` without restoring it: move its folder to the trash."""
    trashed = _to_trash(home, item, "dismissed")
    AuditLog(home.audit_log).append(
        "quarantine_dismissed", id=item.id, database=str(item.database), trashed_to=str(trashed)
    )
    return trashed
