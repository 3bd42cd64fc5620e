"""A private store another process holds a write transaction on, past the tier's write budget: the
write fails in one line saying what to do, exit 5, and nothing is lost; once it is released the same
command stores. Real processes on both sides."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from federation_faults import locked_by_another_process
from runner import ARCANA, keyword_only, run_arcana


def test_a_write_timed_out_on_a_locked_store_says_what_to_do(arcana_home):
    keyword_only(arcana_home)
    assert run_arcana("agent", "create", "ada", home=arcana_home).returncode == 0
    assert run_arcana("remember", "Tea is served at four.", "-a", "ada", home=arcana_home).returncode == 0
    connections = arcana_home.root / "connections"
    connections.mkdir(exist_ok=True)
    (connections / "memory-adapters.json").write_text(json.dumps({"private": {"write_timeout_ms": 500}}))
    ada = json.loads(run_arcana("agent", "show", "ada", "--json", home=arcana_home).stdout)["id"]

    with locked_by_another_process(arcana_home.agent_db(ada)):
        done = run_arcana("remember", "The kettle is blue.", "-a", "ada", home=arcana_home)
        assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
        # It said only '...nothing was lost silently: timed out'.
        assert "timed out; another process may be writing this store: run again once it is done" in done.stderr
        assert "write_timeout_ms" in done.stderr
        done = run_arcana("recall", "tea", "-a", "ada", home=arcana_home)  # reads go on meanwhile (WAL)
        assert done.returncode == 0 and "Tea is served" in done.stdout

    assert run_arcana("remember", "The kettle is blue.", "-a", "ada", home=arcana_home).returncode == 0
    done = run_arcana("memory", "list", "-a", "ada", "--json", home=arcana_home)
    assert sorted(m["content"] for m in json.loads(done.stdout)) == ["Tea is served at four.", "The kettle is blue."]


def _ada_with_a_memory(home) -> tuple[str, str]:
    """ada (keyword only) with one memory to forget and a control memory; (her id, the memory's id)."""
    keyword_only(home)
    assert run_arcana("agent", "create", "ada", home=home).returncode == 0
    assert run_arcana("remember", "Tea is served at four.", "-a", "ada", home=home).returncode == 0
    done = run_arcana("remember", "The kettle is blue.", "-a", "ada", "--json", home=home)
    ada = json.loads(run_arcana("agent", "show", "ada", "--json", home=home).stdout)["id"]
    return ada, json.loads(done.stdout)["id"]


def _live(home) -> list[str]:
    done = run_arcana("memory", "list", "-a", "ada", "--json", home=home)
    return sorted(m["content"] for m in json.loads(done.stdout))


@pytest.mark.parametrize("how", ["option", "env"])
def test_a_lock_wait_set_for_the_command_bounds_the_wait_for_another_writer(arcana_home, how):
    """An operator edit has no tier budget: it waited SQLite's whole 30 s for a store another process
    held, and a script or cron job could not say otherwise. `--lock-wait` (ARCANA_LOCK_WAIT) bounds it:
    exit 5 in one line once it passes, nothing changed; released, the same command goes through."""
    ada, kettle = _ada_with_a_memory(arcana_home)
    args, env = (["--lock-wait", "0.5"], None) if how == "option" else ([], {"ARCANA_LOCK_WAIT": "0.5"})
    with locked_by_another_process(arcana_home.agent_db(ada)):
        started = time.monotonic()
        done = run_arcana(*args, "memory", "forget", kettle, "-a", "ada", home=arcana_home, env=env)
        took = time.monotonic() - started
        assert done.returncode == 5 and done.stderr.count("\n") == 1, done.stderr
        assert "locked by another writer" in done.stderr and "--lock-wait" in done.stderr
        assert took < 10, took  # the 30 s default would still be waiting
    assert _live(arcana_home) == ["Tea is served at four.", "The kettle is blue."]  # nothing changed
    done = run_arcana(*args, "memory", "forget", kettle, "-a", "ada", home=arcana_home, env=env)
    assert done.returncode == 0, done.stderr
    assert _live(arcana_home) == ["Tea is served at four."]  # the control stays


def test_by_default_a_command_waits_out_a_lock_held_briefly(arcana_home):
    """The default still waits: another process holds ada's store for 1.5 s while `memory forget`
    runs, then lets go, and the command succeeds (exit 0), having waited for it."""
    ada, kettle = _ada_with_a_memory(arcana_home)
    with locked_by_another_process(arcana_home.agent_db(ada)):
        started = time.monotonic()
        command = subprocess.Popen(
            [*ARCANA, "memory", "forget", kettle, "-a", "ada"], env={**os.environ, "ARCANA_HOME": str(arcana_home.root)},
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        time.sleep(1.5)
        assert command.poll() is None  # still waiting for the lock
    out, err = command.communicate(timeout=60)
    assert command.returncode == 0, err
    assert time.monotonic() - started >= 1.5
    assert _live(arcana_home) == ["Tea is served at four."]


@pytest.mark.parametrize("value", ["-1", "nan", "soon", "3601"])
def test_a_lock_wait_that_is_no_number_of_seconds_is_a_usage_error(arcana_home, value):
    keyword_only(arcana_home)
    done = run_arcana("--lock-wait", value, "agent", "list", home=arcana_home)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--lock-wait" in done.stderr, done.stderr
    done = run_arcana("agent", "list", home=arcana_home, env={"ARCANA_LOCK_WAIT": value})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "ARCANA_LOCK_WAIT" in done.stderr, done.stderr
    assert run_arcana("--lock-wait", "0", "agent", "list", home=arcana_home).returncode == 0  # control: 0 is no wait
