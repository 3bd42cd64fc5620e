"""A running `arcana mcp` server follows the agent's pool membership, through the official client.

A host keeps its server for as long as it runs; `arcana agent leave` stops the agent reading and
writing that pool at the server's next tool call, as it does on the CLI. A pool the agent is still
in (the control) keeps answering in the same session.
"""

from __future__ import annotations

import json

from mcp_client import call, session
from runner import arcana, keyword_only


def _two_pools(home) -> None:
    """Pools team and ops, alice and bob in both."""
    keyword_only(home)
    for pool in ("team", "ops"):
        arcana("pool", "create", pool)
        for name in ("alice", "bob"):
            arcana("agent", "join", name, pool)


def _remember(content: str, pool: str) -> str:
    return json.loads(arcana("remember", content, "--agent", "alice", "--pool", pool, "--json"))["id"]


async def test_leaving_a_pool_stops_a_running_server_reading_and_writing_it(arcana_home):
    _two_pools(arcana_home)
    _remember("standup moved to 10am", "team")
    _remember("standup runbook lives in the ops wiki", "ops")
    async with session("--agent", "bob") as client:
        failed, found = await call(client, "recall", query="standup", mode="keyword")
        assert not failed and {r["tier"] for r in found["results"]} == {"pool:team", "pool:ops"}
        arcana("agent", "leave", "bob", "team")
        secret = _remember("standup secret plan made after bob left", "team")
        ops = _remember("standup pager rota for ops", "ops")
        failed, found = await call(client, "recall", query="standup", mode="keyword")
        assert not failed and {r["tier"] for r in found["results"]} == {"pool:ops"}, found
        failed, listed = await call(client, "list")
        assert not failed and all(m["tier"] == "pool:ops" for m in listed["memories"]), listed
        failed, message = await call(client, "get", id=secret)
        assert failed and message.endswith(f"no memory with id '{secret}' among this agent's memories")
        failed, message = await call(client, "remember", content="bob still writes to team", pool="team")
        assert failed and "unknown pool 'team'" in message
        failed, got = await call(client, "get", id=ops)  # the control: a pool bob is still in
        assert not failed and got["tier"] == "pool:ops"
        failed, wrote = await call(client, "remember", content="bob writes to ops", pool="ops")
        assert not failed and wrote["accepted"] == ["pool:ops"]
    team = json.loads(arcana("memory", "list", "--pool", "team", "--json"))
    assert "bob still writes to team" not in {m["content"] for m in team} and len(team) == 2


async def test_a_vault_removed_and_added_again_under_its_name_answers_from_its_new_index(arcana_home, tmp_path):
    """`vault remove notes` then `vault add OTHER --name notes` between two tool calls: the running server
    kept the removed index open (its file unlinked) and went on answering its notes, not the new folder's."""
    keyword_only(arcana_home)
    arcana("agent", "create", "bob")
    old, new = tmp_path / "old-notes", tmp_path / "new-notes"
    old.mkdir(), new.mkdir()
    (old / "Heron.md").write_text("The heron nests by the weir.\n")
    (new / "Otter.md").write_text("The otter nests by the weir.\n")
    arcana("vault", "add", str(old), "--name", "notes", "--agent", "bob")
    arcana("vault", "index", "notes")
    async with session("--agent", "bob") as client:
        failed, found = await call(client, "recall", query="weir nests", mode="keyword")
        assert not failed and [r["content"] for r in found["results"]] == ["Heron\n\nThe heron nests by the weir."]
        arcana("vault", "remove", "notes", "--yes")
        arcana("vault", "add", str(new), "--name", "notes", "--agent", "bob")
        arcana("vault", "index", "notes")
        failed, found = await call(client, "recall", query="weir nests", mode="keyword")
        assert not failed and [r["content"] for r in found["results"]] == ["Otter\n\nThe otter nests by the weir."], found
        failed, found = await call(client, "vault_search", vault="notes", query="weir nests")
        assert not failed and [r["content"] for r in found["results"]] == ["Otter\n\nThe otter nests by the weir."], found


async def test_a_pool_removed_and_created_again_under_its_name_is_not_read_through_the_old_database(arcana_home):
    """`pool remove team`, `pool create team`, `agent join bob team` between two tool calls: the running
    server kept the old pool's database open (moved to the trash), went on recalling its memories and
    wrote into it, where no command reaches. It now drops that tier, as for a pool left; the new pool is
    reached after a restart, as a joined one is. The pool bob stays in (ops) is the control."""
    _two_pools(arcana_home)
    _remember("kettle rota of the old team", "team")
    _remember("kettle rota of ops", "ops")
    async with session("--agent", "bob") as client:
        failed, found = await call(client, "recall", query="kettle rota", mode="keyword")
        assert not failed and {r["tier"] for r in found["results"]} == {"pool:team", "pool:ops"}
        arcana("pool", "remove", "team", "--yes")
        arcana("pool", "create", "team")
        arcana("agent", "join", "bob", "team")
        failed, found = await call(client, "recall", query="kettle rota", mode="keyword")
        assert not failed and [r["content"] for r in found["results"]] == ["kettle rota of ops"], found
        failed, message = await call(client, "remember", content="bob writes to the trashed team", pool="team")
        assert failed and "unknown pool 'team'" in message
        failed, wrote = await call(client, "remember", content="bob writes to ops", pool="ops")
        assert not failed and wrote["accepted"] == ["pool:ops"]
    assert json.loads(arcana("memory", "list", "--pool", "team", "--json")) == []
    async with session("--agent", "bob") as client:  # after a restart: the new pool
        failed, wrote = await call(client, "remember", content="bob writes to the new team", pool="team")
        assert not failed and wrote["accepted"] == ["pool:team"]
    assert [m["content"] for m in json.loads(arcana("memory", "list", "--pool", "team", "--json"))] == ["bob writes to the new team"]


