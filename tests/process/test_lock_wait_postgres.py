"""A server pool's row another session holds locked: `--lock-wait` bounds the wait as it does a SQLite
store's (lock_timeout for the session), and the one line says the row stayed locked and names
--lock-wait, not "check that the server is up". Real server (the suite's), real `arcana` processes;
another psql session holds the memory's row FOR UPDATE."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from runner import run_arcana
from test_postgres_server_trouble import Locker, team  # noqa: F401 - the server pool fixture, reused

from arcana_cli import exit_codes


def _pooled(home, env) -> list[dict]:
    done = run_arcana("memory", "list", "--pool", "team", "--json", home=home, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_lock_wait_bounds_the_wait_for_a_row_another_session_holds(team, arcana_home, pg_server):
    env = team
    run_arcana("remember", "the team kettle is red", "--agent", "alice", "--pool", "team", home=arcana_home, env=env)
    rows = {m["content"]: m["id"] for m in _pooled(arcana_home, env)}
    blue = rows["the team kettle is blue"]
    locker = Locker(pg_server, f"SELECT 1 FROM memories WHERE id = '{blue}' FOR UPDATE")
    try:
        started = time.monotonic()
        done = run_arcana("--lock-wait", "0.5", "memory", "forget", blue, "--pool", "team", home=arcana_home, env=env)
        took = time.monotonic() - started
        assert done.returncode == exit_codes.STORAGE and done.stderr.count("\n") == 1, done.stderr
        assert "locked" in done.stderr and "--lock-wait" in done.stderr, done.stderr
        assert "server is up" not in done.stderr, done.stderr
        assert took < 4, took  # the pool's statement timeout (5 s) would still be waiting
    finally:
        locker.close()
    assert sorted(m["content"] for m in _pooled(arcana_home, env)) == [
        "the team kettle is blue", "the team kettle is red"]  # nothing changed
    done = run_arcana("--lock-wait", "0.5", "memory", "forget", blue, "--pool", "team", home=arcana_home, env=env)
    assert done.returncode == 0, done.stderr
    assert [m["content"] for m in _pooled(arcana_home, env)] == ["the team kettle is red"]  # the control stays


def test_a_statement_timeout_behind_a_lock_says_a_lock_or_a_slow_statement_not_the_server(
    team, arcana_home, pg_server
):
    """No lock wait given, or one longer than the statement timeout (5 s here): the server cancels the
    write at the statement timeout (SQLSTATE 57014). It answered, so the line names the lock or the slow
    statement and how to fix it; a server that is down still says to check it (the control)."""
    env = team
    blue = _pooled(arcana_home, env)[0]["id"]
    locker = Locker(pg_server, f"SELECT 1 FROM memories WHERE id = '{blue}' FOR UPDATE")
    try:
        for given in ((), ("--lock-wait", "30")):
            done = run_arcana(*given, "memory", "forget", blue, "--pool", "team", home=arcana_home, env=env)
            assert done.returncode == exit_codes.STORAGE and done.stderr.count("\n") == 1, done.stderr
            assert "another session held a lock" in done.stderr and "statement timeout" in done.stderr, done.stderr
            assert "memory-adapters.json" in done.stderr and "server is up" not in done.stderr, done.stderr
    finally:
        locker.close()
    assert [m["content"] for m in _pooled(arcana_home, env)] == ["the team kettle is blue"]  # nothing changed
    pg_server._ctl("-m", "fast", "-w", "-t", "60", "stop")
    done = run_arcana("memory", "forget", blue, "--pool", "team", home=arcana_home, env=env)
    assert done.returncode == exit_codes.STORAGE and "server is up" in done.stderr, done.stderr
    assert "held a lock" not in done.stderr, done.stderr


def _holding(path, seconds: float) -> subprocess.Popen:
    """Another process holding ``path`` (flock, as a running prune holds the home's prune lock) for ``seconds``."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(float(sys.argv[2]))", str(path), str(seconds)],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_prune_waits_for_the_first_past_the_pools_statement_timeout(team, arcana_home):
    """A second prune of a server pool, given a lock wait longer than the pool's statement timeout (5 s),
    waits for the home's prune lock, a file, before it opens the pool: no statement is running while it
    waits, so none is cancelled at the statement timeout, and it prunes once the first is done. Without
    the wait it needs (the control) it is busy, and prunes nothing."""
    env = team
    run_arcana("remember", "the team kettle is red", "--agent", "alice", "--pool", "team", home=arcana_home, env=env)
    lock = arcana_home.locks_dir / "prune.lock"
    holder = _holding(lock, 60)
    try:
        done = run_arcana("--lock-wait", "1", "prune", "--pool", "team", "--max-entries", "1", home=arcana_home, env=env)
        assert done.returncode == exit_codes.BUSY and "--lock-wait" in done.stderr, done.stderr
    finally:
        holder.kill()
        holder.wait()
    assert len(_pooled(arcana_home, env)) == 2  # the busy one pruned nothing

    holder = _holding(lock, 7.0)  # past the pool's 5 s statement timeout
    try:
        started = time.monotonic()
        done = run_arcana("--lock-wait", "30", "prune", "--pool", "team", "--max-entries", "1", home=arcana_home, env=env)
        took = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stderr
    assert took >= 6, took  # it waited for the holder
    assert len(_pooled(arcana_home, env)) == 1
