"""The last step of a restore, the swap of a verified copy into the home, and finishing one a kill interrupted.

A restore copies the backup into ``<home>/.restore-<stamp>-<pid>.partial/home/``
and checks it; only then it writes ``journal.json`` beside that copy (the
commit point). Without a journal a staging folder is an unfinished copy: the
home was never touched, and the folder is removed. With one, the swap is
finished, by the restore itself or, after a kill, by the next ``arcana``
command: every entry of the home that is not already the backup's moves to
the journal's trash folder, then every entry left in the copy moves into the
home. Each step is a rename within the home and each can be taken again, so
from any kill the swap ends as one uninterrupted swap would. Only the standard
library and two kernel modules are imported here: every command calls :func:`finish_interrupted_restores`.
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import os
import shutil
import stat
import time
from pathlib import Path

from memory import strict_json
from memory.home import PRIVATE_FILE, private_dir

STAGING = ".restore-*.partial"
CONTENT = "home"  # the backup's copy, inside the staging folder
JOURNAL = "journal.json"  # present: the copy is complete and checked, and the swap must be finished
LOCK = ".lock"  # held (flock) by the restore that owns the staging folder
ABANDONED_AFTER = 60.0  # seconds: a staging folder with no lock file this old was left by a killed process
# Never moved: the trash, and the lock files, which a backup never holds. The restore holds its agents'
# locks through the swap, and a process waiting on one must wait on the file the next one takes.
_NEVER_MOVED = ("trash", "locks")


def claim(staging: Path) -> int:
    """Make ``staging`` (0700) and hold its lock file, so no other process finishes or removes it meanwhile."""
    staging.mkdir(mode=0o700)
    fd = os.open(staging / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def commit(staging: Path, *, source: Path, trash: str) -> None:
    """Write the journal: from here on the restore is finished, whoever finishes it."""
    names = sorted(item.name for item in (staging / CONTENT).iterdir())
    body = json.dumps({"source": str(source), "trash": trash, "names": names}, indent=2) + "\n"
    scratch = staging / f"{JOURNAL}.tmp"
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(body)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(scratch, staging / JOURNAL)
    _sync_dir(staging)


def swap(root: Path, staging: Path) -> Path | None:
    """Finish a committed restore: the home's entries to the trash, the copy's into the home.

    Returns the trash folder when anything was moved there. Taken again after a
    kill at any point, it ends where one uninterrupted call would.
    """
    journal = _read_journal(staging)
    content, names = staging / CONTENT, set(journal["names"])
    trash = root / "trash" / journal["trash"]
    for item in sorted(root.iterdir()):
        if item.name in _NEVER_MOVED or fnmatch.fnmatch(item.name, STAGING):
            continue
        if item.name in names and not os.path.lexists(content / item.name):
            continue  # the backup's own, moved in before the kill
        private_dir(trash)
        item.rename(_free(trash / item.name))
    for name in sorted(names):
        if os.path.lexists(content / name):
            (content / name).rename(root / name)
    _sync_dir(root)
    (staging / JOURNAL).unlink()  # done: what is left is an empty folder
    shutil.rmtree(staging, ignore_errors=True)
    return trash if trash.is_dir() else None


def finish_interrupted_restores(root: Path) -> list[str]:
    """Finish (journal) or remove (no journal) each staging folder a killed restore left; one line each.

    A staging folder whose restore still runs is left to it, but one in its
    swap is waited for (a few renames), so no command runs on a half-swapped home.
    """
    said = []
    for staging in _staging_folders(root):
        fd = _owner_gone(staging)
        if fd is False:
            continue
        try:
            if (staging / JOURNAL).is_file():
                journal = _read_journal(staging)
                held = _stop_writes(root)
                try:
                    trash = swap(root, staging)
                finally:
                    for lock in held:
                        os.close(lock)
                moved = f"; its previous contents are in {trash}" if trash else ""
                said.append(f"finished a restore from {journal['source']} that was interrupted: the home now holds "
                            f"that backup{moved}")
            elif staging.is_dir():
                copied = any((staging / CONTENT).iterdir()) if (staging / CONTENT).is_dir() else False
                shutil.rmtree(staging, ignore_errors=True)
                if copied:
                    said.append(f"removed {staging}, the unfinished copy of a restore that was interrupted "
                                "before it changed anything: the home is as it was")
        finally:
            if fd is not None:
                os.close(fd)
    return said


def damaged_journals(root: Path) -> list[str]:
    """What is wrong with each restore journal that cannot be finished, and the fix: every command but
    `arcana doctor` stops at the first (the home may be half swapped); doctor lists them all."""
    from memory.errors import BackupError

    found = []
    for staging in _staging_folders(root):
        if (staging / JOURNAL).is_file():
            try:
                _read_journal(staging)
            except BackupError as exc:
                found.append(str(exc))
    return found


def _staging_folders(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if fnmatch.fnmatch(p.name, STAGING))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _stop_writes(root: Path) -> list[int]:
    """Every agent's lock held exclusively (waiting for each), as the restore held them for its swap.

    The restore's kill released them: without them again, a write in flight would check the
    store it opened is still the live one and write into it just as this swap moved it to the trash.
    """
    from memory.agent_lock import agent_lock_path
    from memory.home import Home

    agents, home = root / "agents", Home(root)
    names = sorted(p.name for p in agents.iterdir() if p.is_dir() and not p.is_symlink()) if agents.is_dir() else []
    held: list[int] = []
    try:
        for name in names:
            for part in ("-gate", ""):  # the order `agent delete` takes them in
                path = agent_lock_path(home, name, part)
                private_dir(path.parent)
                held.append(os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE))
                fcntl.flock(held[-1], fcntl.LOCK_EX)
    except BaseException:
        for lock in held:
            os.close(lock)
        raise
    return held


def _owner_gone(staging: Path) -> int | None | bool:
    """The held lock of a staging folder whose restore is gone (None: it has no lock file and is old);
    False while its restore runs. A restore in its swap (journal written) is waited for."""
    try:
        st = staging.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    try:
        fd = os.open(staging / LOCK, os.O_RDWR | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None if time.time() - st.st_mtime >= ABANDONED_AFTER else False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if not (staging / JOURNAL).exists():
            os.close(fd)
            return False  # still copying; the home is untouched until it commits
        fcntl.flock(fd, fcntl.LOCK_EX)  # swapping: a few renames
    if not staging.is_dir():  # its restore finished while we waited
        os.close(fd)
        return False
    return fd


def _read_journal(staging: Path) -> dict:
    """The journal, checked: it names entries of the home and one folder of the trash, nothing else."""
    from memory.errors import BackupError

    where = staging / JOURNAL
    try:
        body = strict_json.loads(strict_json.decode(where.read_bytes()))  # a key twice: which names to swap is a guess
        names, trash, source = body["names"], body["trash"], body["source"]
    except (OSError, ValueError, TypeError, KeyError) as exc:  # JSONRefused too: nested past the parser's depth
        raise BackupError(f"{where} is unreadable ({exc}): a restore was interrupted and cannot be finished; "
                          f"move {staging} out of the home and restore again") from None
    if not (isinstance(names, list) and all(_one_part(n) for n in names) and _one_part(trash)
            and isinstance(source, str)):
        raise BackupError(f"{where} names paths outside the home: a restore was interrupted and cannot be finished; "
                          f"move {staging} out of the home and restore again")
    return body


def _one_part(name: object) -> bool:
    return (isinstance(name, str) and name not in ("", ".", "..", *_NEVER_MOVED) and "/" not in name
            and "\x00" not in name and not fnmatch.fnmatch(name, STAGING))


def _free(path: Path) -> Path:
    """``path``, or ``path.1``, ``path.2`` … when something already has its name (never overwrite the trash)."""
    candidate, n = path, 0
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def _sync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
