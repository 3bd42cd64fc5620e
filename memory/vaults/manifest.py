"""What the vault index last saw of each file, kept beside the rows in the vault's database.

``vault_files`` lets a fresh process (cron) skip reading unchanged files: a
file whose (mtime, size) match is not opened; one whose bytes hash the same is
not rewritten or re-embedded. It also keeps each note's aliases and wikilink
targets, so rebuilding the link graph after one edit parses one file, not the
vault. These tables exist only in vault index databases, are derived data,
and are created by this module (not a core migration) for that reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.sqlite.connection import transaction

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS vault_files (
        id TEXT PRIMARY KEY,
        rel_path TEXT NOT NULL UNIQUE,
        mtime_ns INTEGER NOT NULL,
        size INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        aliases TEXT NOT NULL DEFAULT '[]',
        targets TEXT NOT NULL DEFAULT '[]'
    )
    """,
    "CREATE TABLE IF NOT EXISTS vault_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


@dataclass(frozen=True)
class FileRecord:
    id: str
    rel_path: str
    mtime_ns: int
    size: int
    content_hash: str
    aliases: tuple[str, ...]
    targets: tuple[str, ...]


def ensure(raw) -> None:
    if raw.execute("SELECT 1 FROM sqlite_master WHERE name = 'vault_meta'").fetchone():
        return
    with transaction(raw):
        for statement in _SCHEMA:
            raw.execute(statement)


def load(raw) -> tuple[dict[str, FileRecord], dict[str, str], set[str]]:
    """(records by path, meta, every stored memory id)."""
    ensure(raw)
    records = {
        r[1]: FileRecord(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), tuple(json.loads(r[6])))
        for r in raw.execute(
            "SELECT id, rel_path, mtime_ns, size, content_hash, aliases, targets FROM vault_files"
        )
    }
    meta = dict(raw.execute("SELECT key, value FROM vault_meta").fetchall())
    ids = {r[0] for r in raw.execute("SELECT id FROM memories")}
    return records, meta, ids


def save(raw, upserts: Sequence[FileRecord], deleted_paths: Iterable[str], meta: dict[str, str]) -> None:
    """Record what was indexed, in one transaction, after the rows themselves committed."""
    with transaction(raw):
        raw.executemany("DELETE FROM vault_files WHERE rel_path = ?", [(p,) for p in deleted_paths])
        raw.executemany(
            "INSERT INTO vault_files (id, rel_path, mtime_ns, size, content_hash, aliases, targets) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(rel_path) DO UPDATE SET id = excluded.id, "
            "mtime_ns = excluded.mtime_ns, size = excluded.size, content_hash = excluded.content_hash, "
            "aliases = excluded.aliases, targets = excluded.targets",
            [
                (
                    r.id, r.rel_path, r.mtime_ns, r.size, r.content_hash,
                    json.dumps(list(r.aliases), ensure_ascii=False), json.dumps(list(r.targets), ensure_ascii=False),
                )
                for r in upserts
            ],
        )
        raw.executemany("INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?, ?)", list(meta.items()))


def paths_for(raw, ids: Sequence[str]) -> dict[str, str]:
    """id → root-relative path for indexed notes."""
    out: dict[str, str] = {}
    ensure(raw)
    for start in range(0, len(ids), 500):
        chunk = list(ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        out.update(raw.execute(f"SELECT id, rel_path FROM vault_files WHERE id IN ({marks})", chunk).fetchall())
    return out
