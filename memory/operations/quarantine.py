"""Quarantined stores, for the operator: listed until dealt with, restored through the ledger, or dismissed.

A store found corrupt is moved aside by the engine (:mod:`memory.sqlite.quarantine`)
to its own folder under ``<home>/quarantine/`` with a ``quarantine.json`` saying
where it came from and why; that folder's name is its id. It stays there, and
``arcana doctor`` fails on it, until the operator either restores it (every
readable row is copied back into the live store through the ledger, then the
folder goes to the trash) or dismisses it (straight to the trash).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from memory import strict_json
from memory.adapters.opener import open_store
from memory.audit import AuditLog
from memory.errors import NotFoundError
from memory.home import Home, is_safe_name
from memory.sqlite.quarantine import META, insert_missing, salvage
from memory.store_kinds import kind_of
from memory.types import stored_moment

_LEGACY_NAME = re.compile(r"^(?P<parent>[^-]+)-(?P<stem>.+)-\d{8}T\d{6}(?:-\d+)?$")


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


def _origin(home: Home, recorded: str) -> Path | None:
    """The store ``recorded`` names, in this home: a restored backup carries quarantine.json, whose
    path names the backed-up home (or anywhere at all), and restore writes into it. Only a store's
    place under a home is taken (``agents/ID/memory.db``, ``pools/NAME.db``, ``vaults/NAME.db``,
    the global database); any other path is an unknown origin."""
    parts = PurePosixPath(recorded).parts
    if parts[-1:] == ("memory.db",) and parts[-3:-2] == ("agents",) and is_safe_name(parts[-2]):
        return home.agent_db(parts[-2])
    stem = PurePosixPath(recorded).stem
    if parts[-2:-1] == ("pools",) and parts[-1].endswith(".db") and is_safe_name(stem):
        return home.pool_db(stem)
    if parts[-2:-1] == ("vaults",) and parts[-1].endswith(".db") and is_safe_name(stem):
        return home.vault_db(stem)
    if parts[-2:] == home.global_db.parts[-2:]:
        return home.global_db
    return None


def load(home: Home, folder: Path) -> Quarantined:
    """The quarantined store in ``folder``."""
    try:
        meta = strict_json.loads((folder / META).read_text(encoding="utf-8"))  # nesting too deep: refused, not raised
        return Quarantined(folder.name, folder, _origin(home, meta["database"]), str(meta.get("reason", "")),
                           stored_moment(meta.get("at")))
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


def _to_trash(home: Home, item: Quarantined, why: str) -> Path:
    dest = home.trash_place(f"quarantine-{item.id}-{why}")
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
    file = item.file
    if file is None:
        raise NotFoundError(f"quarantined store '{item.id}' holds no database file; dismiss it")
    if item.database is None or not item.database.parent.is_dir():
        raise NotFoundError(
            f"quarantined store '{item.id}': its origin "
            f"{'(' + str(item.database) + ') no longer exists' if item.database else 'is no store of this home'}; "
            f"dismiss it with `arcana quarantine dismiss {item.id} --yes`"
        )
    found = salvage(file)
    audit = AuditLog(home.audit_log)
    # repair=False: a live store that is corrupt too fails the restore; it is never quarantined under it.
    store = open_store(home, kind_of(home, item.database), actor=actor, path=item.database, repair=False)
    try:
        removed = await store.removed([e.id for e in found.entries])
        restored, duplicates = await store.run(insert_missing, found.entries, actor, removed)
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
