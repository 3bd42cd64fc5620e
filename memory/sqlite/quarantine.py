"""Corrupt stores moved aside (never deleted), and salvage: every readable row of a damaged file.

A store found corrupt is moved — with its -wal and -shm — to its own folder
under ``<home>/quarantine/`` with a ``quarantine.json`` saying where it came
from and why (the operator's side: :mod:`memory.operations.quarantine`).

Salvage reads a private copy, never the quarantined file itself: a scan in
rowid order as far as it goes; at a damaged page it steps one rowid past the
one that broke the scan and seeks again, so one bad page costs only its own
rows and an intact stretch is still read as one scan. A file cut short is
read as far as it goes.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from memory import moved_aside
from memory.audit import AuditLog
from memory.errors import MemoryCorruptError
from memory.home import private_dir
from memory.sqlite import mutations
from memory.sqlite.batches import select_in
from memory.sqlite.connection import dbapi, transaction
from memory.sqlite.rows import COLUMNS, row_to_entry
from memory.types import MemoryEntry

META = "quarantine.json"
# How many rowids in a row may fail before salvage stops, when the table's largest rowid cannot be read.
PROBE_PAST = 10_000

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
    moved_aside.record(dest)
    if audit is not None:
        audit.append("store_quarantined", database=str(db), moved_to=str(dest), reason=reason)
    return dest


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
            # A file cut short (a disk that filled, a copy that stopped) is refused whole, schema and all,
            # unless the schema may be read as writable: then its pages that are left read as any others.
            # Only this private copy is opened so, and nothing is written to it.
            raw.execute("PRAGMA writable_schema = ON")
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


def insert_missing(raw, entries: list[MemoryEntry], actor: str, removed: set[str]) -> tuple[int, int]:
    """Insert, through the ledger (op ``quarantine_restore``), the entries whose id the live store
    lacks and never removed; (inserted, skipped)."""
    with transaction(raw):
        ids = [e.id for e in entries]
        have = {r[0] for r in select_in(raw, "SELECT id FROM memories WHERE id IN ({marks})", ids)} | removed
        fresh = list({e.id: e for e in entries if e.id not in have}.values())
        if fresh:
            mutations.upsert(raw, fresh, actor, op="quarantine_restore")
        return len(fresh), len(entries) - len(fresh)


