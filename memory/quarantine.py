"""Move a corrupt store aside — with its -wal and -shm — instead of deleting it."""

from __future__ import annotations

import time
from pathlib import Path

from memory.audit import AuditLog
from memory.home import private_dir


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
    if audit is not None:
        audit.append("store_quarantined", database=str(db), moved_to=str(dest), reason=reason)
    return dest
