"""What an agent may do to memories that are not its own (issue 20, items 5-7): a write never
takes over another agent's shared row, an agent-asserted restatement never promotes, and only
visible memories reach the global tier. Each attack sits beside the legitimate write it must
not break."""

from __future__ import annotations

import asyncio
import json

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.promotion import ASSERTED_IMPORTANCE_CAP, PROMOTION_THRESHOLD
from memory.runtime.assembly import federation_for_agent
from memory.types import Audience, ConfidenceSource, MemoryEntry


def ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


async def _global(home, entry_id):
    store = SQLiteAdapter(home.global_db)
    try:
        return await store.get(entry_id, audience=Audience.OPERATOR, include_archived=True)
    finally:
        await store.aclose()


async def _private(home, name, entry_id):
    store = SQLiteAdapter.for_agent(AgentRegistry(home).resolve(name).id, home=home)
    try:
        return await store.get(entry_id, audience=Audience.OPERATOR, include_archived=True)
    finally:
        await store.aclose()


def test_reusing_another_agents_promoted_id_does_not_rewrite_the_global_copy(cli, no_embedder, tmp_path):
    home = no_embedder
    for name in ("ada", "bob"):
        assert cli("agent", "create", name).exit_code == 0
    said = ok(cli("remember", "the heronvault door code is 4411", "--agent", "ada", "--importance", "1.0", "--json"))
    assert said["accepted"] == ["private", "global"]
    forged = tmp_path / "forged.jsonl"
    forged.write_text(json.dumps({"id": said["id"], "content": "the heronvault door code is 0000", "importance": 1.0}) + "\n")
    assert cli("remember", "--from", str(forged), "--agent", "bob", "--no-reconcile").exit_code == 0
    copy = asyncio.run(_global(home, said["id"]))
    ada_id = AgentRegistry(home).resolve("ada").id
    assert copy.agent_id == ada_id and copy.content == "the heronvault door code is 4411"
    # positive control: the owner's own update and forget still reach her copy
    assert cli("memory", "set", said["id"], "--agent", "ada", "--content", "the heronvault door code is 5522").exit_code == 0
    assert asyncio.run(_global(home, said["id"])).content == "the heronvault door code is 5522"
    assert cli("memory", "forget", said["id"], "--agent", "ada").exit_code == 0
    assert asyncio.run(_global(home, said["id"])).archived


async def _restate(home, name, content, source, times):
    card = AgentRegistry(home).resolve(name)
    federation = await federation_for_agent(card, home=home)
    try:
        for _ in range(times):
            await federation.write(MemoryEntry(agent_id=card.id, content=content, confidence_source=source))
    finally:
        await federation.aclose()


def test_an_agent_restating_a_user_fact_never_promotes_it(cli, no_embedder):
    home = no_embedder
    assert cli("agent", "create", "ada").exit_code == 0
    kept = ok(cli("remember", "the office wifi password is hunter2", "--agent", "ada", "--importance", "0.6", "--json"))
    asyncio.run(_restate(home, "ada", "the office wifi password is hunter2", ConfidenceSource.AGENT, 8))
    row = asyncio.run(_private(home, "ada", kept["id"]))
    assert row.access_count >= 8  # counted as accesses
    assert row.importance == ASSERTED_IMPORTANCE_CAP < PROMOTION_THRESHOLD
    assert asyncio.run(_global(home, kept["id"])) is None
    # positive control: the user restating it herself promotes it
    asyncio.run(_restate(home, "ada", "the office wifi password is hunter2", ConfidenceSource.USER_CONFIRMED, 1))
    assert asyncio.run(_private(home, "ada", kept["id"])).importance >= PROMOTION_THRESHOLD
    assert asyncio.run(_global(home, kept["id"])) is not None


def test_an_agent_restating_its_own_claim_stays_below_the_cap(cli, no_embedder):
    home = no_embedder
    assert cli("agent", "create", "ada").exit_code == 0
    asyncio.run(_restate(home, "ada", "ok, noted.", ConfidenceSource.AGENT, 12))
    listed = ok(cli("memory", "list", "--agent", "ada", "--json"))
    rows = listed["memories"] if isinstance(listed, dict) else listed
    assert len(rows) == 1 and rows[0]["importance"] <= ASSERTED_IMPORTANCE_CAP


def test_private_and_hidden_memories_are_not_promoted(cli, no_embedder):
    home = no_embedder
    assert cli("agent", "create", "ada").exit_code == 0
    held = {
        v: ok(cli("remember", f"the heron{v} fact is secret", "--agent", "ada", "--importance", "0.95",
                  "--visibility", v, "--json"))
        for v in ("private", "hidden")
    }
    shown = ok(cli("remember", "the heronvisible fact is shared", "--agent", "ada", "--importance", "0.95", "--json"))
    assert shown["accepted"] == ["private", "global"]  # positive control
    for said in held.values():
        assert said["accepted"] == ["private"]
        assert asyncio.run(_global(home, said["id"])) is None
    exported = cli("export", "--global")
    assert exported.exit_code == 0, exported.output
    assert "heronvisible" in exported.stdout and "secret" not in exported.stdout
    # hiding a promoted memory withdraws its copy
    assert cli("memory", "set", shown["id"], "--agent", "ada", "--visibility", "hidden").exit_code == 0
    assert asyncio.run(_global(home, shown["id"])) is None
