"""An agent's own memory answers its recall as its own store admits it, whichever tier holds a copy.

`arcana consolidate` archives a restatement into the memory that says more, and leaves the copy
its promotion made in the global tier as it is (the global tier is consolidated on its own). The
agent's own recall then answered with the archived restatement, from the global tier, beside the
merge that carries it: `recall`, `context` and the MCP tools alike.
"""

from __future__ import annotations

import json

from mcp_client import call, session
from runner import arcana, cli_data


def test_an_archived_source_does_not_answer_its_agent_through_its_global_copy(cli, arcana_home):
    source = cli_data(cli, "remember", "I like black coffee.", "--agent", "ada", "--importance", "0.95", "--no-reconcile")
    assert "global" in source["accepted"], source
    keeper = cli_data(cli, "remember", "I like black coffee in the morning.", "--agent", "ada", "--no-reconcile")
    done = cli_data(cli, "consolidate", "--agent", "ada")
    assert done["agents"][0]["merged"] == 1, done
    assert [c["id"] for c in cli_data(cli, "memory", "list", "--global")] == [source["id"]]  # the copy stays live

    recalled = [r["id"] for r in cli_data(cli, "recall", "coffee", "--agent", "ada")["results"]]
    assert keeper["id"] in recalled  # control: the merge answers
    assert source["id"] not in recalled
    assert source["id"] not in cli_data(cli, "context", "coffee", "--agent", "ada")["ids"]
    # Another agent has no store of its own holding it: the global copy answers it, as before.
    assert cli("agent", "create", "bob").exit_code == 0
    assert source["id"] in [r["id"] for r in cli_data(cli, "recall", "coffee", "--agent", "bob")["results"]]
    # As of a time before the merge, the source itself answered (its own store says so), once.
    before = cli_data(cli, "memory", "show", source["id"], "--agent", "ada")["created_at"]
    then = [r["id"] for r in cli_data(cli, "recall", "coffee", "--agent", "ada", "--as-of", before)["results"]]
    assert then == [source["id"]], then


async def test_the_mcp_get_of_an_archived_source_does_not_read_its_global_copy(arcana_home):
    source = json.loads(arcana("remember", "I like black coffee.", "--agent", "ada", "--importance", "0.95",
                               "--no-reconcile", "--json"))["id"]
    keeper = json.loads(arcana("remember", "I like black coffee in the morning.", "--agent", "ada",
                               "--no-reconcile", "--json"))["id"]
    arcana("consolidate", "--agent", "ada")
    arcana("agent", "create", "bob")
    async with session("--agent", "ada") as client:
        failed, answer = await call(client, "get", id=keeper)
        assert not failed and answer["id"] == keeper  # control: the merge is read
        failed, answer = await call(client, "get", id=source)
        assert failed and "no memory with id" in answer, answer
    async with session("--agent", "bob") as client:  # no store of bob's holds it: the copy is read
        failed, answer = await call(client, "get", id=source)
        assert not failed and answer["tier"] == "global", answer
