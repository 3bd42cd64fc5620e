"""The one way tests run `arcana` as a separate process, and the one keyword-only home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ARCANA = [sys.executable, "-m", "arcana_cli.main"]


def run_arcana(
    *args: str, home: Path | str | None = None, stdin: str | None = None, env: dict | None = None, timeout: float = 120,
) -> subprocess.CompletedProcess:
    """`arcana ARGS` in a new process, as a user's shell runs it: text out, nothing on stdin unless given.
    ``home`` sets ARCANA_HOME (else the test's, from the environment); ``env`` adds variables."""
    environ = {**os.environ, **(env or {})}
    if home is not None:  # a Home (its .root) or a path; a Path's own .root is "/", never the home
        environ["ARCANA_HOME"] = str(home if isinstance(home, (str, Path)) else home.root)
    return subprocess.run(
        [*ARCANA, *args], input=stdin, capture_output=True, text=True, env=environ, timeout=timeout,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def arcana(*args: str, **kw) -> str:
    """:func:`run_arcana` that must succeed; its stdout."""
    done = run_arcana(*args, **kw)
    assert done.returncode == 0, done.stderr
    return done.stdout


def recalled(query: str, agent: str = "ada") -> list[str]:
    """The contents ``arcana recall QUERY --agent AGENT`` answers with, best first."""
    return [r["content"] for r in json.loads(arcana("recall", query, "--agent", agent, "--json"))["results"]]


def cli_data(cli, *args: str):
    """What the in-process ``cli`` fixture's command prints with ``--json``, asserting it succeeded."""
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def keyword_only(home) -> None:
    """A home whose config lists no embedding provider: keyword-only, no model load, fast processes."""
    home.ensure()  # 0700, as Arcana makes it
    home.config_path.write_text(json.dumps({"embedding": {"providers": []}}))
    home.config_path.chmod(0o600)


def kill_when(home, args: list[str], ready, what: str, timeout: float = 300, sig: int | None = None) -> int:
    """Start `arcana ARGS` against ``home`` and send it ``sig`` (SIGKILL by default) the moment ``ready()``
    is true (polled every 5 ms; an ``sqlite3.Error`` from a half-written database counts as not yet); its
    return code. Fails saying ``what`` was awaited when the process ends first."""
    import signal
    import sqlite3
    import time

    environ = {**os.environ, "ARCANA_HOME": str(home if isinstance(home, (str, Path)) else home.root)}
    proc = subprocess.Popen([*ARCANA, *args], env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if ready():
                    proc.send_signal(signal.SIGKILL if sig is None else sig)
                    return proc.wait()
            except sqlite3.Error:
                pass
            time.sleep(0.005)
        raise AssertionError(f"`arcana {' '.join(args)}` ended before {what}: {proc.communicate()}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def flock_holder(path: Path, content: bytes = b"") -> subprocess.Popen:
    """A process holding ``path`` flocked exclusively (made 0600 if missing, ``content`` written), as
    another Arcana process would, until it is killed; returned once it holds it."""
    script = ("import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o600)\n"
              "fcntl.flock(fd, fcntl.LOCK_EX)\nos.write(fd, sys.argv[2].encode('latin-1'))\n"
              "print('held', flush=True)\nsys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", script, str(path), content.decode("latin-1")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    return holder
