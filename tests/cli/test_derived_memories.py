"""What an agent derives (a turn's echo, a session summary) never outlives or outranks the user's facts.

Issue 21 item 4, through the real CLI and a real loopback model server: an
answer given with recalled memories in context is not stored back as new
evidence of what it quoted; derived memories are tagged, rank below the
facts, go first when prune must cut, and a summary links to its sources.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from model_server import LoopbackModelServer, echo_memory_answer

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.extraction.extractors import EXTRACTION_INSTRUCTIONS
from memory.graph.edges import EdgeStore
from memory.sqlite.consolidation import SOURCES
from memory.types import DERIVED_TAG
from runner import cli_data

TEA = "I prefer tea over coffee"


@pytest.fixture
def agent(cli, model_server, no_embedder):
    """A keyword-only home with the loopback model as default and one agent, ada."""
    added = cli("model", "add", "loop", "--provider", "ollama", "--base-url", model_server.url, "--model", "tiny", "--default")
    assert added.exit_code == 0, added.output
    assert cli("agent", "create", "ada").exit_code == 0
    return AgentRegistry(no_embedder).resolve("ada")


def stored(cli) -> list[dict]:
    return cli_data(cli, "memory", "list", "--agent", "ada", "--all")


def test_prune_takes_what_was_derived_before_the_fact(cli, agent):
    told = cli_data(cli, "run", "ada", TEA)
    cli_data(cli, "run", "ada", "What do I prefer, tea or coffee?")
    cli_data(cli, "run", "ada", "Which do I like more, tea or coffee?")
    before = stored(cli)
    (fact,) = [m for m in before if m["content"] == TEA]
    assert fact["id"] in told["written_ids"] and len(before) == 7  # the fact, three echoes, three summaries

    pruned = cli("prune", "--agent", "ada", "--max-entries", "3", "--mode", "purge", "--yes")
    assert pruned.exit_code == 0, pruned.output
    after = {m["id"]: m for m in stored(cli)}
    assert fact["id"] in after  # the user's fact stays ...
    gone = {m["id"] for m in before} - set(after)
    assert len(after) == 3 and len(gone) == 4  # ... and what came from it is what went
    assert DERIVED_TAG not in fact["tags"]
    assert all(DERIVED_TAG in m["tags"] for m in before if m["id"] != fact["id"])


def test_a_summary_goes_with_the_fact_it_carries(cli, agent):
    told = cli_data(cli, "run", "ada", TEA)
    other = cli_data(cli, "run", "ada", "When does the Lisbon ferry leave?")
    (fact_id,) = [i for i in told["written_ids"] if next(m for m in stored(cli) if m["id"] == i)["content"] == TEA]
    assert cli("memory", "set", fact_id, "--agent", "ada", "--importance", "0.2").exit_code == 0

    pruned = cli("prune", "--agent", "ada", "--min-importance", "0.3", "--mode", "purge", "--yes")
    assert pruned.exit_code == 0, pruned.output
    left = {m["id"] for m in stored(cli)}
    assert fact_id not in left and told["summary_memory_id"] not in left  # the summary of the fact went with it
    assert other["summary_memory_id"] in left  # control: a summary of something else, same importance, stays
    assert not (set(told["written_ids"]) - {fact_id}) & left  # the turn's echo quoted the fact: it went too
    assert set(other["written_ids"]) <= left  # control: another turn's echo, at the same 0.3, stays


def test_an_answer_from_memory_is_not_stored_as_new_evidence(cli, agent, model_server):
    first = cli_data(cli, "run", "ada", "Hello there")  # nothing recalled: the answer is part of what happened
    assert first["recalled_ids"] == []
    assert any(m["content"] == "User asked: Hello there — Assistant answered: I recall: nothing yet." for m in stored(cli))

    assert cli("remember", TEA, "--agent", "ada").exit_code == 0
    for question in ("What do I prefer, tea or coffee?", "Which do I like more, tea or coffee?"):
        answered = cli_data(cli, "run", "ada", question)
        assert TEA in answered["answer"] and answered["recalled_ids"]  # the model saw the fact and said it
    quoting = [m["content"] for m in stored(cli) if TEA in m["content"]]
    assert quoting == [TEA]  # the one fact, not echoes of answers that quoted it
    assert any(m["content"] == "User asked: What do I prefer, tea or coffee?" for m in stored(cli))

    recalled = cli_data(cli, "recall", "tea or coffee", "--agent", "ada")
    assert recalled["results"][0]["content"] == TEA
    assert all(DERIVED_TAG in hit["tags"] for hit in recalled["results"][1:])
    assert len(recalled["results"]) > 1  # control: the echoes are recalled, below the fact


def test_a_summary_links_to_the_memories_its_session_wrote(cli, agent, no_embedder):
    told = cli_data(cli, "run", "ada", TEA)
    assert len(told["written_ids"]) == 2 and told["summary_memory_id"]

    async def edges():
        store = SQLiteAdapter.for_agent(agent.id, home=no_embedder)
        try:
            return await EdgeStore(store).outgoing(told["summary_memory_id"], SOURCES)
        finally:
            await store.aclose()

    assert {e.dst_id for e in asyncio.run(edges())} == set(told["written_ids"])
    summary = next(m for m in stored(cli) if m["id"] == told["summary_memory_id"])
    assert DERIVED_TAG in summary["tags"] and summary["importance"] < 0.6  # below the fact it states


def test_the_llm_extractor_is_not_shown_an_answer_from_memory(cli, no_embedder):
    def reply(body):
        if body["messages"][0]["content"] == EXTRACTION_INSTRUCTIONS:
            return '[{"type": "episodic", "content": "The user asked about drinks."}]'
        return echo_memory_answer(body)

    with LoopbackModelServer(reply) as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "t", "--default").exit_code == 0
        assert cli("agent", "create", "ada").exit_code == 0
        assert cli("agent", "set", "ada", "--extraction", "strategy=llm").exit_code == 0
        cli_data(cli, "run", "ada", "Hello there")
        assert cli("remember", TEA, "--agent", "ada").exit_code == 0
        cli_data(cli, "run", "ada", "Do I prefer tea or coffee?")
        asked = [r["raw"] for r in server.requests if r["body"]["messages"][0]["content"] == EXTRACTION_INSTRUCTIONS]
    assert len(asked) == 2
    assert "Assistant" in asked[0] and "nothing yet" in asked[0]  # control: an answer from no memory is shown
    assert "Assistant" not in asked[1] and TEA not in asked[1]
    echoes = [m for m in stored(cli) if m["content"] == "The user asked about drinks."]
    assert echoes and all(DERIVED_TAG in m["tags"] for m in echoes)


@pytest.mark.parametrize("edit", [["--visibility", "hidden"], ["--content", "My locker code was changed"], "forget"])
def test_withholding_a_stated_fact_withholds_its_turns_echo(cli, agent, edit):
    """The echo quotes the prompt the fact was distilled from: hiding, re-wording or forgetting the
    fact left "User asked: Remember that my locker code is 4471 ..." answering recall and the context
    a session-start hook prints."""
    locker = cli_data(cli, "run", "ada", "Remember that my locker code is 4471")
    bike = cli_data(cli, "run", "ada", "Remember that my bike is painted teal")
    (fact,) = [m["id"] for m in stored(cli) if m["content"] == "My locker code is 4471"]
    assert fact in locker["written_ids"]
    command = ["memory", "forget", fact] if edit == "forget" else ["memory", "set", fact, *edit]
    assert cli(*command, "--agent", "ada").exit_code == 0

    recalled = cli_data(cli, "recall", "locker code 4471", "--agent", "ada")["results"]
    context = cli_data(cli, "context", "--agent", "ada")["context"]
    assert not [hit for hit in recalled if "4471" in hit["content"]] and "4471" not in context
    # control: the other turn's fact and echo, by the same paths
    (echo,) = [m for m in stored(cli) if m["content"].startswith("User asked: Remember that my bike")]
    assert echo["id"] in bike["written_ids"] and echo["id"] in cli_data(cli, "context", "--agent", "ada")["ids"]
    assert "painted teal" in context
    assert any(h["id"] == echo["id"] for h in cli_data(cli, "recall", "bike painted teal", "--agent", "ada")["results"])


def test_session_list_and_show_leave_out_a_withheld_summarys_text(cli, agent):
    """session show names a left-out turn without its text, but printed the session's summary, and
    session list its first words, from the session file: 'User stated: My locker code is 4471.'
    after the operator hid that fact (and, through it, the summary memory)."""
    locker = cli_data(cli, "run", "ada", "Remember that my locker code is 4471")
    bike = cli_data(cli, "run", "ada", "Remember that my bike is painted teal")
    (fact,) = [m["id"] for m in stored(cli) if m["content"] == "My locker code is 4471"]
    assert cli("memory", "set", fact, "--agent", "ada", "--visibility", "hidden").exit_code == 0

    listed = {s["id"]: s for s in cli_data(cli, "session", "list", "--agent", "ada")}
    shown = cli_data(cli, "session", "show", locker["session_id"], "--agent", "ada")
    for session in (listed[locker["session_id"]], shown):
        assert session["summary"] is None
        assert session["summary_left_out"] == {"memory_id": locker["summary_memory_id"], "reason": "hidden"}
    for text in (cli("session", "list", "--agent", "ada").output,
                 cli("session", "show", locker["session_id"], "--agent", "ada").output):
        assert "4471" not in text and "left out" in text
    # control: the other session's summary, by the same commands
    assert "painted teal" in listed[bike["session_id"]]["summary"] and listed[bike["session_id"]]["summary_left_out"] is None
    assert "User stated: My bike is painted teal." in cli("session", "show", bike["session_id"], "--agent", "ada").output


def test_forgetting_a_summary_leaves_the_users_fact_it_repeats(cli, agent):
    """The reach runs from a fact to what repeats it, never back: a session's summary repeats every word
    of the fact its turn stated, and forgetting the summary archived that fact with it as a merge's
    restatement. Control in the same store: forgetting a stated fact still withholds its summary."""
    locker = cli_data(cli, "run", "ada", "Remember that my locker code is 4471 at the downtown gym")
    bike = cli_data(cli, "run", "ada", "Remember that my bike is painted teal")
    assert cli("memory", "forget", locker["summary_memory_id"], "--agent", "ada").exit_code == 0
    recalled = [h["content"] for h in cli_data(cli, "recall", "locker code 4471", "--agent", "ada")["results"]]
    assert "My locker code is 4471 at the downtown gym" in recalled

    (fact,) = [m["id"] for m in stored(cli) if m["content"] == "My bike is painted teal"]
    assert cli("memory", "forget", fact, "--agent", "ada").exit_code == 0
    recalled = [h["id"] for h in cli_data(cli, "recall", "bike painted teal", "--agent", "ada")["results"]]
    assert recalled == [] and bike["summary_memory_id"] not in recalled


@pytest.mark.parametrize("edit", [["--visibility", "hidden"], "forget"])
def test_a_models_words_repeating_a_withheld_memory_are_stored_withheld(cli, no_embedder, edit):
    """`arcana run` stores a model's extracted items and its session summary as the agent's claims: each
    repeating a memory an operator hid or forgot is stored withheld too (man/memory.md, derived
    memories). The control in the same run: the model's other item answers recall."""
    from memory.extraction.extractors import SUMMARY_INSTRUCTIONS

    def reply(body):
        if body["messages"][0]["content"] == EXTRACTION_INSTRUCTIONS:
            return json.dumps([{"type": "semantic", "content": "The user's locker code is 4471 at the gym"},
                               {"type": "semantic", "content": "The user's bike is painted teal"}])
        if body["messages"][0]["content"] == SUMMARY_INSTRUCTIONS:
            return "The user keeps locker code 4471 at the gym and a teal bike."
        return "Noted."

    with LoopbackModelServer(reply) as server:
        assert cli("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "t", "--default").exit_code == 0
        assert cli("agent", "create", "ada").exit_code == 0
        assert cli("agent", "set", "ada", "--extraction", "strategy=llm").exit_code == 0
        locker = cli_data(cli, "remember", "My locker code is 4471", "--agent", "ada")["id"]
        command = ["memory", "forget", locker] if edit == "forget" else ["memory", "set", locker, *edit]
        assert cli(*command, "--agent", "ada").exit_code == 0
        told = cli_data(cli, "run", "ada", "I got a new bike and a gym locker")
    assert len(told["written_ids"]) == 2, told  # both items stored (and no summary: its turn carries a withheld claim)
    answered = [r["content"] for r in cli_data(cli, "recall", "locker code 4471 gym", "--agent", "ada")["results"]]
    assert not [text for text in answered if "4471" in text], answered
    assert "The user's bike is painted teal" in [
        r["content"] for r in cli_data(cli, "recall", "bike painted teal", "--agent", "ada")["results"]]
