"""Issue 24: `arcana run` consolidates an agent's store in the background once it has grown past
another multiple of `memory.consolidate_every`, through the real CLI and a loopback model server."""

from __future__ import annotations

import json

import pytest

OLD = [  # an old session, aged out: what a consolidation digests
    {"content": "Caroline: I went to an LGBTQ support group.", "type": "episodic", "session": "s1", "created_at": "2023-05-08T10:00:00Z"},
    {"content": "Caroline: I want to study counseling next year.", "type": "episodic", "session": "s1", "created_at": "2023-05-08T10:01:00Z"},
    {"content": "Melanie: I painted a sunrise over the lake.", "type": "episodic", "session": "s1", "created_at": "2023-05-08T10:02:00Z"},
]


def home_with(cli, model_server, tmp_path, every: int) -> None:
    assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", model_server.url, "--model", "tiny", "--default").exit_code == 0
    assert cli("config", "set", "memory.consolidate_every", str(every)).exit_code == 0
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in OLD))
    assert cli("remember", "--from", str(path), "--agent", "ada", "--no-reconcile").exit_code == 0


def current(cli) -> list[dict]:
    return json.loads(cli("memory", "list", "--agent", "ada", "--json").stdout)


@pytest.mark.usefixtures("no_embedder")
def test_a_run_that_grows_the_store_past_the_threshold_consolidates_it(cli, model_server, tmp_path, arcana_home):
    home_with(cli, model_server, tmp_path, every=4)  # 3 stored; the run's writes cross 4
    ran = cli("run", "ada", "I prefer tea over coffee", "--json")
    assert ran.exit_code == 0, ran.output
    contents = [m["content"] for m in current(cli)]
    assert not any(c.startswith("Caroline:") for c in contents)  # the old turns were digested...
    assert any("support group" in c and c.startswith("On 8 May 2023") for c in contents)  # ...into one memory
    events = [json.loads(line) for line in arcana_home.audit_log.read_text().splitlines()]
    assert any(e["event"] == "consolidate" and e.get("trigger") == "run" for e in events)


@pytest.mark.usefixtures("no_embedder")
def test_below_the_threshold_or_switched_off_a_run_consolidates_nothing(cli, model_server, tmp_path):
    home_with(cli, model_server, tmp_path, every=0)
    assert cli("run", "ada", "I prefer tea over coffee").exit_code == 0
    assert sum(m["content"].startswith("Caroline:") for m in current(cli)) == 2
    assert cli("config", "set", "memory.consolidate_every", "100").exit_code == 0
    assert cli("run", "ada", "I prefer green tea").exit_code == 0
    assert sum(m["content"].startswith("Caroline:") for m in current(cli)) == 2
