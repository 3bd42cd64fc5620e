"""What the vault index last saw of each file, kept beside the rows in the vault's database.

``vault_files`` lets a fresh process (cron) skip reading unchanged files: a
file whose (mtime, size) match is not opened; one whose bytes hash the same is
not rewritten or re-embedded. It also keeps each note's aliases, wikilink
targets and link tally, so a pass re-resolves only the links its changes can
touch (:mod:`memory.vaults.relink`), and the vault's link totals are one SUM. The
tables come from migration v4 (every store has them; only vault indexes fill them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from memory.sqlite.batches import select_in
from memory.sqlite.connection import transaction

COUNT_COLUMNS = ("links", "resolved", "attachments", "self_links", "dangling", "ambiguous")


@dataclass(frozen=True)
class FileRecord:
    id: str
    rel_path: str
    mtime_ns: int
    size: int
    content_hash: str
    aliases: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()


PAGE_ROWS = 2000  # manifest rows read at a time when it is merged with the folder walk


def load_meta(raw) -> dict[str, str]:
    return {r[0]: r[1] for r in raw.execute("SELECT key, value FROM vault_meta")}


def rows(raw, page: int = PAGE_ROWS, *, targets: bool = False) -> Iterator[tuple[FileRecord, bool]]:
    """Every record in rel_path order (SQLite's BINARY order of UTF-8 is Python's order of str), read by
    keyset ``page`` rows at a time, each with whether its memory row still exists; targets only if asked."""
    after = ""
    while True:
        batch = raw.execute(
            "SELECT f.id, f.rel_path, f.mtime_ns, f.size, f.content_hash, "
            "EXISTS (SELECT 1 FROM memories m WHERE m.id = f.id), f.aliases"
            f"{', f.targets' if targets else ''} FROM vault_files f "
            "WHERE f.rel_path > ? ORDER BY f.rel_path LIMIT ?",
            (after, page),
        ).fetchall()
        for r in batch:
            yield FileRecord(*r[:5], *(tuple(json.loads(v)) if v != "[]" else () for v in r[6:])), bool(r[5])
        if len(batch) < page:
            return
        after = batch[-1][1]


def holds_under(raw, folders: Iterable[str]) -> bool:
    """Whether any record lies inside one of ``folders`` (as ``folder/...``): one indexed range probe each.

    ``'0'`` is the character after ``'/'``, so ``[folder/, folder0)`` is exactly the paths under it."""
    return any(
        raw.execute("SELECT 1 FROM vault_files WHERE rel_path >= ? AND rel_path < ? LIMIT 1", (f"{f}/", f"{f}0")).fetchone()
        for f in folders
    )


def matching(raw, keep_out: Callable[[str], bool], page: int = PAGE_ROWS) -> list[tuple[str, str]]:
    """(id, rel_path) of every record ``keep_out`` says to exclude, read by keyset ``page`` rows at a time."""
    return [(r.id, r.rel_path) for r, _ in rows(raw, page) if keep_out(r.rel_path)]


def orphan_ids(raw) -> list[str]:
    """Memory rows no record names (a pass killed between a row and its record, or an older id scheme)."""
    return [r[0] for r in raw.execute("SELECT id FROM memories WHERE id NOT IN (SELECT id FROM vault_files)")]


def stored_ids(raw, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` have a memory row."""
    return {r[0] for r in select_in(raw, "SELECT id FROM memories WHERE id IN ({marks})", ids)}


def save(
    raw,
    upserts: Sequence[FileRecord],
    deleted_paths: Iterable[str],
    meta: dict[str, str],
    counts: dict[str, tuple[int, ...]],
) -> None:
    """Record what was indexed and each note's link tally, in one transaction, after the rows committed."""
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
        assignments = ", ".join(f"{c} = ?" for c in COUNT_COLUMNS)
        raw.executemany(
            f"UPDATE vault_files SET {assignments} WHERE rel_path = ?",
            [(*tally, path) for path, tally in counts.items()],
        )
        raw.executemany("INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?, ?)", list(meta.items()))


def totals(raw) -> dict[str, int]:
    row = raw.execute(f"SELECT count(*), {', '.join(f'coalesce(sum({c}), 0)' for c in COUNT_COLUMNS)} FROM vault_files").fetchone()
    return {"notes": row[0], **dict(zip(COUNT_COLUMNS, row[1:], strict=True))}


def targets_of(raw, rel_path: str) -> tuple[str, ...]:
    """One note's link targets."""
    row = raw.execute("SELECT targets FROM vault_files WHERE rel_path = ?", (rel_path,)).fetchone()
    return tuple(json.loads(row[0])) if row and row[0] != "[]" else ()


def paths_for(raw, ids: Sequence[str]) -> dict[str, str]:
    """id → root-relative path for indexed notes."""
    return dict(select_in(raw, "SELECT id, rel_path FROM vault_files WHERE id IN ({marks})", ids))
