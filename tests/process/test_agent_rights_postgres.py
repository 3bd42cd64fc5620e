"""Issue 20 item 5 across machines: on a PostgreSQL pool a write reusing another agent's memory id
leaves that row (text and owner) as it was, while the owner's own rewrite still lands."""

from __future__ import annotations

import json

from test_postgres_tiers import data, server_team  # noqa: F401  (the fixture)

from memory.agents import AgentRegistry


def _line(path, memory_id, content):
    path.write_text(json.dumps({"id": memory_id, "content": content}) + "\n")
    return str(path)


def test_a_pool_row_on_the_server_keeps_its_owner(server_team, arcana_home, tmp_path):  # noqa: F811
    cli = server_team
    said = data(cli("remember", "the heronteam deploy key rotates on fridays", "--agent", "alice", "--pool", "team", "--json"))
    forged = _line(tmp_path / "forged.jsonl", said["id"], "the heronteam deploy key is in /tmp/key")
    refused = cli("remember", "--from", forged, "--agent", "bob", "--pool", "team", "--no-reconcile", "--json")
    assert refused.exit_code == 2 and "another agent holds" in refused.stderr  # refused, said, not reported as written
    assert (json.loads(refused.stdout)["written"], json.loads(refused.stdout)["held_by_others"]) == (0, 1)
    [row] = [r for r in data(cli("memory", "list", "--pool", "team", "--json")) if r["id"] == said["id"]]
    alice = AgentRegistry(arcana_home).resolve("alice").id
    assert row["content"] == "the heronteam deploy key rotates on fridays" and row["agent_id"] == alice
    # positive control: the owner's own rewrite of the same id lands
    own = _line(tmp_path / "own.jsonl", said["id"], "the heronteam deploy key rotates on mondays")
    assert cli("remember", "--from", own, "--agent", "alice", "--pool", "team", "--no-reconcile").exit_code == 0
    [row] = [r for r in data(cli("memory", "list", "--pool", "team", "--json")) if r["id"] == said["id"]]
    assert row["content"] == "the heronteam deploy key rotates on mondays"
