"""An agent's tags never set or clear the `derived` mark over MCP.

`derived` is Arcana's own provenance mark (a turn's echo, a session summary): a derived memory
weighs half in recall, is pruned before the facts it was made from, and is never taken for the
user's own statement. `update` replaced tags as given, so an agent could tag the user's fact
`derived` (halving it in every recall: an agent lowering a user's fact, which its importance
guard refuses) or strip the mark from a session summary (ranked and kept as a fact).
"""

from __future__ import annotations

import json

from mcp_client import call, seed, session
from runner import arcana, keyword_only


def shown(memory_id: str) -> dict:
    return json.loads(arcana("memory", "show", memory_id, "--agent", "ada", "--json"))


async def test_an_agent_neither_adds_nor_removes_the_derived_mark(arcana_home):
    keyword_only(arcana_home)
    _, ada = await seed(arcana_home, "ada", [
        {"content": "heron fact the user keeps bees", "tags": ["home"]},
        {"content": "summary of a session about the bees", "tags": ["session-summary", "derived"],
         "confidence_source": "agent", "confidence": 0.7},
        {"content": "claim the bees are Italian", "tags": ["guess"], "confidence_source": "agent", "confidence": 0.7},
    ])
    fact, summary, claim = ada["heron"], ada["summary"], ada["claim"]
    async with session("--agent", "ada") as client:
        for memory_id, tags in ((fact, ["home", "derived"]), (fact, ["#derived"]), (summary, ["session-summary"])):
            failed, message = await call(client, "update", id=memory_id, tags=tags)
            assert failed and "derived" in message and "\n" not in message, (tags, message)
        failed, message = await call(client, "remember", content="the bees swarmed in May", tags=["derived"])
        assert failed and "derived" in message, message
        failed, message = await call(client, "update", id=fact, content="the user keeps two hives of bees",
                                     tags=["derived"])
        assert failed and "derived" in message, message
        # the controls: the agent's own claim's other tags change (the user's fact's tags are the
        # user's: tests/process/test_mcp_users_own_facts.py), and a derived memory keeps its mark
        failed, changed = await call(client, "update", id=claim, tags=["guess", "garden"])
        assert not failed and changed["tags"] == ["guess", "garden"], changed
        failed, kept = await call(client, "update", id=summary, tags=["session-summary", "derived", "bees"])
        assert not failed and kept["tags"] == ["session-summary", "derived", "bees"], kept
        failed, stored = await call(client, "remember", content="the bees swarmed in May", tags=["bees"])
        assert not failed, stored
    assert shown(fact)["tags"] == ["home"]
    assert shown(claim)["tags"] == ["guess", "garden"]
    assert shown(summary)["tags"] == ["session-summary", "derived", "bees"]
    listed = json.loads(arcana("memory", "list", "--agent", "ada", "--json"))
    assert all("derived" not in m["tags"] for m in listed if m["id"] != summary), listed
