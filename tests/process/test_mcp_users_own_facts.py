"""An agent over MCP never changes the user's own facts in place, through the official client.

The user's statements (`arcana remember`, and notes brought in by `remember --from`) are changed only
by the user or an operator. An agent's `update` replaced their tags, the promoted global copy
following, so every agent recalled the user's words under the agent's keywords; its `forget`
archived them, copy and all, so a prompt-injected agent could make what the user said disappear.
Both are a one-line tool error now, and nothing is written; new content is still the agent's own
claim, held beside the fact. The agent's own claims in the same store (the controls) stay fully
editable: tags, importance either way, forget.
"""

from __future__ import annotations

import json

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.runtime.sessions import link_carried
from memory.types import ConfidenceSource, MemoryEntry, MemoryType
from mcp_client import call, session
from runner import arcana, keyword_only


def _shown(memory_id: str, *where: str) -> dict:
    return json.loads(arcana("memory", "show", memory_id, *where, "--json"))


def _ledger(memory_id: str, *where: str) -> list[str]:
    return [r["op"] for r in json.loads(arcana("memory", "history", memory_id, *where, "--json"))]


async def _summary_quoting(home, fact: str) -> str:
    """ada's session summary (the agent's own, derived) carrying the user's fact, linked as a session
    close links a summary to the facts its session stored."""
    agent_id = AgentRegistry(home).resolve("ada").id
    store = SQLiteAdapter.for_agent(agent_id, home=home, actor="test")
    summary = MemoryEntry(agent_id=agent_id, type=MemoryType.EPISODIC, importance=0.5,
                          content="Session summary: fact ORIOLE the user keeps two hives of bees, we talked honey",
                          tags=["session-summary", "derived"], confidence_source=ConfidenceSource.AGENT, confidence=0.7)
    try:
        await store.write(summary)
        await link_carried(store, summary.id, [fact])
    finally:
        await store.aclose()
    return summary.id


def _recalled(query: str, agent: str) -> set[str]:
    found = json.loads(arcana("recall", query, "--agent", agent, "--mode", "keyword", "--json"))["results"]
    return {r["content"] for r in found}


async def test_an_agent_neither_retags_nor_forgets_nor_reweighs_the_users_own_facts(arcana_home, tmp_path):
    keyword_only(arcana_home)
    for name in ("ada", "bob"):
        arcana("agent", "create", name)
    said = json.loads(arcana("remember", "fact ORIOLE the user keeps two hives of bees", "--agent", "ada",
                             "--importance", "0.95", "--tag", "home", "--json"))["id"]
    notes = tmp_path / "notes.jsonl"
    notes.write_text(json.dumps({"content": "fact ORIOLE the user's notes say the boiler is gas", "importance": 0.5,
                                 "tags": ["house"]}) + "\n")
    arcana("remember", "--from", str(notes), "--agent", "ada")
    imported = next(m["id"] for m in json.loads(arcana("memory", "list", "--agent", "ada", "--json")) if "boiler" in m["content"])
    summary = await _summary_quoting(arcana_home, said)
    users = {said: ("ada's store and its global copy", ["home"], 0.95), imported: ("ada's store", ["house"], 0.5)}
    before = {memory_id: _ledger(memory_id, "--agent", "ada") for memory_id in users}
    both = {"fact ORIOLE the user keeps two hives of bees", "fact ORIOLE the user's notes say the boiler is gas"}
    assert _recalled("ORIOLE", "ada") == both | {"Session summary: fact ORIOLE the user keeps two hives of bees, we talked honey"}
    assert _recalled("ORIOLE", "bob") == {"fact ORIOLE the user keeps two hives of bees"}  # promoted

    async with session("--agent", "ada") as client:
        failed, claim = await call(client, "remember", content="fact ORIOLE the agent guessed the bees are Italian",
                                   importance=0.5, tags=["guess"])
        assert not failed, claim
        for memory_id in users:
            for change in ({"tags": ["crypto", "giveaway", "bitcoin"]}, {"tags": ["home", "house"]},
                           {"importance": 0.89}, {"importance": 0.1}):
                failed, message = await call(client, "update", id=memory_id, **change)
                assert failed and "\n" not in message, (memory_id, change, message)
                assert "the user's own" in message and f"arcana memory set {memory_id}" in message, message
            failed, message = await call(client, "forget", id=memory_id)
            assert failed and "\n" not in message, message
            assert "the user's own" in message and f"arcana memory forget {memory_id} --agent ada" in message, message
        # the agent may still say its own words beside the user's: a claim held beside the fact
        failed, beside = await call(client, "update", id=said, content="fact ORIOLE the user keeps three hives of bees")
        assert not failed and beside["held_beside"] == said and beside["superseded"] is False, beside
        failed, beside = await call(client, "update", id=imported, content="fact ORIOLE the boiler runs on heat pump now")
        assert not failed and beside["held_beside"] == imported and beside["superseded"] is False, beside

        # the controls: the agent's own claim, in the same store, changes every way
        failed, retagged = await call(client, "update", id=claim["id"], tags=["bees", "guess"])
        assert not failed and retagged["tags"] == ["bees", "guess"] and retagged["changed"], retagged
        failed, raised = await call(client, "update", id=claim["id"], importance=0.8)
        assert not failed and raised["importance"] == 0.8 and raised["changed"], raised
        failed, lowered = await call(client, "update", id=claim["id"], importance=0.2)
        assert not failed and lowered["importance"] == 0.2, lowered
        failed, gone = await call(client, "forget", id=claim["id"])
        assert not failed and gone["archived"] and gone["changed"], gone
        # and so does its session summary quoting the user's fact: the fact stands on its own
        failed, retagged = await call(client, "update", id=summary, tags=["session-summary", "derived", "bees"])
        assert not failed and retagged["changed"], retagged
        failed, gone = await call(client, "forget", id=summary)
        assert not failed and gone["changed"], gone

    for memory_id, (where, tags, importance) in users.items():
        shown = _shown(memory_id, "--agent", "ada")
        assert (shown["tags"], shown["importance"], shown["archived"]) == (tags, importance, False), (where, shown)
        assert _ledger(memory_id, "--agent", "ada") == before[memory_id], where  # nothing written
    copy = _shown(said, "--global")
    assert (copy["tags"], copy["archived"]) == (["home"], False), copy
    assert _ledger(said, "--global") == ["insert"]
    claims = {"fact ORIOLE the user keeps three hives of bees", "fact ORIOLE the boiler runs on heat pump now"}
    assert _recalled("ORIOLE", "ada") == both | claims  # the claim and the summary forgotten
    assert _recalled("ORIOLE", "bob") == {"fact ORIOLE the user keeps two hives of bees"}
    assert _recalled("crypto", "bob") == set()
