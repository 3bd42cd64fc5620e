"""A session summary and a turn's echo repeat the facts the session stated (``consolidates``
edges): once a later fact supersedes one of them, they must stop answering with it too, as the
fact itself does; what they carry that still holds answers on through its own memory."""

from __future__ import annotations

import asyncio
import json

from model_server import LoopbackModelServer


def ok(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_summary_repeating_a_superseded_fact_stops_answering_with_it(cli, no_embedder):
    with LoopbackModelServer(lambda body: "Noted.") as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
                   "--default").exit_code == 0
        first = ok(cli("run", "ada", "I live in Berlin.", "--json"))
        control = ok(cli("run", "ada", "I prefer green tea.", "--json"))
        ok(cli("run", "ada", "I live in Lisbon now.", "--json"))

    berlin = ok(cli("recall", "Berlin", "--agent", "ada", "--json"))["results"]
    assert berlin == []  # neither the fact, nor its turn's echo, nor the session's summary
    ended = ok(cli("memory", "show", first["summary_memory_id"], "--agent", "ada", "--json"))
    assert ended["superseded_by"] is not None and ended["valid_to"] is not None  # kept, for --as-of and history
    lisbon = [e["content"] for e in ok(cli("recall", "Lisbon", "--agent", "ada", "--json"))["results"]]
    assert "I live in Lisbon now." in lisbon
    tea = {e["id"] for e in ok(cli("recall", "green tea", "--agent", "ada", "--json"))["results"]}
    assert control["summary_memory_id"] in tea and set(control["written_ids"]) <= tea  # the control answers on


def test_a_turn_stating_a_change_leaves_no_conflict_for_its_echo_or_summary(cli, no_embedder):
    """The echo ("User asked: I live in Lisbon now.") and the summary repeat the user's own words: held
    as claims against the fact they repeat (or the one it replaced), they made every stated change two
    open conflicts for an operator to settle. A claim against a user's fact is still held (control)."""
    with LoopbackModelServer(lambda body: "Noted.") as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
                   "--default").exit_code == 0
        ok(cli("run", "ada", "I live in Berlin.", "--json"))
        ok(cli("run", "ada", "I live in Lisbon now.", "--json"))
    listed = ok(cli("memory", "list", "--agent", "ada", "--all", "--json"))
    assert [e["content"] for e in listed if e["conflict_with"]] == []
    assert "I live in Lisbon now." in [e["content"] for e in listed if e["superseded_by"] is None]
    lisbon = next(e["id"] for e in listed if e["content"] == "I live in Lisbon now.")
    claim, echo = asyncio.run(_asserted(no_embedder, "I live in Porto now.", "User asked: I live in Porto now."))
    assert claim.conflict_with == lisbon  # the control: an agent's claim against the user's fact is held
    assert echo.conflict_with is None and echo.supersedes == []  # a derived record is neither held nor ends it


async def _asserted(home, claim: str, echo: str):
    from memory.agents import AgentRegistry
    from memory.runtime.agent import build_runtime_with_memory
    from memory.types import DERIVED_TAG, ConfidenceSource, MemoryEntry

    card, federation = await build_runtime_with_memory(home, AgentRegistry(home).resolve("ada"))
    try:
        return [await federation.write(MemoryEntry(agent_id=card.id, content=text, confidence_source=ConfidenceSource.AGENT,
                                                   tags=tags)) for text, tags in ((claim, []), (echo, [DERIVED_TAG]))]
    finally:
        await federation.aclose()


def test_making_the_fact_current_again_brings_back_what_carries_it(cli, no_embedder):
    with LoopbackModelServer(lambda body: "Noted.") as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
                   "--default").exit_code == 0
        first = ok(cli("run", "ada", "I live in Berlin.", "--json"))
        ok(cli("run", "ada", "I live in Lisbon now.", "--json"))
    listed = ok(cli("memory", "list", "--agent", "ada", "--all", "--json"))
    berlin = next(e["id"] for e in listed if e["content"] == "I live in Berlin.")
    ok(cli("memory", "set", berlin, "--agent", "ada", "--current", "--json"))
    found = {e["id"] for e in ok(cli("recall", "Berlin", "--agent", "ada", "--json"))["results"]}
    assert {berlin, first["summary_memory_id"]} <= found
    assert set(first["written_ids"]) <= found  # the turn's echo too
