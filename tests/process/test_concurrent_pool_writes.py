"""Separate processes of different agents writing one fact into one pool at once store it once: the
decision and the write for a pool are serialised per pool (a lock file beside a SQLite pool, an advisory
lock on a PostgreSQL pool's server), not per agent. Each agent's own decision lock let two members
decide `add` against a pool holding neither row, and the fact was stored twice. Real processes; the
pool's writes are held back (SQLite's write lock, a SHARE lock on the server's table) while they start,
so every one has decided (or waits to) before any could write."""

from __future__ import annotations

import json
import os
import subprocess
import time

from federation_faults import locked_by_another_process
from runner import ARCANA, arcana, keyword_only
from test_postgres_server_trouble import Locker, waiting

SAID = {"ada": "The team standup is held in room Orion.", "bob": "The team standup is held in room Orion.",
        "cy": "The deploy window is Tuesday afternoon."}
SETTLE_SECONDS = 4.0  # once each started deciding: its decision is taken (a keyword one takes milliseconds)


def _team(home, env: dict, *create: str) -> None:
    """SAID's agents in pool 'team' (``create``'s extra options), keyword tiers, a pool write budget long
    enough for the held-back writes; one fact already in the pool."""
    keyword_only(home)
    home.connections_path.parent.mkdir(mode=0o700, exist_ok=True)
    home.connections_path.write_text(json.dumps({"default_shared": {"write_timeout_ms": 120_000}}))
    arcana("pool", "create", "team", *create, home=home, env=env)
    for name in SAID:
        arcana("agent", "create", name, home=home, env=env)
        arcana("agent", "join", name, "team", home=home, env=env)
    arcana("remember", "Lunch is at noon.", "--pool", "team", "-a", "ada", home=home, env=env)


def _say_at_once(home, env: dict, started) -> list[subprocess.Popen]:
    """Each of SAID's agents says its fact into the pool, in a process of its own; returns once
    ``started(procs)`` holds and every decision had time to be taken."""
    environ = {**os.environ, **env, "ARCANA_HOME": str(home.root)}
    procs = [subprocess.Popen([*ARCANA, "remember", fact, "--pool", "team", "-a", name, "--json"], env=environ,
                              text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name, fact in SAID.items()]
    deadline = time.monotonic() + 120
    while not started(procs) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(SETTLE_SECONDS)
    return procs


def _stored_once(home, env: dict, procs: list[subprocess.Popen]) -> None:
    said = [p.communicate(timeout=120) for p in procs]
    failed = [(p.returncode, err) for p, (_, err) in zip(procs, said, strict=True) if p.returncode != 0]
    assert not failed, failed
    stored = json.loads(arcana("memory", "list", "--pool", "team", "--json", home=home, env=env))
    # Two different facts both land (the control); each is one row, however many members said it.
    assert sorted(m["content"] for m in stored) == sorted({*SAID.values(), "Lunch is at noon."})


def _holds_any(pid: int, paths: set[str]) -> bool:
    """Whether process ``pid`` has one of ``paths`` open."""
    try:
        return any(os.path.realpath(f"/proc/{pid}/fd/{fd}") in paths for fd in os.listdir(f"/proc/{pid}/fd"))
    except FileNotFoundError:  # it ended, or the fd closed while listed
        return False


def test_one_fact_said_into_a_sqlite_pool_by_two_agents_at_once_is_stored_once(arcana_home):
    _team(arcana_home, {})
    db = arcana_home.pool_db("team").resolve()
    watched = {str(db), f"{db}-decide.lock", f"{db}-decide-gate.lock"}  # the pool: it decides; its lock: it waits
    with locked_by_another_process(db):
        procs = _say_at_once(arcana_home, {}, lambda procs: all(
            p.poll() is not None or _holds_any(p.pid, watched) for p in procs))
    _stored_once(arcana_home, {}, procs)


def test_one_fact_said_into_a_server_pool_by_two_agents_at_once_is_stored_once(arcana_home, pg_url, pg_server):
    env = {"TEAM_PG": pg_url}
    _team(arcana_home, env, "--url-env", "TEAM_PG")
    locker = Locker(pg_server, "LOCK memories IN SHARE MODE")  # reads go on, every write waits
    try:
        procs = _say_at_once(arcana_home, env, lambda _: waiting(pg_server) >= 1)
    finally:
        locker.close()
    _stored_once(arcana_home, env, procs)


def test_a_write_waiting_for_another_members_write_into_the_pool_says_so_and_a_lock_wait_bounds_it(arcana_home):
    """A member's write behind another's decision in the pool says once what it waits for and where, then
    stores; with `--lock-wait` it stops at the wait with one line naming the lock (exit 75), nothing stored."""
    import select
    import signal

    from runner import flock_holder, run_arcana

    from arcana_cli import exit_codes

    _team(arcana_home, {})
    quiet = run_arcana("remember", "The team kettle is blue.", "--pool", "team", "-a", "bob", home=arcana_home)
    assert quiet.returncode == 0 and "waiting" not in quiet.stderr  # control: a free lock, no word of waiting
    lock = arcana_home.pool_db("team").parent / "team.db-decide.lock"
    holder = flock_holder(lock)  # another member's write into the pool is deciding
    try:
        bounded = run_arcana("--lock-wait", "0.5", "remember", "The team kettle is red.", "--pool", "team", "-a", "bob",
                             home=arcana_home)
        assert bounded.returncode == exit_codes.BUSY and bounded.stderr.count("\n") == 1, bounded.stderr
        assert str(lock) in bounded.stderr and "--lock-wait" in bounded.stderr, bounded.stderr
        environ = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
        waiter = subprocess.Popen([*ARCANA, "remember", "The team kettle is green.", "--pool", "team", "-a", "bob"],
                                  env=environ, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        assert select.select([waiter.stderr], [], [], 120)[0], "no word on stderr while waiting"
        line = waiter.stderr.readline()
        assert line.startswith("warning: waiting for another process's write into") and str(lock) in line, line
        assert waiter.poll() is None  # still waiting, nothing stored yet
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    _, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    stored = json.loads(arcana("memory", "list", "--pool", "team", "--json", home=arcana_home))
    assert sorted(m["content"] for m in stored) == sorted(["Lunch is at noon.", "The team kettle is blue.",
                                                          "The team kettle is green."])
