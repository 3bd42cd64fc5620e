"""An agent's MCP `update` of a consolidated memory that carries a user's fact, through the official client.

A digest (or merge) carries the content of the memories it was made from; ending it reaches the
sources that say nothing it does not, copy and all (man/federation.md). An agent's new text never
ends a user-confirmed fact (man/mcp.md): when the digest carries one, the new text is held beside it,
as it is beside the fact itself. A digest of the agent's own turns only (the control, same store)
is still replaced.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from memory.agents import AgentRegistry
from memory.config import load_config
from memory.embedding.factory import build_gateway
from memory.runtime.assembly import federation_for_agent
from memory.types import ConfidenceSource, MemoryEntry, MemoryType
from mcp_client import call, session
from runner import arcana, keyword_only


async def _old_sessions(home) -> str:
    """ada's session g1 (the user's promoted fact and the agent's reply) and g2 (the agent's turns only),
    written as the library writes (an operator), then consolidated into one digest each."""
    keyword_only(home)
    for name in ("ada", "bob"):
        arcana("agent", "create", name)
    card = AgentRegistry(home).resolve("ada")
    federation = await federation_for_agent(card, home=home, embedding=build_gateway(load_config(home.config_path).embedding, home))
    turns = [
        ("g1", "Ada: the launch code word is heliotrope.", ConfidenceSource.USER_CONFIRMED, 0.95),
        ("g1", "Assistant: noted, I will keep the sunrise painting.", ConfidenceSource.AGENT, 0.5),
        ("g2", "Assistant: the pottery class meets on Tuesday.", ConfidenceSource.AGENT, 0.5),
        ("g2", "Assistant: the kiln fires at noon.", ConfidenceSource.AGENT, 0.5),
    ]
    try:
        for minute, (session_id, content, source, importance) in enumerate(turns):
            at = datetime(2023, 5, 8 if session_id == "g1" else 9, 10, minute, tzinfo=UTC)
            entry = MemoryEntry(agent_id=card.id, type=MemoryType.EPISODIC, content=content, importance=importance,
                                confidence_source=source, source_session_id=session_id, created_at=at, updated_at=at)
            report = await federation.write(entry, reconcile=False)
            assert report.accepted == (["private", "global"] if source is ConfidenceSource.USER_CONFIRMED else ["private"])
            if source is ConfidenceSource.USER_CONFIRMED:
                users = entry.id
    finally:
        await federation.aclose()
    arcana("consolidate", "--agent", "ada")
    return users


def _bob_recalls(query: str) -> list[str]:
    return [r["content"] for r in json.loads(arcana("recall", query, "--agent", "bob", "--mode", "keyword", "--json"))["results"]]


async def test_an_agents_new_text_for_a_digest_carrying_a_users_fact_is_held_beside_it(arcana_home):
    users = await _old_sessions(arcana_home)
    assert _bob_recalls("heliotrope") == ["Ada: the launch code word is heliotrope."]
    listed = json.loads(arcana("memory", "list", "--agent", "ada", "--json"))
    digest = next(m["id"] for m in listed if "heliotrope" in m["content"])
    control = next(m["id"] for m in listed if "pottery" in m["content"])
    async with session("--agent", "ada") as client:
        failed, answer = await call(client, "update", id=digest, content="The launch code word was changed to marigold.")
        assert not failed, answer
        assert answer["held_beside"] == digest and answer["superseded"] is False
        failed, answer = await call(client, "update", id=control, content="The pottery class moved to Thursday.")
        assert not failed and answer["superseded"] is True and answer["held_beside"] is None  # the control is replaced
        failed, found = await call(client, "recall", query="heliotrope", mode="keyword")
        assert not failed and digest in [r["id"] for r in found["results"]]  # still current for ada
    assert _bob_recalls("heliotrope") == ["Ada: the launch code word is heliotrope."]  # the user's fact, still shared
    ledger = arcana("memory", "history", users, "--global", "--json")
    assert [r["op"] for r in json.loads(ledger)] == ["insert"]


async def test_an_agents_forget_of_a_digest_carrying_a_users_fact_is_refused(arcana_home):
    """Consolidation archived the user's promoted fact into ada's digest, which now answers its words; an
    MCP forget of the digest withdrew the fact's global copy too, so bob lost what the user said. Refused
    now, nothing written; the digest of the agent's own turns (the control, same store) is forgotten."""
    users = await _old_sessions(arcana_home)
    listed = json.loads(arcana("memory", "list", "--agent", "ada", "--json"))
    digest = next(m["id"] for m in listed if "heliotrope" in m["content"])
    control = next(m["id"] for m in listed if "pottery" in m["content"])
    async with session("--agent", "ada") as client:
        failed, message = await call(client, "forget", id=digest)
        assert failed and "carries the user's own words" in message and "\n" not in message, message
        assert f"arcana memory forget {digest} --agent ada" in message, message
        failed, answer = await call(client, "forget", id=control)
        assert not failed and answer["changed"], answer
        failed, found = await call(client, "recall", query="heliotrope", mode="keyword")
        assert not failed and digest in [r["id"] for r in found["results"]]
    assert _bob_recalls("heliotrope") == ["Ada: the launch code word is heliotrope."]  # still shared
    assert [r["op"] for r in json.loads(arcana("memory", "history", users, "--global", "--json"))] == ["insert"]
    assert "pottery" not in json.dumps(json.loads(arcana("memory", "list", "--agent", "ada", "--json")))
