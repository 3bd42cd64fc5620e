"""Consistent copies of a database taken before anything risky (migrations)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from memory.home import private_dir, private_file
from memory.sqlite.connection import dbapi


def backup_copy(db: Path, dest_dir: Path, label: str) -> Path:
    """Copy ``db`` with SQLite's online backup API (WAL contents included); return the copy.

    The copy is made under a ``.partial`` name and renamed whole, so a process killed mid-copy
    never leaves an empty or torn file named as the copy taken before a migration; the next
    upgrade of ``db`` (serialised by its write lock) starts its own ``.partial`` afresh.
    """
    private_dir(dest_dir)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    name = f"{db.parent.name}-{db.stem}.{label}"
    partial = dest_dir / f"{name}.partial"
    for leftover in (partial, partial.with_name(partial.name + "-journal")):
        leftover.unlink(missing_ok=True)
    final = dest_dir / f"{name}.{stamp}.db"
    os.replace(online_copy(db, partial), final)
    return final


def online_copy(db: Path, dest: Path) -> Path:
    """One consistent snapshot of ``db`` at ``dest`` (0600), even while other processes write to it."""
    source = dbapi().connect(str(db))
    try:
        target = dbapi().connect(str(private_file(dest)))
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()
    return dest
