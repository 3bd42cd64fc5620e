"""What a model returns is input: `arcana run` with the `llm` extractor against a real loopback model
server answering with hostile JSON, checked in the agent's real store."""

from __future__ import annotations

import asyncio
import json

import pytest
from factories import operator_entries
from model_server import LoopbackModelServer

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.types import ConfidenceSource, MemoryType


def audit_events(home) -> list[dict]:
    return [json.loads(line) for line in home.audit_log.read_text().splitlines()] if home.audit_log.exists() else []


@pytest.fixture
def hostile(cli, arcana_home):
    """A keyword-only home whose one model answers the extraction call with ``facts`` (a list, as JSON)."""
    facts: list = []

    def reply(body):
        return json.dumps(facts) if "JSON list" in body["messages"][0]["content"] else "Fine."

    with LoopbackModelServer(reply, chunk=1 << 20) as server:
        assert cli("config", "set", "embedding.providers", "[]").exit_code == 0
        assert cli("model", "add", "m", "--provider", "ollama", "--base-url", server.url, "--model", "x", "--default").exit_code == 0
        assert cli("config", "set", "memory.extraction.strategy", "llm").exit_code == 0
        assert cli("agent", "create", "ada").exit_code == 0
        yield facts, AgentRegistry(arcana_home).resolve("ada")


def run(cli, prompt: str) -> dict:
    result = cli("run", "ada", prompt, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_model_that_floods_extraction_stores_none_of_the_flood(cli, hostile, arcana_home):
    facts, card = hostile
    facts[:] = [{"type": "semantic", "content": f"Flood fact {i} about gadget{i}."} for i in range(300)]
    run(cli, "I prefer green tea.")
    stored = operator_entries(arcana_home, card)
    assert not any(e.content.startswith("Flood fact") for e in stored), len(stored)
    # The heuristic answered for the turn: the user's own statement is kept, and why is audited.
    assert any(e.content == "I prefer green tea." and e.confidence_source is ConfidenceSource.USER_CONFIRMED for e in stored)
    assert any(a["event"] == "extraction_fallback" and "300 memories" in a["reason"] for a in audit_events(arcana_home))

    # Positive control, same store: a model answer of a few facts is stored as the model gave them.
    facts[:] = [{"type": "semantic", "content": f"Small fact {i} about widget{i}."} for i in range(3)]
    written = run(cli, "Tell me about widgets.")["written_ids"]
    kept = {e.id: e.content for e in operator_entries(arcana_home, card)}
    assert sorted(kept[i] for i in written) == [f"Small fact {i} about widget{i}." for i in range(3)]


@pytest.mark.parametrize("strategy", ["heuristic", "llm"])
def test_extracted_memories_keep_within_max_content_bytes(cli, hostile, arcana_home, strategy):
    """memory.max_content_bytes bounds what a run stores as it bounds `remember`: the extractor's
    own character cap (2000) is no byte cap, and a 2-byte letter doubles it."""
    facts, card = hostile
    assert cli("config", "set", "memory.max_content_bytes", "1024").exit_code == 0
    assert cli("config", "set", "memory.extraction.strategy", strategy).exit_code == 0
    facts[:] = [{"type": "semantic", "content": "é" * 1500}, {"type": "semantic", "content": "My cat is called Tom."}]
    prompt = "Remember that my favourite colour is teal. " + "Some more words of context here. " * 45
    assert len(prompt.encode()) > 1024 and len(prompt) < 2000  # under the character cap, over the byte limit
    written = run(cli, prompt)["written_ids"]
    stored = operator_entries(arcana_home, card)
    assert {e.id for e in stored} >= set(written) and len(stored) == len(written) + 1  # and the summary
    assert all(len(e.content.encode()) <= 1024 for e in stored), [len(e.content.encode()) for e in stored]
    long_ones = [e for e in stored if e.content.startswith(("é", "User asked"))]
    assert long_ones and all(e.content.endswith("…") for e in long_ones)  # cut, and says so
    # Positive control: the short facts are stored whole.
    short = "My favourite colour is teal." if strategy == "heuristic" else "My cat is called Tom."
    assert any(e.content == short for e in stored)
    if strategy == "llm":
        assert MemoryType.SEMANTIC in {e.type for e in stored}


def test_a_turn_whose_extraction_was_cut_off_leaves_replay_once_its_memory_is_hidden(cli, arcana_home):
    """Extraction cut off by its job budget after some writes (each reconciled by a slow model) still
    names them in the session: hiding one keeps the turn that said it out of the next prompt."""
    import time

    from memory.config import ArcanaConfig, ExtractionConfig, MemoryConfig, ModelConfig, ReconcileConfig
    from memory.models.registry import provider_for
    from memory.runtime.agent import AgentRuntime, build_runtime_with_memory
    from memory.types import MemoryEntry

    def reply(body):
        system = body["messages"][0]["content"]
        if "JSON list" in system:
            return json.dumps([{"type": "semantic", "content": f"The locker code is 47{i}."} for i in range(5)])
        if "memory consistent" in system:
            time.sleep(1.5)  # past the reconcile timeout: each write takes about a second, then adds
            return '{"decision": "add"}'
        return "Noted."

    with LoopbackModelServer(reply) as server:
        config = ArcanaConfig(
            memory=MemoryConfig(extraction=ExtractionConfig(strategy="llm"),
                                reconcile=ReconcileConfig(strategy="llm", timeout_seconds=1)),
            models={"loop": ModelConfig(provider="ollama", base_url=server.url, model="m")},
        )
        card = AgentRegistry(arcana_home).create("ada")

        seeded = MemoryEntry(agent_id=card.id, content="The locker room is in the basement.")  # a candidate

        async def turn(prompt, session_id=None, budget=0.5):
            if session_id is None:
                seed = SQLiteAdapter.for_agent(card.id, home=arcana_home)
                await seed.write(seeded)
                await seed.aclose()
            _, federation = await build_runtime_with_memory(arcana_home, card, config=config)
            try:
                runtime = AgentRuntime(arcana_home, card, provider_for(config, "loop"), memory=federation, config=config)
                server.requests.clear()
                return await runtime.turn(prompt, session_id=session_id, keep_open=True, job_budget_seconds=budget)
            finally:
                await federation.aclose()

        first = asyncio.run(turn("Please note: code 4711 opens it.", budget=2.5))
        assert first.jobs["abandoned"] >= 1 and first.written_ids  # cut off after some writes
        asyncio.run(turn("What opens it?", first.session_id))
        control = server.requests[0]["raw"]
        written = [e for e in operator_entries(arcana_home, card) if e.content.startswith("The locker code")]
        assert {e.id for e in written} == set(first.written_ids)
        assert cli("memory", "set", written[0].id, "--visibility", "hidden", "-a", "ada").exit_code == 0
        asyncio.run(turn("And what opens it now?", first.session_id))
        after = server.requests[0]["raw"]
    assert "code 4711 opens it" in control  # positive control: replayed while its memories are visible
    assert "code 4711 opens it" not in after
    assert "And what opens it now?" in after
