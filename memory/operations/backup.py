"""Whole-home backup and restore with a checksummed manifest.

Every SQLite database is copied through the online backup API (see
:func:`memory.migrations.backup.online_copy`), so a backup taken while agents, a watch
and cron keep writing is a consistent snapshot of each database; every other
file (config, agent cards, sessions, vault state, logs) is copied as is. The
backup is built under a ``.partial`` name and renamed into place only once
its manifest is written, so a folder without ``.partial`` is complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from memory.errors import BackupError, NotFoundError, RestoreRefusedError
from memory.home import Home, private_dir
from memory.migrations.backup import online_copy
from memory.sqlite.connection import dbapi

FORMAT = "arcana-backup"
VERSION = 1
MANIFEST = "manifest.json"
PREFIX = "arcana-backup-"
# Not part of a backup: transient locks, the trash, pre-migration copies and the model cache.
SKIP_DIRS = ("locks", "trash", "backups", "models")
SIDECARS = ("-wal", "-shm", "-journal")
_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class BackupManifest:
    path: Path
    files: list[dict] = field(default_factory=list)
    created_at: str = ""

    @property
    def bytes(self) -> int:
        return sum(f["size"] for f in self.files)

    @property
    def databases(self) -> int:
        return sum(1 for f in self.files if f["kind"] == "database")

    def as_dict(self) -> dict:
        return {"path": str(self.path), "created_at": self.created_at, "files": len(self.files),
                "databases": self.databases, "bytes": self.bytes}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _is_database(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(16) == _SQLITE_MAGIC


def _readonly(db: Path):
    """A connection that leaves no -wal/-shm beside a backup copy (``immutable``: nobody else writes it)."""
    return dbapi().connect(f"file:{db}?mode=ro&immutable=1", uri=True)


def _seal(db: Path) -> int:
    """Make a fresh copy self-contained (rollback journal, no sidecars) and return its schema version.

    The live home runs WAL; a restored store is switched back when Arcana opens it.
    """
    conn = dbapi().connect(str(db))
    try:
        conn.execute("PRAGMA journal_mode = DELETE").fetchone()
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def _integrity(db: Path) -> str:
    conn = _readonly(db)
    try:
        return "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall())
    finally:
        conn.close()


def home_files(home: Home, *, exclude: Path | None = None) -> list[Path]:
    """The files a backup holds, relative to the home: everything but :data:`SKIP_DIRS` and SQLite sidecars."""
    found = []
    root = home.root
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == root:
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        dirnames[:] = [d for d in dirnames if exclude is None or (here / d).resolve() != exclude]
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(SIDECARS) or name.endswith(".partial"):
                continue
            found.append((here / name).relative_to(root))
    return found


def backup_home(home: Home, dest: Path, *, on_progress=None) -> BackupManifest:
    """Copy ``home`` into a new timestamped folder under ``dest``; return its manifest."""
    if not home.root.is_dir():
        raise BackupError(f"{home.root} is not an Arcana home (no such directory)")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    final = dest / f"{PREFIX}{stamp}"
    if final.exists():
        raise BackupError(f"{final} already exists; wait a second or choose another DEST")
    partial = dest / f"{PREFIX}{stamp}.partial"
    private_dir(dest)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(mode=0o700)
    manifest = BackupManifest(final, created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    files = home_files(home, exclude=dest.resolve())
    try:
        for done, rel in enumerate(files, start=1):
            source, target = home.root / rel, partial / rel
            private_dir(target.parent)
            if not source.exists():
                continue  # removed while we walked (a session closed, a log rotated)
            entry: dict = {"path": rel.as_posix()}
            if _is_database(source):
                online_copy(source, target)
                entry |= {"kind": "database", "schema_version": _seal(target)}
            else:
                shutil.copy2(source, target)
                entry["kind"] = "file"
            entry |= {"size": target.stat().st_size, "sha256": _sha256(target)}
            manifest.files.append(entry)
            if on_progress is not None:
                on_progress(done, len(files))
        body = {"format": FORMAT, "version": VERSION, "created_at": manifest.created_at,
                "source_home": str(home.root), "files": manifest.files}
        (partial / MANIFEST).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        partial.rename(final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return manifest


def resolve_backup(path: Path) -> Path:
    """``path`` itself when it holds a manifest, else the newest complete backup inside it."""
    if (path / MANIFEST).is_file():
        return path
    candidates = sorted(p for p in path.glob(f"{PREFIX}*") if (p / MANIFEST).is_file()) if path.is_dir() else []
    if not candidates:
        raise NotFoundError(f"no Arcana backup at {path} (no {MANIFEST}); give the folder `arcana backup` printed")
    return candidates[-1]


def read_manifest(folder: Path) -> BackupManifest:
    try:
        body = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BackupError(f"{folder / MANIFEST} is unreadable ({exc}); the backup cannot be trusted") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise BackupError(f"{folder / MANIFEST} is not an {FORMAT} manifest")
    if not isinstance(body.get("version"), int) or body["version"] > VERSION:
        raise BackupError(f"backup format version {body.get('version')!r} is newer than this Arcana reads ({VERSION})")
    return BackupManifest(folder, body.get("files", []), body.get("created_at", ""))


def verify_backup(path: Path) -> tuple[BackupManifest, list[str]]:
    """Re-check every file against the manifest (size, sha256) and every database's integrity."""
    folder = resolve_backup(path)
    manifest = read_manifest(folder)
    problems = []
    listed = set()
    for entry in manifest.files:
        rel = entry["path"]
        listed.add(rel)
        file = folder / rel
        if not file.is_file():
            problems.append(f"{rel}: missing")
            continue
        if file.stat().st_size != entry["size"]:
            problems.append(f"{rel}: size {file.stat().st_size} != {entry['size']} in the manifest")
        elif _sha256(file) != entry["sha256"]:
            problems.append(f"{rel}: checksum differs from the manifest")
        elif entry["kind"] == "database" and (verdict := _integrity(file)) != "ok":
            problems.append(f"{rel}: integrity_check: {verdict}")
    extra = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    problems += [f"{rel}: not in the manifest" for rel in sorted(set(extra) - listed - {MANIFEST})]
    return manifest, problems


