"""Separate processes remembering the same fact for one agent at once (an MCP server, a cron import, a
hook) store it once: each decides against what the others stored. Each decided `add` against a store
holding none of their rows and the fact was stored as many times as it was said. Real processes; the
store's write lock is held while they start, so every one has decided before any could write."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from federation_faults import locked_by_another_process
from runner import ARCANA, arcana, keyword_only

FACTS = ("The user's parrot is named Kiwi.", "The staging database lives on host pg-stage-2.")
SAYERS = 4  # processes per fact


def _holds_open(pid: int, db: Path) -> bool:
    """Whether process ``pid`` has ``db`` open (it connected: its decision is next)."""
    try:
        return any(os.path.realpath(f"/proc/{pid}/fd/{fd}") == str(db) for fd in os.listdir(f"/proc/{pid}/fd"))
    except FileNotFoundError:  # it ended, or the fd closed while listed
        return False


def test_one_fact_said_by_processes_at_once_is_stored_once(arcana_home):
    keyword_only(arcana_home)
    agent = json.loads(arcana("agent", "create", "ada", "--json", home=arcana_home))["id"]
    arcana("remember", "Tea is served at four.", "-a", "ada", home=arcana_home)
    db = arcana_home.agent_db(agent).resolve()
    environ = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}

    with locked_by_another_process(db):
        procs = [
            subprocess.Popen([*ARCANA, "remember", fact, "-a", "ada", "--json"], env=environ, text=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for fact in FACTS for _ in range(SAYERS)
        ]
        pending = list(procs)
        while pending:  # each connected before any may write
            pending = [p for p in pending if p.poll() is None and not _holds_open(p.pid, db)]
    said = [p.communicate(timeout=120) for p in procs]
    failed = [(p.returncode, err) for p, (_, err) in zip(procs, said, strict=True) if p.returncode != 0]
    assert not failed, failed  # each failure's own stderr, whole

    ids = [json.loads(out)["id"] for out, _ in said]
    for n, _ in enumerate(FACTS):  # every process that said a fact names the one memory holding it
        assert len(set(ids[n * SAYERS:(n + 1) * SAYERS])) == 1, ids
    stored = json.loads(arcana("memory", "list", "-a", "ada", "--json", home=arcana_home))
    assert sorted(m["content"] for m in stored) == sorted([*FACTS, "Tea is served at four."])


def test_a_remember_waiting_behind_another_processs_write_says_what_it_waits_for(arcana_home):
    """A `remember` behind an import's batch waited on the agent's decision lock for tens of seconds with
    nothing on stderr, as if hung. It now says, once, what it waits for and where; then it stores."""
    import select
    import signal

    from runner import flock_holder, run_arcana

    keyword_only(arcana_home)
    agent = json.loads(arcana("agent", "create", "ada", "--json", home=arcana_home))["id"]
    quiet = run_arcana("remember", "The user's parrot is named Kiwi.", "-a", "ada", home=arcana_home)
    assert quiet.returncode == 0 and "waiting" not in quiet.stderr  # control: a free lock, no word of waiting
    lock = arcana_home.locks_dir / f"agent-{agent}-decide.lock"
    holder = flock_holder(lock)  # another process's write is deciding
    environ = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}
    waiter = subprocess.Popen([*ARCANA, "remember", "The staging database lives on host pg-stage-2.", "-a", "ada"],
                              env=environ, text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        assert select.select([waiter.stderr], [], [], 120)[0], "no word on stderr while waiting"
        line = waiter.stderr.readline()
        assert line.startswith("warning: waiting for another process's write for agent 'ada'") and str(lock) in line
        assert waiter.poll() is None  # still waiting, nothing stored yet
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    out, err = waiter.communicate(timeout=120)
    assert waiter.returncode == 0, err
    stored = json.loads(arcana("memory", "list", "-a", "ada", "--json", home=arcana_home))
    assert sorted(m["content"] for m in stored) == sorted(FACTS)
