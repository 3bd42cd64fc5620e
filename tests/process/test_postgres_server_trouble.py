"""A server pool's PostgreSQL stopping while a real `arcana` process is using it.

The server is the session's (tests/support/pg_server.py), stopped with ``pg_ctl`` (fast: its
sessions are ended; immediate: a crash) while the command waits on it, and started again
before the test ends. Each command is a real process; the assertions are its exit code, a
one-line stderr, the private tier still answering, and the pool whole after a re-run.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from runner import ARCANA, keyword_only, run_arcana

from arcana_cli import exit_codes

STORAGE = exit_codes.STORAGE


@pytest.fixture
def team(arcana_home, pg_url, pg_server):
    """alice, in server pool 'team' (keyword-only home), with one private and one pooled memory."""
    keyword_only(arcana_home)
    env = {"TEAM_PG": pg_url}
    for args in (("agent", "create", "alice"), ("pool", "create", "team", "--url-env", "TEAM_PG"),
                 ("agent", "join", "alice", "team"),
                 ("remember", "the private kettle is green", "--agent", "alice"),
                 ("remember", "the team kettle is blue", "--agent", "alice", "--pool", "team")):
        done = run_arcana(*args, env=env)
        assert done.returncode == 0, done.stderr
    yield env
    if not pg_server.running():
        pg_server.start()


TABLE_LOCK = "LOCK memories IN ACCESS EXCLUSIVE MODE"  # every read and write of the pool waits behind it


class Locker:
    """A psql session holding ``lock`` (a statement) in an open transaction until the server stops under it."""

    def __init__(self, pg_server, lock: str = TABLE_LOCK, database: str = "arcana_test"):
        cmd = [str(pg_server.bin / "psql"), "-X", "-q", "-t", "-A", "-h", "127.0.0.1", "-p", str(pg_server.port), "-U", "postgres",
               "-d", database]
        if pg_server.user is not None:
            cmd = ["runuser", "-u", pg_server.user, "--", *cmd]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.proc.stdin.write(f"BEGIN; {lock}; SELECT 'locked';\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:  # what ``lock`` printed, then the marker
            if line.strip() == "locked":
                break
        else:
            self.proc.kill()
            raise AssertionError(f"could not lock memories: {self.proc.communicate()[1]}")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=30)


def waiting(pg_server) -> int:
    return int(pg_server.psql(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'arcana' AND wait_event_type = 'Lock'"
    ) or 0)


def stop_while_waiting(pg_server, home, env, *args, mode: str = "fast", lock: str = TABLE_LOCK
                       ) -> subprocess.CompletedProcess:
    """Run `arcana ARGS`; once it waits on ``lock``, stop the server (``mode``); the finished process."""
    locker = Locker(pg_server, lock)
    proc = subprocess.Popen([*ARCANA, *args], env={**os.environ, "ARCANA_HOME": str(home.root), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not waiting(pg_server):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the command never waited on the server"
            time.sleep(0.02)
        pg_server._ctl("-m", mode, "-w", "-t", "60", "stop")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        locker.close()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_recall_while_the_server_stops_answers_from_the_private_tier(team, arcana_home, pg_server, mode):
    done = stop_while_waiting(pg_server, arcana_home, team, "recall", "kettle", "--agent", "alice", "--json", mode=mode)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [r["content"] for r in found["results"]] == ["the private kettle is green"]
    assert [d["tier"] for d in found["degraded"]] == ["pool:team"]
    assert "Traceback" not in done.stderr
    pg_server.start()
    back = json.loads(run_arcana("recall", "kettle", "--agent", "alice", "--json", home=arcana_home, env=team).stdout)
    assert {r["content"] for r in back["results"]} == {"the private kettle is green", "the team kettle is blue"}


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_pool_show_while_the_server_stops_says_so_in_one_line(team, arcana_home, pg_server, mode):
    """`pool show` reports reachability (man/postgres.md): the server going away mid-read is
    ``reachable: false`` with a one-line reason naming the masked URL, not a crash."""
    done = stop_while_waiting(pg_server, arcana_home, team, "pool", "show", "team", "--json", mode=mode)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["reachable"], shown["entries"]) == (False, None)
    assert shown["error"].startswith(team["TEAM_PG"]) and "\n" not in shown["error"]
    pg_server.start()
    shown = run_arcana("pool", "show", "team", "--json", home=arcana_home, env=team)
    assert shown.returncode == 0 and json.loads(shown.stdout)["entries"] == 1  # positive control


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_remember_from_while_the_server_stops_fails_in_one_line_and_a_rerun_completes(
    team, arcana_home, pg_server, tmp_path, mode
):
    source = tmp_path / "team.jsonl"
    lines = [{"content": f"team fact number {i} about the WHARFCRANE", "id": f"fact-{i}"} for i in range(1200)]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    args = ("remember", "--from", str(source), "--agent", "alice", "--pool", "team", "--json")
    done = stop_while_waiting(pg_server, arcana_home, team, *args, mode=mode)
    assert done.returncode == STORAGE, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    pg_server.start()
    again = run_arcana(*args, home=arcana_home, env=team)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["written"] == 1200
    shown = json.loads(run_arcana("pool", "show", "team", "--json", home=arcana_home, env=team).stdout)
    assert shown["entries"] == 1201


def test_remember_from_stopped_between_batches_keeps_the_batches_done_and_a_rerun_adds_the_rest_once(
    team, arcana_home, pg_server, tmp_path
):
    """The file's first window (bulk_import.BATCH lines) commits; the second waits on a row an operator
    holds and the server stops under it: that batch is rolled back whole, and a re-run writes exactly
    what is missing."""
    lines = [{"content": f"team fact number {i} about the WHARFCRANE", "id": f"fact-{i}"} for i in range(1200)]
    held = dict(lines[1100], content="an older wording of fact 1100")
    done = run_arcana("remember", "--from", "-", "--agent", "alice", "--pool", "team", stdin=json.dumps(held) + "\n",
                      home=arcana_home, env=team)
    assert done.returncode == 0, done.stderr
    source = tmp_path / "team.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    args = ("remember", "--from", str(source), "--agent", "alice", "--pool", "team", "--json")
    done = stop_while_waiting(pg_server, arcana_home, team, *args,
                              lock="SELECT 1 FROM memories WHERE id = 'fact-1100' FOR UPDATE")
    assert done.returncode == STORAGE, done.stderr  # it was 0, with "written": 1200
    report = json.loads(done.stdout)
    assert (report["written"], report["not_stored"], report["accepted"]) == (1024, 176, {"pool:team": 1024})
    warning, error = done.stderr.strip().splitlines()
    assert "tier pool:team did not store the memories" in warning and "Traceback" not in done.stderr
    assert "connection was closed" in warning and "__aexit__" not in warning  # the server's reason, not the rollback's
    assert error.startswith("arcana: error: 176 of the lines not stored"), error
    pg_server.start()
    count = "SELECT count(*) FROM memories WHERE id LIKE 'fact-%'"
    assert pg_server.psql(count, database="arcana_test") == "1025"  # the first window and the held row, no part of the second
    again = run_arcana(*args, home=arcana_home, env=team)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["written"] == 176  # 175 new, fact-1100 reworded
    assert pg_server.psql(count, database="arcana_test") == "1200"
    inserts = pg_server.psql("SELECT count(*), count(DISTINCT memory_id) FROM memory_ledger WHERE op <> 'update' "
                             "AND memory_id LIKE 'fact-%'", database="arcana_test")
    assert inserts == "1200|1200"  # one insert each: nothing written twice
    assert pg_server.psql("SELECT content FROM memories WHERE id = 'fact-1100'", database="arcana_test") == lines[1100]["content"]


def test_remember_into_a_locked_pool_decides_within_the_read_budget_then_fails_in_one_line(team, arcana_home, pg_server):
    """A pool write is decided against the pool: on a server holding a lock that decision gives up
    within the tier's read budget (audited, the write added as given), so the command then waits
    one write budget, not two, and fails as a pool write did before pools were reconciled."""
    from memory.audit import AuditLog

    locker = Locker(pg_server)
    try:
        done = run_arcana("remember", "the team kettle is red now", "--agent", "alice", "--pool", "team",
                          home=arcana_home, env=team)
    finally:
        locker.close()
    assert done.returncode == STORAGE and "timed out" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    fallbacks = [e for e in AuditLog(arcana_home.audit_log).read() if e.get("event") == "reconcile_fallback"]
    assert [e["reason"].split(":")[0] for e in fallbacks] == ["TimeoutError"]
    # Positive control: unlocked, the same write is decided there, and ends the blue kettle.
    again = run_arcana("remember", "the team kettle is red now", "--agent", "alice", "--pool", "team", "--json",
                       home=arcana_home, env=team)
    assert again.returncode == 0 and json.loads(again.stdout)["decision"] == "update", again.stderr
