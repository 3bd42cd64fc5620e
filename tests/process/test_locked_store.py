"""A private store another process holds a write transaction on, past the tier's write budget: the
write fails in one line saying what to do, exit 5, and nothing is lost; once it is released the same
command stores. Real processes on both sides."""

from __future__ import annotations

import json

from federation_faults import locked_by_another_process
from runner import keyword_only, run_arcana


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
