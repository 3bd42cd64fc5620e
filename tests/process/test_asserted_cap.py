"""Issue 21 item 6: an agent's claim is stored capped, whichever way it comes in.

The federation applies :func:`memory.promotion.as_claimed` to every write:
confidence at most the agent's ``agent_confidence_cap``, importance at most
0.89, never pinned. The user's own writes (the controls) pass as given.
"""

from __future__ import annotations

import json

from memory.runtime.agent import build_runtime_with_memory
from memory.types import ConfidenceSource, MemoryEntry
from mcp_client import call, session
from runner import arcana, keyword_only


def shown(id: str, agent: str = "ada") -> dict:
    return json.loads(arcana("memory", "show", id, "--agent", agent, "--json"))


async def test_mcp_remember_is_capped_at_the_agents_cap_and_the_user_is_not(arcana_home):
    keyword_only(arcana_home)
    arcana("remember", "fact CAPHERON the user said it", "--agent", "ada", "--importance", "0.95")
    async with session("--agent", "ada") as client:
        failed, stored = await call(client, "remember", content="fact CAPHERON the agent claims it", importance=1.0)
        assert not failed
        failed, context = await call(client, "context", query="CAPHERON")
    claim = shown(stored["id"])
    assert (claim["confidence"], claim["importance"], claim["confidence_source"]) == (0.7, 0.89, "agent")
    user = [r for r in json.loads(arcana("recall", "CAPHERON", "--agent", "ada", "--json"))["results"]
            if r["content"].endswith("user said it")][0]
    assert (shown(user["id"])["confidence"], shown(user["id"])["importance"]) == (1.0, 0.95)  # control
    assert "agent 0.70" in json.dumps(context) and "agent 1.00" not in json.dumps(context)

    arcana("agent", "set", "ada", "--extraction", "agent_confidence_cap=0.5")  # the card's own cap
    async with session("--agent", "ada") as client:
        failed, again = await call(client, "remember", content="fact CAPHERON a second claim")
    assert not failed and shown(again["id"])["confidence"] == 0.5


async def test_a_library_write_through_the_federation_is_capped_and_unpinned(arcana_home):
    keyword_only(arcana_home)
    arcana("agent", "create", "ada")
    card, federation = await build_runtime_with_memory(arcana_home, "ada")
    try:
        claim = MemoryEntry(agent_id=card.id, content="the agent pins its own claim", importance=1.0,
                            confidence=1.0, confidence_source=ConfidenceSource.INFERRED, pinned=True)
        user = MemoryEntry(agent_id=card.id, content="the user pins a fact about rowing", importance=1.0, pinned=True)
        await federation.write(claim)
        await federation.write(user)
    finally:
        await federation.aclose()
    stored = shown(claim.id)
    assert (stored["confidence"], stored["importance"], stored["pinned"]) == (0.7, 0.89, False)
    control = shown(user.id)
    assert (control["confidence"], control["importance"], control["pinned"]) == (1.0, 1.0, True)
