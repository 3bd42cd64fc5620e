"""Sessions: append-only records, summaries, and a close() that never calls a model."""

from __future__ import annotations

import pytest
from model_server import LoopbackModelServer

from memory.adapters.sqlite import SQLiteAdapter
from memory.config import ExtractionSettings
from memory.errors import NotFoundError
from memory.extraction.extractors import LLMExtractor
from memory.models.ollama import OllamaProvider
from memory.runtime.sessions import SUMMARY_TAG, SessionClosedError, SessionManager
from memory.types import ConfidenceSource, MemoryEntry, MemoryQuery, MemoryType


@pytest.fixture
async def agent_store(arcana_home):
    store = SQLiteAdapter.for_agent("agent-1", home=arcana_home)
    yield store
    await store.aclose()


def test_turns_are_recorded_and_reloaded(arcana_home):
    manager = SessionManager(arcana_home, "agent-1")
    session = manager.create()
    turn = manager.record_turn(session, "hi", "hello", model="m", recalled_ids=["r1"])
    manager.record_written(session, turn, ["w1", "w2"])
    again = manager.load(session.id[:15])  # a unique prefix works
    assert [(t.prompt, t.response, t.recalled_ids, t.written_ids) for t in again.turns] == [("hi", "hello", ["r1"], ["w1", "w2"])]
    assert [s.id for s in manager.list()] == [session.id]
    with pytest.raises(NotFoundError):
        manager.load("nope")
    with pytest.raises(NotFoundError, match="not a session id"):
        manager.load("*")  # never a glob


def _torn(arcana_home):
    """A session of one turn whose file then ends in a line a crash cut short."""
    manager = SessionManager(arcana_home, "agent-1")
    session = manager.create()
    manager.record_turn(session, "hi", "hello")
    with session.path.open("a") as handle:
        handle.write('{"kind": "turn", "prompt": "half')  # a crash mid-write
    return manager, session


def test_a_torn_last_line_does_not_lose_the_session(arcana_home):
    manager, session = _torn(arcana_home)
    assert len(manager.load(session.id).turns) == 1


def test_a_turn_recorded_after_a_torn_line_is_not_glued_onto_it(arcana_home):
    """`arcana run --session S` after a crash: the next turn starts a line of its own, so it is kept."""
    manager, session = _torn(arcana_home)
    again = manager.load(session.id)
    manager.record_turn(again, "second", "answer")
    assert [t.prompt for t in manager.load(session.id).turns] == ["hi", "second"]
    assert session.path.read_text().count("\n") == 4  # the torn line kept as it was, on a line of its own


async def test_close_and_summarise_writes_one_semantic_memory_for_a_stated_fact(arcana_home, agent_store):
    manager = SessionManager(arcana_home, "agent-1")
    session = manager.create()
    manager.record_turn(session, "Remember that my dog is called Rex.", "Noted.")
    manager.record_turn(session, "What should I cook tonight?", "Pasta.")
    entry = await manager.close_and_summarise(session, memory=agent_store)
    assert entry.type is MemoryType.SEMANTIC and SUMMARY_TAG in entry.tags
    assert entry.content == (
        "Session of 2 turns. User stated: My dog is called Rex. Asked about: What should I cook tonight?"
    )
    assert entry.confidence_source is ConfidenceSource.AGENT and entry.confidence < 1.0
    assert entry.importance == ExtractionSettings().summary_importance
    stored = await agent_store.search(MemoryQuery(tags=[SUMMARY_TAG]))
    assert [e.id for e in stored] == [entry.id]
    reloaded = manager.load(session.id)
    assert reloaded.closed and reloaded.summary == entry.content and reloaded.summary_memory_id == entry.id
    with pytest.raises(SessionClosedError):
        manager.record_turn(reloaded, "more?", "no")


async def test_summary_of_small_talk_is_episodic(arcana_home, agent_store):
    manager = SessionManager(arcana_home, "agent-1")
    session = manager.create()
    manager.record_turn(session, "What time is it in Tokyo?", "Evening.")
    entry = await manager.close_and_summarise(session, memory=agent_store)
    assert entry.type is MemoryType.EPISODIC


