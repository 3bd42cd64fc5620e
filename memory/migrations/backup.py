"""Consistent copies of a database taken before anything risky (migrations)."""

from __future__ import annotations

import time
from pathlib import Path

from memory.home import private_dir, private_file
from memory.sqlite.connection import dbapi


def backup_copy(db: Path, dest_dir: Path, label: str) -> Path:
    """Copy ``db`` with SQLite's online backup API (WAL contents included); return the copy."""
    private_dir(dest_dir)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return online_copy(db, dest_dir / f"{db.parent.name}-{db.stem}.{label}.{stamp}.db")


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
