"""Whole-home backup and restore with a checksummed manifest.

Every SQLite database is copied through the online backup API (see
:func:`memory.migrations.backup.online_copy`), so a backup taken while agents, a watch
and cron keep writing is a consistent snapshot of each database; every other
file (config, agent cards, sessions, vault state, logs) is copied as is. The
backup is built under a ``.partial`` name and renamed into place only once
its manifest is written, so a folder without ``.partial`` is complete.
"""

from __future__ import annotations

import asyncio
import fcntl
import fnmatch
import hashlib
import json
import os
import shutil
import stat
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memory import agent_lock, strict_json
from memory.errors import BackupError, InvalidRequestError, MemoryStorageError, NotFoundError, RestoreRefusedError
from memory.home import PRIVATE_FILE, Home, private_dir
from memory.lines import append_line
from memory.migrations.backup import online_copy
from memory.operations import restore_swap
from memory.sqlite.connection import dbapi

FORMAT = "arcana-backup"
VERSION = 1
MANIFEST = "manifest.json"
PREFIX = "arcana-backup-"
# Not part of a backup: transient locks, the trash, pre-migration copies and the model cache.
SKIP_DIRS = ("locks", "trash", "backups", "models")
SIDECARS = ("-wal", "-shm", "-journal")
KINDS = ("file", "database")
_SQLITE_MAGIC = b"SQLite format 3\x00"
MADE = "made.jsonl"  # in the home's backups/: one line per `arcana backup` made (its folder), for a purge to name

# held (flock) by the process building a .partial folder; gone once it is complete. A .partial with no
# lock file older than ABANDONED_AFTER seconds was left by a killed process. The same rules as a restore's.
LOCK, ABANDONED_AFTER = restore_swap.LOCK, restore_swap.ABANDONED_AFTER


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
    """``ok``, or what SQLite finds wrong: a file it cannot open as a database at all (not one, its
    header torn) is a verdict like any other, never an exception out of a verify."""
    try:
        conn = _readonly(db)
        try:
            return "; ".join(r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall())
        finally:
            conn.close()
    except dbapi().Error as exc:
        return f"cannot be read as a database ({exc})"


def home_files(home: Home) -> list[Path]:
    """The files a backup holds, relative to the home: everything but :data:`SKIP_DIRS` and SQLite sidecars.

    A folder that is a symlink (an agent's folder moved to another disk and linked back) is an
    :class:`InvalidRequestError` naming it: every command reads and writes through it, but the walk
    never follows a link, so the backup would leave that agent out and say nothing.
    """
    found = []
    root = home.root
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == root:
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        dirnames[:] = [d for d in dirnames if not d.endswith(".partial")]
        dirnames.sort()
        for name in dirnames:
            if (here / name).is_symlink():
                rel = (here / name).relative_to(root)
                raise InvalidRequestError(
                    f"{rel} in the home is a symlink to {os.path.realpath(here / name)}; a backup copies no folder "
                    "through a link and would leave it out: move that folder into the home in the link's place, "
                    "then back up again (nothing was backed up)")
        for name in sorted(filenames):
            if name.endswith(SIDECARS) or name.endswith(".partial"):
                continue
            found.append((here / name).relative_to(root))
    return found