async def test_close_is_synchronous_and_calls_no_model(arcana_home, agent_store):
    with LoopbackModelServer(lambda body: "A model-written summary.") as server:
        extractor = LLMExtractor(OllamaProvider("m", server.url, "x"))
        manager = SessionManager(arcana_home, "agent-1", extractor=extractor)
        quiet = manager.create()
        manager.record_turn(quiet, "hi", "hello")
        assert manager.close(quiet) is None
        assert server.requests == [] and manager.load(quiet.id).closed
        assert await agent_store.search(MemoryQuery()) == []
        # control: summarising the same kind of session does call the model
        loud = manager.create()
        manager.record_turn(loud, "hi", "hello")
        entry = await manager.close_and_summarise(loud, memory=agent_store)
        assert len(server.requests) == 1 and entry.content == "A model-written summary."


async def test_empty_session_closes_without_a_memory(arcana_home, agent_store):
    manager = SessionManager(arcana_home, "agent-1")
    session = manager.create()
    assert await manager.close_and_summarise(session, memory=agent_store) is None
    assert manager.load(session.id).closed


def test_a_line_that_is_not_utf8_or_not_an_event_is_skipped_like_a_torn_one(arcana_home, cli):
    """A crash that cuts a line inside a multi-byte character, or a line edited by hand, leaves
    the rest of the session readable: `session list`/`show` skip it, never a traceback."""
    import json as _json

    from memory.agents import AgentRegistry

    assert cli("agent", "create", "ada").exit_code == 0
    manager = SessionManager(arcana_home, AgentRegistry(arcana_home).resolve("ada").id)
    session = manager.create()
    manager.record_turn(session, "Café au lait?", "Yes.")
    with session.path.open("ab") as handle:
        handle.write(b'{"at": "2026-01-01T00:00:00+00:00", "kind": "turn", "prompt": "caf\xc3\n')  # torn mid-character
        handle.write(b'{"at": "2026-01-01T00:00:01+00:00", "kind": "turn", "prompt": "no response"}\n')
        # nested past the parser's depth: a RecursionError traceback from session list and show
        handle.write(b'{"at": "2026-01-01T00:00:01+00:00", "kind": "turn", "prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
        handle.write(b'{"at": "2026-01-01T00:00:02+00:00", "kind": "written", "turn": "x", "ids": ["m"]}\n')
        handle.write(b'{"at": "2026-01-01T00:00:03+00:00", "kind": "summary", "text": "kept"}\n')
    naive = manager.dir / "20250101-000000-abcdef.jsonl"  # written by hand, its time without a zone
    naive.write_text('{"at": "2025-01-01T00:00:00", "kind": "opened"}\n', encoding="utf-8")
    before = session.path.read_bytes()
    listed = cli("session", "list", "--agent", "ada", "--json")
    assert listed.exit_code == 0, listed.output
    assert [(s["id"], s["turns"]) for s in _json.loads(listed.stdout)] == [(naive.stem, 0), (session.id, 1)]
    shown = cli("session", "show", session.id, "--agent", "ada", "--json")
    assert shown.exit_code == 0, shown.output
    data = _json.loads(shown.stdout)
    assert [t["prompt"] for t in data["turns"]] == ["Café au lait?"] and data["summary"] == "kept"
    assert session.path.read_bytes() == before  # reading rewrites nothing


def test_a_session_line_with_a_key_given_twice_is_skipped_like_a_torn_one(arcana_home):
    """A line `{"kind": "turn", …, "kind": "closed"}` closed the session on the second value while a
    reader keeping the first saw a turn: such a line is skipped, the lines around it stand."""
    manager = SessionManager(arcana_home, "agent-1")
    session = manager.create()
    manager.record_turn(session, "first", "one")
    with session.path.open("ab") as handle:
        handle.write(b'{"at": "2026-01-01T00:00:01+00:00", "kind": "turn", "prompt": "smuggled", "kind": "closed"}\n')
    manager.record_turn(session, "second", "two")
    loaded = manager.load(session.id)
    assert [t.prompt for t in loaded.turns] == ["first", "second"] and loaded.closed_at is None


def test_a_session_file_left_empty_by_a_crash_does_not_hide_the_others(arcana_home, cli):
    import json as _json

    from memory.agents import AgentRegistry

    assert cli("agent", "create", "ada").exit_code == 0
    manager = SessionManager(arcana_home, AgentRegistry(arcana_home).resolve("ada").id)
    session = manager.create()
    manager.record_turn(session, "hi", "hello")
    empty = manager.dir / "20250101-000000-abcdef.jsonl"
    empty.touch()  # killed between creating the file and writing its first line
    listed = cli("session", "list", "--agent", "ada", "--json")
    assert listed.exit_code == 0, listed.output
    assert [(s["id"], s["turns"]) for s in _json.loads(listed.stdout)] == [(session.id, 1)]
    assert empty.exists() and empty.stat().st_size == 0
    shown = cli("session", "show", empty.stem, "--agent", "ada")
    assert shown.exit_code == 3 and "has no readable line" in shown.stderr and "Traceback" not in shown.output


async def test_a_summary_that_restates_a_held_fact_is_that_fact_and_takes_no_sources(arcana_home):
    """Reconciled as a restatement, the summary is the memory already held: the session names that
    memory (not an id nothing holds), and the fact gets no ``consolidates`` edge to this session's
    turns, which would make it a digest of them (pruned, hidden with them)."""
    from memory.runtime.assembly import build_federation, private_store
    from memory.sqlite.consolidation import SOURCES
    from memory.types import MemoryEntry

    fact_text = "The user's dog is called Rex and he is a beagle."
    fed = await build_federation("agent-1", home=arcana_home, global_tier=False, on_degraded=lambda event: None)
    try:
        fact = MemoryEntry(agent_id="agent-1", content=fact_text, type=MemoryType.SEMANTIC)
        await fed.write(fact)
        with LoopbackModelServer(lambda body: fact_text) as server:
            manager = SessionManager(arcana_home, "agent-1", extractor=LLMExtractor(OllamaProvider("m", server.url, "x")))
            restating, fresh = manager.create(), manager.create()
            for session, said in ((restating, "Which dog food suits a beagle?"), (fresh, "Is Rex due a vaccination?")):
                manager.record_turn(session, said, "Ask the vet.")
                turn = MemoryEntry(agent_id="agent-1", content=f"The user asked: {said}")
                await fed.write(turn)
                manager.record_written(session, 0, [turn.id])
            entry = await manager.close_and_summarise(restating, memory=fed)
            assert entry is not None and entry.id == fact.id and entry.content == fact_text
            assert manager.load(restating.id).summary_memory_id == fact.id
            # control, same store: a summary that is new is its own memory, linked to its session's turns
            server.reply = lambda body: "The user asked whether Rex is due a vaccination."
            new = await manager.close_and_summarise(fresh, memory=fed)
        assert new is not None and new.id != fact.id and manager.load(fresh.id).summary_memory_id == new.id
        edges = await private_store(fed).run(
            lambda raw: raw.execute("SELECT src_id FROM memory_edges WHERE relation = ?", (SOURCES,)).fetchall())
        assert [r[0] for r in edges] == [new.id]
    finally:
        await fed.aclose()


async def test_a_session_s_memories_are_found_through_the_session_index(agent_store):
    """Closing a session asks which current memories it wrote: the query went through memories_order
    and read every live row of the store (650 ms a close at 300,000 rows)."""
    from memory.sqlite.consolidation import WRITTEN_IN_SESSION

    mine = [MemoryEntry(agent_id="agent-1", content=f"said in s1 {i}", source_session_id="s1") for i in range(3)]
    other = MemoryEntry(agent_id="agent-1", content="said in s2", source_session_id="s2")
    summary = MemoryEntry(agent_id="agent-1", content="summary of s1", source_session_id="s1", tags=[SUMMARY_TAG])
    await agent_store.write_many([*mine, other, summary])
    await agent_store.archive([mine[1].id])
    assert await agent_store.written_in_session("s1", SUMMARY_TAG) == [mine[0].id, mine[2].id]  # control: same answer
    plan = await agent_store.run(
        lambda raw: [r[3] for r in raw.execute("EXPLAIN QUERY PLAN " + WRITTEN_IN_SESSION, ("s1", SUMMARY_TAG))])
    assert plan[0] == "SEARCH m USING INDEX memories_session (source_session_id=?)", plan
    assert not any("memories_order" in step for step in plan), plan
