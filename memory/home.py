"""The ~/.arcana layout, resolved at call time so tests can point ARCANA_HOME anywhere."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path


PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600


_HOME_MARKS = ("config.json", "agents", "logs", "locks", "connections", "vector", "pools")


def _home_or_empty(root: Path) -> bool:
    """An Arcana home already (any of the entries Arcana makes in one), or an empty folder."""
    return any((root / mark).exists() for mark in _HOME_MARKS) or next(root.iterdir(), None) is None


def private_dir(path: Path | str) -> Path:
    """Create ``path`` and every missing parent as 0700, whatever the umask; return it.

    ``Path.mkdir(mode, parents=True)`` applies the mode to the last folder only
    (its parents get 0755): every folder under the home is made here instead.
    """
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            continue
        os.chmod(folder, PRIVATE_DIR)
    return path


def private_file(path: Path | str) -> Path:
    """Create ``path`` empty and 0600 when it is missing (its folders 0700); an existing file is left alone.

    SQLite gives a database's -wal and -shm files the database file's mode, so a
    store created through here stays private with all its parts.
    """
    path = Path(path)
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return path
    os.close(fd)
    os.chmod(path, PRIVATE_FILE)
    return path


def replace_file(path: Path | str, text: str, *, mode: int = PRIVATE_FILE) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically: :func:`staged_file`, then the rename, so a crash
    leaves the old file or the new one, never an empty or half-written one. An error from the rename
    names ``path``, not the temp file (which is removed)."""
    path = Path(path)
    tmp = staged_file(path, text, mode=mode)
    try:
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def staged_file(path: Path | str, text: str, *, mode: int = PRIVATE_FILE) -> Path:
    """A temp file of a unique name beside ``path`` (two writers never share one) holding ``text``,
    fsynced and given ``mode``, ready to be renamed over ``path``; removed when anything fails."""
    import tempfile

    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def file_id(path: Path | str) -> tuple[int, int] | None:
    """Which file ``path`` is now (device, inode); None when there is none. A long-lived reader
    compares it with the file it opened: a store removed (perhaps made again under its name) is
    another file at the same path, and its open handle still reads the old one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def default_home() -> Path:
    env = os.environ.get("ARCANA_HOME")
    if env and not env.isascii():
        try:  # no store opens at a path that is not UTF-8: refused first, as `--home` with such bytes is
            env.encode("utf-8")
        except UnicodeEncodeError:
            from memory.errors import InvalidRequestError

            shown = env.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise InvalidRequestError(f"ARCANA_HOME ('{shown}') is not valid UTF-8; point it at a folder "
                                      "whose path is UTF-8 (rename the folder if need be)") from None
    return Path(env).expanduser() if env else Path.home() / ".arcana"


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_RULE = "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"


SHOWN_NAME_CHARS = 80  # of a name a message echoes: a valid one is at most 64


def shown_name(name: str) -> str:
    """``name`` quoted as a message echoes it: control characters (a terminal's escapes that recolour or
    retitle it) escaped as ``repr`` does, and cut after :data:`SHOWN_NAME_CHARS` characters with its length
    said. The name is what someone typed, pasted or planted in a file: it may be a megabyte, or hostile."""
    if len(name) <= SHOWN_NAME_CHARS:
        return repr(name)
    quoted = repr(name[:SHOWN_NAME_CHARS])
    return f"{quoted[:-1]}…{quoted[-1]} ({len(name):,} characters)"


def is_safe_name(name: object) -> bool:
    """The one rule for every name or id that becomes a file or folder name under the home
    (agent ids and names, pool and vault names): one path component, never ``..`` or absolute."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def check_name(kind: str, name: str) -> str:
    """A name someone typed: invalid input (exit 2), not a broken config."""
    if not is_safe_name(name):
        from memory.errors import InvalidRequestError

        raise InvalidRequestError(f"invalid {kind} name {shown_name(name)}: {NAME_RULE}")
    return name


def unusable_name(kind: str, name: str) -> str | None:
    """Why ``name`` can name no agent or pool at all (``create`` refuses it), for a not-found message that must
    not send the user to a ``create`` that fails; None for a name that could exist."""
    if not name.strip():
        return "the name is empty: an unset variable?"
    return None if is_safe_name(name) else f"not a valid {kind} name"