async def test_a_running_server_follows_config_and_the_agents_card_as_the_cli_does(arcana_home):
    """The server kept config.json and the card of its start: after `config set
    memory.max_content_bytes 4096` it stored 8,000 bytes `arcana remember` refuses, and after
    `agent set --weight` its recall ranked with the old weights, unlike `arcana recall`."""
    keyword_only(arcana_home)
    arcana("remember", "alice likes green tea", "--agent", "alice")
    arcana("remember", "alice drank tea on monday", "--agent", "alice", "--type", "episodic")

    def cli_recall() -> list[tuple[str, float]]:
        found = json.loads(arcana("recall", "tea", "--agent", "alice", "--mode", "keyword", "--json"))["results"]
        return [(r["content"], round(r["score"], 2)) for r in found]

    async with session("--agent", "alice") as client:

        async def mcp_recall() -> list[tuple[str, float]]:
            failed, found = await call(client, "recall", query="tea", mode="keyword")
            assert not failed, found
            return [(r["content"], round(r["score"], 2)) for r in found["results"]]

        assert await mcp_recall() == cli_recall()  # the control: the same answer before any change
        arcana("config", "set", "memory.max_content_bytes", "4096")
        arcana("agent", "set", "alice", "--weight", "semantic=0.1")
        failed, message = await call(client, "remember", content="x" * 8000)
        assert failed and "over the limit of 4,096 bytes (memory.max_content_bytes)" in message
        failed, stored = await call(client, "remember", content="y" * 4000)  # within the new limit
        assert not failed and stored["accepted"] == ["private"]
        changed = cli_recall()
        assert changed[0] == ("alice drank tea on monday", changed[0][1]) and ("alice likes green tea", 0.09) in changed
        assert await mcp_recall() == changed
    listed = json.loads(arcana("memory", "list", "--agent", "alice", "--json"))
    assert sorted(len(m["content"]) for m in listed) == [21, 25, 4000]  # nothing over the limit stored


async def test_a_running_server_reconciles_with_the_strategy_config_now_names(arcana_home):
    """After `config set memory.reconcile.strategy off` the server still ended the old fact with the
    new one, while `arcana remember` stored both; it now decides as the CLI does."""
    keyword_only(arcana_home)
    arcana("agent", "create", "alice")
    async with session("--agent", "alice") as client:
        failed, berlin = await call(client, "remember", content="I live in Berlin.")
        failed, lisbon = await call(client, "remember", content="I moved to Lisbon.")
        assert not failed and lisbon["decision"] == "update" and lisbon["supersedes"] == [berlin["id"]]  # the control
        arcana("config", "set", "memory.reconcile.strategy", "off")
        failed, porto = await call(client, "remember", content="I moved to Porto.")
        assert not failed and (porto["decision"], porto["supersedes"]) == ("add", []), porto
    madrid = json.loads(arcana("remember", "I moved to Madrid.", "--agent", "alice", "--json"))
    assert (madrid["decision"], madrid["supersedes"]) == ("add", [])
    current = {m["content"] for m in json.loads(arcana("memory", "list", "--agent", "alice", "--json"))}
    assert current == {"I moved to Lisbon.", "I moved to Porto.", "I moved to Madrid."}


async def test_a_running_server_follows_the_global_switch_as_recall_on_the_cli_does(arcana_home):
    """After `config set memory.global none` the server still recalled the global tier's memories,
    which `arcana recall` no longer reads; switched on again, both read it again. Alice's own memory
    is the control."""
    arcana("agent", "create", "alice")
    arcana("agent", "create", "bob")
    arcana("remember", "The office kettle descales on Fridays (GLOBALSWITCH).", "--agent", "bob", "--importance", "0.95")
    arcana("remember", "Alice keeps the GLOBALSWITCH key.", "--agent", "alice")

    def cli_recall() -> set[tuple[str, str]]:
        found = json.loads(arcana("recall", "GLOBALSWITCH", "--agent", "alice", "--mode", "keyword", "--json"))["results"]
        return {(r["content"], "+".join(r["tiers"])) for r in found}

    async with session("--agent", "alice") as client:

        async def mcp_recall() -> set[tuple[str, str]]:
            failed, found = await call(client, "recall", query="GLOBALSWITCH", mode="keyword")
            assert not failed, found
            return {(r["content"], r["tier"]) for r in found["results"]}

        both = {("The office kettle descales on Fridays (GLOBALSWITCH).", "global"), ("Alice keeps the GLOBALSWITCH key.", "private")}
        assert await mcp_recall() == cli_recall() == both
        arcana("config", "set", "memory.global", "none")
        assert await mcp_recall() == cli_recall() == {("Alice keeps the GLOBALSWITCH key.", "private")}
        arcana("config", "set", "memory.global", "vector")
        assert await mcp_recall() == cli_recall() == both


async def test_a_renamed_agent_deleted_under_a_running_server_is_named_by_its_new_name(arcana_home):
    keyword_only(arcana_home)
    arcana("agent", "create", "alice")
    async with session("--agent", "alice") as client:
        arcana("agent", "rename", "alice", "carol")
        failed, listed = await call(client, "list")
        assert not failed and listed["memories"] == []  # the control: still serving, as carol
        arcana("agent", "delete", "carol", "--yes")
        failed, message = await call(client, "list")
        assert failed and "agent 'carol' was deleted while this process was using it" in message, message