@dataclass
class RestoreReport:
    source: Path
    files: int
    moved_to_trash: Path | None

    def as_dict(self) -> dict:
        moved = None if self.moved_to_trash is None else str(self.moved_to_trash)
        return {"source": str(self.source), "files": self.files, "moved_to_trash": moved}


def _occupied(home: Home) -> list[Path]:
    if not home.root.exists():
        return []
    return [p for p in home.root.iterdir() if p.name != "trash"]


def restore_home(path: Path, home: Home, *, force: bool = False) -> RestoreReport:
    """Restore a verified backup into ``home``.

    Into an empty (or missing) home only, unless ``force``: then the live
    home's contents move to ``<home>/trash/pre-restore-<stamp>/`` first —
    nothing is deleted.
    """
    manifest, problems = verify_backup(path)
    if problems:
        raise BackupError(f"backup {manifest.path} fails verification ({problems[0]}; {len(problems)} problem(s)); "
                          "nothing was restored")
    live = _occupied(home)
    moved = None
    if live and not force:
        raise RestoreRefusedError(f"{home.root} is not empty; restore into an empty home, or pass --force to move "
                                  "its current contents to the trash first")
    if live:
        moved = home.trash_dir / f"pre-restore-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
        private_dir(moved)
        for item in live:
            item.rename(moved / item.name)
    private_dir(home.root)
    for entry in manifest.files:
        target = home.root / entry["path"]
        private_dir(target.parent)
        shutil.copy2(manifest.path / entry["path"], target)
        os.chmod(target, 0o600)
    home.ensure()
    return RestoreReport(manifest.path, len(manifest.files), moved)