def loaded_name(kind: str, name: str) -> str:
    """A name read from a file (config.json, agent.json): ValueError, so pydantic names the field."""
    if not is_safe_name(name):
        raise ValueError(f"invalid {kind} name {shown_name(name)} (it would become a path under the home): {NAME_RULE}")
    return name


def _part(kind: str, name: str) -> str:
    """The last guard before a name becomes part of a path: whatever slipped past loading stops here."""
    if not is_safe_name(name):
        from memory.errors import ConfigError

        raise ConfigError(f"refusing {kind} {shown_name(name)} as part of a path under the home: {NAME_RULE}")
    return name


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def resolve(cls, root: Path | str | None = None) -> Home:
        return cls(Path(root).expanduser() if root else default_home())

    @property
    def config_path(self) -> Path:
        return self.root / "config.json"

    @property
    def agents_dir(self) -> Path:
        return self.root / "agents"

    def agent_dir(self, agent_id: str) -> Path:
        return self.agents_dir / _part("agent id", str(agent_id))

    def agent_db(self, agent_id: str) -> Path:
        return self.agent_dir(agent_id) / "memory.db"

    @property
    def global_db(self) -> Path:
        return self.root / "vector" / "global.db"

    @property
    def pools_dir(self) -> Path:
        return self.root / "pools"

    def pool_db(self, name: str) -> Path:
        return self.pools_dir / f"{_part('pool name', name)}.db"

    @property
    def vaults_dir(self) -> Path:
        return self.root / "vaults"

    def vault_db(self, name: str) -> Path:
        return self.vaults_dir / f"{_part('vault name', name)}.db"

    def vault_state(self, name: str) -> Path:
        return self.vaults_dir / f"{_part('vault name', name)}.state.json"

    @property
    def audit_log(self) -> Path:
        return self.root / "logs" / "audit.jsonl"

    @property
    def quarantine_dir(self) -> Path:
        return self.root / "quarantine"

    @property
    def trash_dir(self) -> Path:
        return self.root / "trash"

    def trash_place(self, stem: str) -> Path:
        """A free path in the trash for something moved there: ``<stem>-<unix time>``, then ``-2``,
        ``-3``… A pool removed, made again and removed within one second has the same stem and time,
        and the second move must not fail on (or into) the first one's folder."""
        private_dir(self.trash_dir)
        base = self.trash_dir / f"{stem}-{int(time.time())}"
        place, n = base, 1
        while place.exists() or place.is_symlink():
            n += 1
            place = base.with_name(f"{base.name}-{n}")
        return place

    @property
    def locks_dir(self) -> Path:
        return self.root / "locks"

    @property
    def backups_dir(self) -> Path:
        return self.root / "backups"

    @property
    def connections_path(self) -> Path:
        return self.root / "connections" / "memory-adapters.json"

    @property
    def models_cache(self) -> Path:
        return self.root / "models"

    def ensure(self) -> None:
        """Create the home (0700) and its fixed sub-directories; idempotent.

        An existing folder becomes a home only when it is empty or already one:
        making ``/``, ``$HOME`` or ``/tmp`` 0700 because ARCANA_HOME pointed
        there would lock everyone else out of it.
        """
        if self.root.is_dir() and not _home_or_empty(self.root):
            from memory.errors import InvalidRequestError

            raise InvalidRequestError(
                f"ARCANA_HOME {self.root} is a folder that already holds other things and no Arcana home; "
                f"point ARCANA_HOME (or --home) at a folder of its own, such as {self.root / '.arcana'}"
            )
        for directory in (self.root, self.agents_dir, self.root / "logs", self.locks_dir):
            private_dir(directory)
        os.chmod(self.root, PRIVATE_DIR)

    def databases(self) -> list[Path]:
        """Every SQLite store under the home: agents, pools, global, vault indexes."""
        found = sorted(self.agents_dir.glob("*/memory.db"))
        found += sorted(self.pools_dir.glob("*.db"))
        found += sorted(self.vaults_dir.glob("*.db"))
        if self.global_db.exists():
            found.append(self.global_db)
        return found
