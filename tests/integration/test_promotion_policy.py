"""Only the user's own statements and operator writes reach the global tier (issue 9,
item 2): a model or an agent asserting importance 1.0 stays private, on every
write path, and is stored capped below the promotion threshold."""

from __future__ import annotations

import asyncio
import json

import pytest
from model_server import LoopbackModelServer

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.extraction.extractors import EXTRACTION_INSTRUCTIONS
from memory.federation.federation import MemoryFederation
from memory.federation.router import MemoryRouter
from memory.promotion import ASSERTED_IMPORTANCE_CAP, PROMOTION_THRESHOLD, promotable
from memory.types import Audience, ConfidenceSource, MemoryEntry, MemoryQuery

CLAIM = "The heronllm bridge is made of glass."


def ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def claims_importance_one(body: dict) -> str:
    """The extraction call answers with a memory claiming importance 1.0; chat and summary get plain text."""
    if body["messages"][0]["content"] == EXTRACTION_INSTRUCTIONS:
        return json.dumps([{"type": "semantic", "content": CLAIM, "importance": 1.0, "confidence": 1.0}])
    return "Noted."


async def operator_read(store: SQLiteAdapter) -> list[MemoryEntry]:
    try:
        return await store.search(MemoryQuery(limit=100), audience=Audience.OPERATOR)
    finally:
        await store.aclose()


def test_a_model_claiming_importance_one_stays_private(cli, no_embedder):
    home = no_embedder
    with LoopbackModelServer(claims_importance_one) as server:
        assert cli("config", "set", "memory.extraction.strategy", "llm").exit_code == 0
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
                   "--default").exit_code == 0
        for name in ("ada", "bob"):
            assert cli("agent", "create", name).exit_code == 0
        # positive control: the user's own write at 1.0 is promoted and bob recalls it
        said = ok(cli("remember", "the heronuser lake is cold", "--agent", "ada", "--importance", "1.0", "--json"))
        assert said["accepted"] == ["private", "global"]
        ran = ok(cli("run", "ada", "Tell me about the bridge.", "--json"))
        assert any(r["body"]["messages"][0]["content"] == EXTRACTION_INSTRUCTIONS for r in server.requests)
    ada = AgentRegistry(home).resolve("ada")
    private = {e.content: e for e in asyncio.run(operator_read(SQLiteAdapter.for_agent(ada.id, home=home)))}
    claimed = private[CLAIM]
    assert claimed.id in ran["written_ids"] and claimed.confidence_source is ConfidenceSource.AGENT
    assert claimed.importance == ASSERTED_IMPORTANCE_CAP < PROMOTION_THRESHOLD  # stored capped, like confidence
    shared = [e.content for e in asyncio.run(operator_read(SQLiteAdapter(home.global_db)))]
    assert shared == ["the heronuser lake is cold"]
    bob = ok(cli("recall", "heronllm heronuser", "--agent", "bob", "--mode", "keyword", "--json"))
    assert [r["content"] for r in bob["results"]] == ["the heronuser lake is cold"]


@pytest.mark.parametrize("source", [ConfidenceSource.AGENT, ConfidenceSource.INFERRED])
async def test_no_writer_can_promote_an_asserted_memory(arcana_home, source):
    """The policy, not the extractor, decides: the federation's router and the seed's global_store= path both refuse."""
    asserted = MemoryEntry(agent_id="ada", content="an asserted fact", importance=1.0, confidence=0.7,
                           confidence_source=source)
    said = MemoryEntry(agent_id="ada", content="a stated fact", importance=1.0)
    assert not promotable(asserted) and promotable(said)

    shared = SQLiteAdapter(arcana_home.global_db, actor="test")
    private = SQLiteAdapter.for_agent("ada", home=arcana_home, actor="test", global_store=shared)
    await private.write_many([asserted, said])
    assert [e.content for e in await operator_read(shared)] == ["a stated fact"]
    assert len(await operator_read(private)) == 2  # both kept privately

    events = []
    router = MemoryRouter(private=SQLiteAdapter.for_agent("bea", home=arcana_home), global_=SQLiteAdapter(arcana_home.global_db))
    federation = MemoryFederation(router, on_degraded=events.append)
    for entry, tiers in ((asserted, ["private"]), (said, ["private", "global"])):
        report = await federation.write(entry.model_copy(update={"id": f"{entry.id}-bea", "agent_id": "bea"}))
        assert report.accepted == tiers
    await federation.aclose()
    assert events == []
