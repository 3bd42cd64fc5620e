"""A question that asks when lifts the lines that say when (memory.ranking.dated), on a real store."""

from __future__ import annotations

from memory.adapters.sqlite import SQLiteAdapter
from memory.adapters.vector import VectorAdapter
from memory.embedding.gateway import EmbeddingGateway
from memory.ranking.dated import DATED_LIFT, asks_when, dated, lift_dated_lines
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode

AGENT = "agent-1"
TALK = "Caroline: The support group was so powerful."
DATED = "Caroline: I went to a support group last week, everyone shared their stories."
OTHER = "Melanie: I painted a lake sunrise last year."


async def test_a_when_question_ranks_the_line_that_dates_the_event_first(tmp_path, offline_embedder):
    adapter = VectorAdapter(SQLiteAdapter(tmp_path / "m.db"), EmbeddingGateway([offline_embedder]))
    try:
        await adapter.write_many([MemoryEntry(agent_id=AGENT, content=t) for t in (
            TALK, DATED, OTHER, "Melanie: My kids love the beach.",
        )])

        async def ranked(text: str) -> list[str]:
            query = MemoryQuery(agent_id=AGENT, text=text, retrieval_mode=RetrievalMode.hybrid, limit=4)
            return [e.content for e in (await adapter.recall(query)).entries]

        # control: the same search words, not asking when — the shorter line about the group leads
        assert (await ranked("Did Caroline go to the support group?"))[0] == TALK
        # asking when, the line that dates the visit leads; a dated line that does not match stays below
        when = await ranked("When did Caroline go to the support group?")
        assert when[:2] == [DATED, TALK]
        assert when.index(OTHER) > 1
    finally:
        await adapter.aclose()


def test_only_a_question_about_time_lifts_and_only_the_lines_that_say_when():
    scores = {"dated": 0.5, "plain": 0.6}
    content = {"dated": "Mel: We camped two weeks ago.", "plain": "Mel: Camping is the best."}
    lifted = lift_dated_lines(scores, content, "When did Mel go camping?")
    assert lifted == {"dated": 0.5 * (1 + DATED_LIFT), "plain": 0.6}
    assert lift_dated_lines(scores, content, "Where did Mel go camping?") == scores


def test_what_asks_when_and_what_says_when():
    for question in ("When did she move?", "How long ago was the trip?", "What year did he graduate?",
                     "how long has Jon had the shop?"):
        assert asks_when(question), question
    for question in ("Where did she move?", "What did he say about the weekend?", "Who went when she left?"):
        assert not asks_when(question), question
    for line in ("I went there yesterday", "Last weekend we hiked", "It was three years ago",
                 "We met on Saturday", "Back in May 2023", "since 2019", "Jo: last Friday was fun",
                 "I have run the shop for five years"):
        assert dated(line), line
    # "may" the verb, a number that is no year, and a speaker named like a month are no dates
    for line in ("You may like it", "I ran 5 km", "June: I love painting"):
        assert not dated(line), line
