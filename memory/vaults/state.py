"""A vault's small status file: when a watch last saw an event and last indexed.

A watcher that silently stops is a known failure of peer tools, so the watch
writes here and ``arcana vault status`` reads it (with a liveness check on the
recorded pid). Writes are atomic replaces under a short lock, because a watch
and a cron ``vault index`` may both update it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory import strict_json
from memory.home import private_dir, replace_file


def load_state(path: Path) -> tuple[dict[str, Any], str | None]:
    """The state ({} when there is none or it cannot be read: rebuilt by the next index or watch), and
    why the file is there but damaged (else None): `vault status` says so rather than "never" of a
    vault indexed a minute ago. Read strictly: a file nested past the parser's depth was a traceback."""
    try:
        data = strict_json.loads(strict_json.decode(path.read_bytes()))
    except OSError:
        return {}, None
    except strict_json.JSONRefused as exc:
        return {}, str(exc)
    return (data, None) if isinstance(data, dict) else ({}, "not a JSON object")


def damaged(path: Path, vault: str, why: str) -> str:
    """What `vault status` and `doctor` say of a state file that cannot be read, and what rebuilds it."""
    return f"{path} is damaged ({why}); `arcana vault index {vault}` moves it aside and starts it afresh"


@contextmanager
def state_lock(path: Path):
    """The state file's lock: its writers, and :meth:`VaultRegistry.remove` deleting it."""
    private_dir(path.parent)
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def update_state(path: Path, *, only_while: Callable[[], bool] | None = None, **fields: Any) -> str | None:
    """Merge ``fields`` into the state file (None deletes a key); returns what to tell the user, if anything.

    ``only_while`` is asked under the lock: a vault removed meanwhile (its
    files are deleted under the same lock) gets no new state file. A damaged
    file is moved aside beside it (never deleted, never silently written over)
    and the state started afresh; the returned message says where it went.
    """
    with state_lock(path):
        if only_while is not None and not only_while():
            return None
        state, damage = load_state(path)
        told = None
        if damage is not None:
            aside = _free_place(path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"))
            path.replace(aside)
            told = f"{path} was damaged ({damage}); moved it to {aside} and started it afresh"
        for key, value in fields.items():
            if value is None:
                state.pop(key, None)
            else:
                state[key] = value
        replace_file(path, json.dumps(state, indent=2, sort_keys=True))  # fsynced before the rename
    return told


def _free_place(path: Path) -> Path:
    place, n = path, 1
    while place.exists() or place.is_symlink():
        n += 1
        place = path.with_name(f"{path.name}-{n}")
    return place


def pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: a pid past any process's, read off disk
        return False
    except PermissionError:
        return True
    return True


def now() -> float:
    return time.time()