def backup_home(home: Home, dest: Path, *, on_progress=None) -> BackupManifest:
    """Copy ``home`` into a new timestamped folder under ``dest``; return its manifest."""
    if not home.root.is_dir():
        raise BackupError(f"{home.root} is not an Arcana home (no such directory)")
    if dest.exists() and not dest.is_dir():
        raise InvalidRequestError(f"{dest} is not a folder; give the folder to put the backup in")
    root, place, kept = home.root.resolve(), dest.resolve(), home.backups_dir.resolve()
    if (place == root or root in place.parents) and not (place == kept or kept in place.parents):
        # Left out of its own walk, `backup ~/.arcana/agents` held no agent; one in the home's root was
        # copied again by every later backup. The home's backups/ is the one folder the walk leaves out.
        raise InvalidRequestError(f"{dest} is inside the Arcana home {root}, which a backup copies; give a folder "
                                  f"outside it (or under {kept}, which backups leave out)")
    files = home_files(home)  # a folder it cannot hold is refused before DEST is touched
    try:
        private_dir(dest)
        remove_abandoned(dest, f"{PREFIX}*.partial")
        final, partial, lock = _claim_name(dest, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    except OSError as exc:
        raise InvalidRequestError(f"{dest}: cannot make the backup there ({exc.strerror}); give a folder you can write") from None
    manifest = BackupManifest(final, created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    held, holding = ExitStack(), None  # the agent whose folder is being copied, its lock held shared
    try:
        for done, rel in enumerate(files, start=1):
            agent = rel.parts[1] if len(rel.parts) > 2 and rel.parts[0] == "agents" else None
            if agent != holding:  # an agent's files come together (the walk is depth-first)
                held.close()
                if agent is not None:
                    held.enter_context(agent_lock.copying(home, agent))
                holding = agent
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
            os.chmod(target, PRIVATE_FILE)
            entry |= {"size": target.stat().st_size, "sha256": _sha256(target)}
            manifest.files.append(entry)
            if on_progress is not None:
                on_progress(done, len(files))
        held.close()
        body = {"format": FORMAT, "version": VERSION, "created_at": manifest.created_at,
                "source_home": str(home.root), "files": manifest.files}
        _write_private(partial / MANIFEST, json.dumps(body, indent=2) + "\n")
        # The lock file goes first and the lock itself last: a clean-up that opened the file
        # before it went waits on the lock until the folder has its complete name.
        (partial / LOCK).unlink()
        partial.rename(final)
    except BaseException:
        held.close()
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        os.close(lock)
    _record_made(home, final)
    return manifest


def _record_made(home: Home, folder: Path) -> None:
    """Note ``folder`` in the home (backups/made.jsonl), so a later purge can name the backups that still
    hold what it erased: a backup lives outside the home, where nothing else would find it."""
    private_dir(home.backups_dir)
    fd = os.open(home.backups_dir / MADE, os.O_RDWR | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
    try:
        append_line(fd, json.dumps({"path": str(folder), "at": time.time()}) + "\n")
    finally:
        os.close(fd)


def backups_holding(home: Home, config, target) -> list[Path]:
    """The backups still on disk that may hold what a purge on ``target`` (an
    :class:`~memory.operator.edits.OperatorTarget`) just erased: every `arcana backup` of this home
    (a whole copy) and each copy a migration took of the target's file or the global tier's.
    A purge never rewrites a backup (it is the way back), so the operator is told which to delete.
    A server tier's text is in no file of the home: nothing to name."""
    from memory.adapters.opener import server_url
    from memory.agents import AgentRegistry
    from memory.store_kinds import StoreKind, store_path

    if target.pool or target.global_:
        kind, name = (StoreKind.POOL, target.pool) if target.pool else (StoreKind.GLOBAL, None)
        if server_url(config, kind, name) is not None:
            return []
    else:
        kind, name = StoreKind.PRIVATE, AgentRegistry(home).resolve(target.agent).id
    store = store_path(home, kind, name)
    found: list[Path] = []
    try:
        lines = (home.backups_dir / MADE).read_text().splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        lines = []
    for line in lines:
        try:
            folder = Path(json.loads(line)["path"])
        except (ValueError, TypeError, KeyError):
            continue  # a torn line
        if (folder / MANIFEST).is_file():
            found.append(folder)
    for db in (store, home.global_db):
        found.extend(sorted(home.backups_dir.glob(f"{db.parent.name}-{db.stem}.v*.db")))
    return list(dict.fromkeys(found))


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, PRIVATE_FILE)


def _claim_name(dest: Path, stamp: str) -> tuple[Path, Path, int]:
    """A name under ``dest`` no other backup has or is writing, its ``.partial`` folder claimed:
    ``(final, partial, lock)``.

    Two backups in the same second (a cron job beside a deploy script's) both claimed
    ``<stamp>.partial``: the second failed saying the folder could not be written, and one after a
    finished one was refused. The second now takes ``<stamp>-2`` (then ``-3``…), which
    :func:`resolve_backup` takes as made after the first.
    """
    n = 0
    while True:
        n += 1
        final = dest / f"{PREFIX}{stamp}{'' if n == 1 else f'-{n}'}"
        partial = final.with_name(f"{final.name}.partial")
        if final.exists():
            continue
        try:
            lock = restore_swap.claim(partial)  # a running backup holds it: FileExistsError
        except FileExistsError:
            continue
        if not final.exists():
            return final, partial, lock
        shutil.rmtree(partial, ignore_errors=True)  # its holder before us renamed it whole meanwhile
        os.close(lock)


def remove_abandoned(folder: Path, pattern: str) -> list[Path]:
    """Remove the ``.partial`` folders under ``folder`` that a killed process left; return them.

    A folder is abandoned when its lock file can be locked (its owner is gone:
    the kernel released the lock), or when it has no lock file and is older
    than :data:`ABANDONED_AFTER` (left by a process killed before it locked,
    or by an Arcana without locks). A folder whose owner still runs is kept.
    """
    removed = []
    for candidate in sorted(folder.glob(pattern)):
        try:
            st = candidate.lstat()
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue
        try:
            fd = os.open(candidate / LOCK, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            if time.time() - st.st_mtime < ABANDONED_AFTER:
                continue
            fd = None
        except OSError:
            continue
        try:
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its owner is still writing it
            shutil.rmtree(candidate, ignore_errors=True)
            removed.append(candidate)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def resolve_backup(path: Path) -> Path:
    """``path`` itself when it holds a manifest, else the newest complete backup inside it.

    A ``.partial`` folder is never one: a backup is complete only once renamed
    (one killed while writing its manifest holds half of one).
    """
    if path.name.endswith(".partial"):
        raise NotFoundError(f"{path} is an unfinished backup (a .partial folder); give a folder `arcana backup` "
                            "printed, or its DEST")
    if (path / MANIFEST).is_file():
        return path
    candidates = [p for p in path.glob(f"{PREFIX}*")
                  if not p.name.endswith(".partial") and (p / MANIFEST).is_file()] if path.is_dir() else []
    if not candidates:
        raise NotFoundError(f"no Arcana backup at {path} (no {MANIFEST}); give the folder `arcana backup` printed")
    return max(candidates, key=_made_order)


def _made_order(folder: Path) -> tuple[str, int]:
    """A backup's place in time: its stamp, then its ``-N`` (``-10`` after ``-9``, which names alone
    would sort before ``-2``)."""
    stamp, dash, n = folder.name.partition("-backup-")[2].partition("-")
    return stamp, int(n) if dash and n.isdigit() else 1


def read_manifest(folder: Path) -> BackupManifest:
    """The manifest, its shape checked: a malformed one is a BackupError naming what is wrong."""
    where = folder / MANIFEST
    if where.is_symlink():
        raise BackupError(f"{where} is a symlink; the backup cannot be trusted")
    try:
        body = strict_json.loads(strict_json.decode(where.read_bytes()))
    except OSError as exc:
        raise BackupError(f"{where} is unreadable ({exc.strerror}); the backup cannot be trusted") from None
    except strict_json.JSONRefused as exc:  # a 5,000-digit number was a traceback, not this
        raise BackupError(f"{where} is unreadable ({exc}); the backup cannot be trusted") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise BackupError(f"{where} is not an {FORMAT} manifest")
    if not isinstance(body.get("version"), int) or body["version"] > VERSION:
        raise BackupError(f"backup format version {body.get('version')!r} is newer than this Arcana reads ({VERSION})")
    files = body.get("files", [])
    if not isinstance(files, list):
        raise BackupError(f"{where}: \"files\" is not a list; the backup cannot be trusted")
    for number, entry in enumerate(files, start=1):
        if problem := _malformed(entry):
            raise BackupError(f"{where}: file entry {number} {problem}; the backup cannot be trusted")
    created = body.get("created_at", "")
    return BackupManifest(folder, files, created if isinstance(created, str) else "")


def _malformed(entry: object) -> str | None:
    if not isinstance(entry, dict):
        return "is not an object"
    if not isinstance(entry.get("path"), str):
        return "has no \"path\" string"
    if entry.get("kind") not in KINDS:
        return f"has kind {entry.get('kind')!r} (expected one of {', '.join(KINDS)})"
    size = entry.get("size")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        return "has no \"size\" count"
    if not isinstance(entry.get("sha256"), str):
        return "has no \"sha256\" string"
    return None


def unsafe_path(rel: str) -> str | None:
    """Why a manifest path may not be copied into a home (absolute, ``..``, empty parts), or None.

    The one path-safety rule for backup entries: a path is relative, names
    files below the folder it is read from, and is written as ``arcana
    backup`` writes it (POSIX, normalised).
    """
    if not rel or "\x00" in rel or "\\" in rel:
        return "is empty or holds a NUL or a backslash"
    path = PurePosixPath(rel)
    if path.is_absolute():
        return "is absolute"
    if any(part in ("..", ".") for part in rel.split("/")) or path.as_posix() != rel:
        return "is not a plain relative path (it holds '..', '.' or empty parts)"
    if (rel == MANIFEST or path.parts[0] in SKIP_DIRS or any(part.endswith(".partial") for part in path.parts)
            or path.name.endswith(SIDECARS)):
        # a .partial one: a restore's staging folder, if restored; a -wal or -journal beside a database: SQLite
        # would apply it when the restored store opens, content no integrity check of the database saw
        return "names a place a backup never holds"
    return None


def _inside(root: Path, rel: str) -> Path | str:
    """``root / rel`` when no part of it is a symlink and it stays under ``root``; else why not."""
    probe = root
    for part in PurePosixPath(rel).parts:
        probe = probe / part
        if probe.is_symlink():
            return "is a symlink" if probe.name == PurePosixPath(rel).name else "lies under a symlinked folder"
    resolved = probe.resolve()
    if not resolved.is_relative_to(root.resolve()):
        return "resolves outside the backup"
    return probe


def _counted(items: list, on_progress):
    """``items`` one by one; ``on_progress(done, total)`` once the caller's loop body is over for each."""
    for done, item in enumerate(items, start=1):
        yield item
        if on_progress is not None:
            on_progress(done, len(items))


def verify_backup(path: Path, *, on_progress=None) -> tuple[BackupManifest, list[str]]:
    """Re-check every file against the manifest (path safety, size, sha256) and every database's integrity
    (each file that is one, whatever the manifest calls it). ``on_progress(done, total)`` after each file."""
    folder = resolve_backup(path)
    manifest = read_manifest(folder)
    problems = []
    listed = set()
    for entry in _counted(manifest.files, on_progress):
        rel = entry["path"]
        if rel in listed:
            problems.append(f"{rel}: listed twice in the manifest")
            continue
        listed.add(rel)
        if why := unsafe_path(rel):
            problems.append(f"{rel!r}: refused: the path {why}")
            continue
        file = _inside(folder, rel)
        if isinstance(file, str):
            problems.append(f"{rel}: refused: it {file}")
            continue
        if not file.is_file():
            problems.append(f"{rel}: missing")
            continue
        if file.stat().st_size != entry["size"]:
            problems.append(f"{rel}: size {file.stat().st_size} != {entry['size']} in the manifest")
        elif _sha256(file) != entry["sha256"]:
            problems.append(f"{rel}: checksum differs from the manifest")
        # A database is checked by what the file is, whatever its entry's kind says (as restore reads its
        # schema): a manifest calling a damaged memory.db a "file" would have it restored unchecked.
        elif (entry["kind"] == "database" or _is_database(file)) and (verdict := _integrity(file)) != "ok":
            problems.append(f"{rel}: integrity_check: {verdict}")
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            item = Path(dirpath) / name
            rel = item.relative_to(folder).as_posix()
            if item.is_symlink():
                if rel not in listed:
                    problems.append(f"{rel}: a symlink, not in the manifest")
            elif name in filenames and rel not in listed and rel != MANIFEST:
                problems.append(f"{rel}: not in the manifest")
    return manifest, problems


@dataclass
class CopiesReport:
    """What a restore did to the copies its agents have on a server tier (:func:`align_server_copies`)."""

    tier: str | None = None  # the server's masked URL; None: no server tier, nothing to check
    changed: dict[str, int] = field(default_factory=dict)  # withdraw / archive / supersede: how many copies
    unchecked: list[str] = field(default_factory=list)  # agents whose copies could not be checked
    problem: str | None = None

    def as_dict(self) -> dict:
        return {"tier": self.tier, "withdrawn": self.changed.get("withdraw", 0), "archived": self.changed.get("archive", 0),
                "superseded": self.changed.get("supersede", 0), "unchecked": self.unchecked, "problem": self.problem}


@dataclass
class RestoreReport:
    source: Path
    files: int
    moved_to_trash: Path | None
    copies: CopiesReport = field(default_factory=CopiesReport)

    def as_dict(self) -> dict:
        moved = None if self.moved_to_trash is None else str(self.moved_to_trash)
        return {"source": str(self.source), "files": self.files, "moved_to_trash": moved, "copies": self.copies.as_dict()}


async def align_server_copies(home: Home, *, actor: str = "restore", replaced: Home | None = None) -> CopiesReport:
    """Bring the copies this home's agents have on a server global tier in line with their memories.

    A backup holds the home's SQLite files only: a copy on a server outlives the restore, so a
    memory the backup holds hidden (or archived, or superseded) kept answering every home's agents
    there. Only copies of this home's agents are read and changed (a server tier may serve other
    homes), through :meth:`memory.operator.edits.GlobalCopies.align`. ``replaced`` is the home the
    restore moved to the trash (:func:`last_replaced` for `restore --copies`): the copies of what
    it held and the backup does not (a memory made since, an agent made since) are withdrawn, as an
    `agent delete` withdraws an agent's. A SQLite global tier and the
    pools need nothing: ``global.db`` is restored with the home, and pools hold no copies. A server
    that cannot be reached leaves the rest unchecked and says so; `arcana restore --copies` finishes it.
    """
    from memory.adapters.opener import open_store
    from memory.config import load_config
    from memory.errors import ConfigError, UnsetVariableError
    from memory.operator.edits import GlobalCopies
    from memory.server_urls import mask_url
    from memory.store_kinds import StoreKind, store_path

    agents = _agent_folders(home)
    try:
        config = load_config(home.config_path)
        url = config.memory.global_server_url()
    except (ConfigError, UnsetVariableError) as exc:
        return CopiesReport("the global tier", unchecked=agents, problem=str(exc))
    report = CopiesReport(mask_url(url) if url else None)
    if url is None:
        return report
    gone = [] if replaced is None else [a for a in _agent_folders(replaced) if a not in agents]
    copies = GlobalCopies.of_home(home, config, actor=actor)
    try:
        for agent_id in [*agents, *gone]:
            if report.problem is not None:
                report.unchecked.append(agent_id)
                continue
            source = open_store(home, StoreKind.PRIVATE, agent_id, actor=actor) if agent_id in agents else None
            earlier = None
            if replaced is not None and store_path(replaced, StoreKind.PRIVATE, agent_id).exists():
                earlier = open_store(replaced, StoreKind.PRIVATE, agent_id, actor=actor, repair=False)
            try:
                if source is None:  # an agent the restore took away: its copies go, as an `agent delete`'s
                    change = await copies.withdraw_agent(agent_id, earlier)
                    done = {"withdraw": change.count if change else 0}
                else:
                    done = await copies.align(source, agent_id, replaced=earlier)
                for op, n in done.items():
                    report.changed[op] = report.changed.get(op, 0) + n
            except MemoryStorageError as exc:  # LiveCopyError: the server; else the agent's own store
                report.unchecked.append(agent_id)
                report.problem = str(exc)
            finally:
                for store in (source, earlier):
                    if store is not None:
                        await store.aclose()
    finally:
        await copies.aclose()
    return report


def last_replaced(home: Home) -> Home | None:
    """The home the last restore moved to the trash (``trash/pre-restore-<stamp>``), if any: what
    `restore --copies` compares with, finishing that restore."""
    found = sorted(p for p in home.trash_dir.glob("pre-restore-*") if p.is_dir() and not p.is_symlink())
    return Home(found[-1]) if found else None


def _occupied(home: Home) -> list[Path]:
    if not home.root.exists():
        return []
    return [p for p in home.root.iterdir() if p.name != "trash" and not fnmatch.fnmatch(p.name, restore_swap.STAGING)]


def restore_home(path: Path, home: Home, *, force: bool = False, on_progress=None) -> RestoreReport:
    """Restore a verified backup into ``home``, all or nothing, even if killed.

    Into an empty (or missing) home only, unless ``force``: then the live
    home's contents move to ``<home>/trash/pre-restore-<stamp>/`` —
    nothing is deleted. Every file is first copied (never through a symlink)
    into a staging folder inside the home and checked against the manifest
    again, so a backup changed after verification, a full disk or a kill
    leaves the home as it was; then a journal is written and the copy swapped
    in by renames (:mod:`memory.operations.restore_swap`), which the next
    command finishes if this one is killed.

    ``on_progress(done, total)``: files verified, then files copied (``total`` is twice the files).
    """
    verified = (lambda done, total: on_progress(done, 2 * total)) if on_progress is not None else None
    copied = (lambda done, total: on_progress(total + done, 2 * total)) if on_progress is not None else None
    manifest, problems = verify_backup(path, on_progress=verified)
    if problems:
        raise BackupError(f"backup {manifest.path} fails verification ({problems[0]}; {len(problems)} problem(s)); "
                          "nothing was restored")
    _refuse_newer_schema(manifest)
    restore_swap.finish_interrupted_restores(home.root)
    live = _occupied(home)
    if live and not force:
        raise RestoreRefusedError(f"{home.root} is not empty; restore into an empty home, or pass --force to move "
                                  "its current contents to the trash first")
    private_dir(home.root)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    staging = home.root / f".restore-{stamp}-{os.getpid()}.partial"
    lock = restore_swap.claim(staging)
    try:
        with ExitStack() as writes_held:
            try:
                content = private_dir(staging / restore_swap.CONTENT)
                for entry in _counted(manifest.files, copied):
                    _copy_checked(manifest.path, content, entry)
                for agent_id in _agent_folders(home):  # no write is in flight while the stores move
                    writes_held.enter_context(agent_lock.deleting(home, agent_id))
                restore_swap.commit(staging, source=manifest.path, trash=f"pre-restore-{stamp}")
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            moved = restore_swap.swap(home.root, staging)
    finally:
        os.close(lock)
    home.ensure()
    # The swap is done: what fails here is reported, not raised.
    copies = asyncio.run(align_server_copies(home, replaced=None if moved is None else Home(moved)))
    return RestoreReport(manifest.path, len(manifest.files), moved, copies)


def _agent_folders(home: Home) -> list[str]:
    """The live home's agent folders, in one order (two restores take their locks alike).

    A restore holds each one's agent lock, as `agent delete` does, from its commit to the end of
    its swap: a write that checked its store was the live one wrote into the file the swap then
    moved to the trash, acknowledged, and one tier it opened after the swap wrote into the
    restored home instead.
    """
    if not home.agents_dir.is_dir():
        return []
    return sorted(p.name for p in home.agents_dir.iterdir() if p.is_dir() and not p.is_symlink())


def _refuse_newer_schema(manifest: BackupManifest) -> None:
    """SchemaTooNewError when a database of the backup (read off the file, whatever its entry's kind)
    is newer than this Arcana opens: restored, it would leave a home no command can use."""
    from memory.errors import SchemaTooNewError
    from memory.migrations.runner import head_version

    head = head_version()
    for entry in manifest.files:
        file = manifest.path / entry["path"]
        if not _is_database(file):
            continue
        try:
            conn = _readonly(file)
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
            finally:
                conn.close()
        except dbapi().Error as exc:
            raise BackupError(f"backup {manifest.path}: {entry['path']} cannot be read as a database ({exc}); "
                              "nothing was restored") from None
        if version > head:
            raise SchemaTooNewError(
                f"backup {manifest.path}: {entry['path']} has schema version {version}, newer than this Arcana "
                f"understands ({head}); upgrade Arcana to restore it — nothing was restored"
            )


def _copy_checked(folder: Path, staging: Path, entry: dict) -> None:
    """Copy one verified entry into ``staging`` without following a symlink, re-checking size and sha256."""
    rel = entry["path"]
    target = staging / rel
    private_dir(target.parent)
    try:
        fd = os.open(folder / rel, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise BackupError(f"{rel}: cannot be read from the backup ({exc.strerror}); nothing was restored") from None
    digest, size = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as source, open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE), "wb") as out:
        if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            raise BackupError(f"{rel}: not a regular file in the backup; nothing was restored")
        for chunk in iter(lambda: source.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if size != entry["size"] or digest.hexdigest() != entry["sha256"]:
        raise BackupError(f"{rel}: changed since it was verified; nothing was restored")
