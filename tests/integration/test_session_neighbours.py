"""Session-neighbour expansion through build_federation on a real store and the offline model:
the turn next to a hit joins the results, read through the admission predicate, so a
hidden or private turn, another agent's, or a superseded one never comes in by adjacency."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from memory.config import ArcanaConfig, RecallConfig
from memory.embedding.gateway import EmbeddingGateway
from memory.ranking.neighbours import RING_SHARE, expand
from memory.runtime.assembly import build_federation, private_store
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode, Visibility

AGENT = "talker"
DAY = datetime(2024, 6, 18, 18, 30, tzinfo=timezone.utc)
NOW = DAY + timedelta(days=1)


async def federation(tmp_path, embedder, depth: int, reach: int = 2):
    config = ArcanaConfig(recall=RecallConfig(neighbour_depth=depth, neighbour_reach=reach))
    return await build_federation(
        AGENT, home=tmp_path / f"home{depth}-{reach}", embedding=EmbeddingGateway([embedder]), global_tier=False,
        clock=lambda: NOW, on_degraded=lambda event: None, config=config,
    )


def turn(session: str, content: str, minutes: int = 0, **kw) -> MemoryEntry:
    when = DAY + timedelta(minutes=minutes)
    return MemoryEntry(agent_id=kw.pop("agent_id", AGENT), content=content, source_session_id=session,
                       created_at=when, updated_at=when, **kw)


def ask(text: str) -> MemoryQuery:
    return MemoryQuery(agent_id=AGENT, text=text, retrieval_mode=RetrievalMode.keyword, limit=5)


async def test_the_turn_next_to_a_hit_joins_it_and_nothing_the_query_may_not_see(tmp_path, offline_embedder):
    # one session, every turn at the same instant: the order is the order written
    opener = turn("s1", "Melanie: Guess who I saw on Saturday night!")
    hit = turn("s1", "Caroline: The stadium concert? Tell me everything.")
    # the same words in a second session, whose turns before the hit are not for recall
    own = turn("s2", "Melanie: I finally booked the flights to Porto.", minutes=-5)
    hidden = turn("s2", "Melanie: My diary says the trip is a secret.", minutes=-4, visibility=Visibility.HIDDEN)
    private = turn("s2", "Melanie: The passcode for the safe is 4711.", minutes=-3, visibility=Visibility.PRIVATE)
    foreign = turn("s2", "Sam: My own notes on the festival.", minutes=-2, agent_id="someone-else")
    second = turn("s2", "Caroline: Was the stadium concert sold out?", minutes=-1)
    written = [opener, hit, own, hidden, private, foreign, second]
    for depth in (0, 2):
        fed = await federation(tmp_path, offline_embedder, depth)
        try:
            store = private_store(fed)
            await store.write_many(written)  # the other agent's row lives in this file too
            found = {e.id: e for e in await fed.search(ask("stadium concert"))}
            assert hit.id in found and second.id in found  # both legs' own matches either way
            if depth == 0:  # control: without expansion the turns before them are not matched
                assert opener.id not in found and own.id not in found
                continue
            assert opener.id in found and found[opener.id].matched_by == ["neighbour"]
            # the adjacency read skips what the query may not see: the neighbour is the agent's
            # own visible turn before the hidden, private and foreign ones
            assert own.id in found
            assert not {hidden.id, private.id, foreign.id} & set(found)
            ranks = list(found)
            assert ranks.index(opener.id) > ranks.index(hit.id)  # just below the hit that found it
        finally:
            await fed.aclose()


async def test_a_superseded_neighbour_is_not_brought_back(tmp_path, offline_embedder):
    fed = await federation(tmp_path, offline_embedder, 2)
    try:
        old = turn("s1", "Melanie: We live in Berlin now.", minutes=-1)
        hit = turn("s1", "Caroline: How is the new flat near the canal?")
        store = private_store(fed)
        await store.write_many([old, hit])
        found = [e.id for e in await fed.search(ask("flat near the canal"))]
        assert found[:2] == [hit.id, old.id]  # control: the neighbour comes while current
        newer = turn("s9", "Melanie: We moved to Lisbon.", minutes=30)
        await store.write(newer)
        await store.supersede([old.id], newer.id)
        assert [e.id for e in await fed.search(ask("flat near the canal"))] == [hit.id]
    finally:
        await fed.aclose()


async def test_the_speakers_next_turn_two_away_joins_below_the_adjacent_one(tmp_path, offline_embedder):
    # the answer is the hit's speaker's own next turn, after the other speaker's reply
    hit = turn("s1", "Caroline: I went to a support group yesterday.")
    reply = turn("s1", "Melanie: Wow, how did it feel?")
    hidden = turn("s1", "Melanie: (a note to self about the group)", visibility=Visibility.HIDDEN)
    answer = turn("s1", "Caroline: So inspiring, I now want to study counseling.")
    after = turn("s1", "Melanie: That sounds like a great path.")
    for reach in (1, 2):
        fed = await federation(tmp_path, offline_embedder, 1, reach)
        try:
            await private_store(fed).write_many([hit, reply, hidden, answer, after])
            found = [e.id for e in await fed.search(ask("support group"))]
            if reach == 1:  # control: only the adjacent turn joins
                assert found == [hit.id, reply.id]
                continue
            # two away through the admission predicate: the hidden turn is passed over, not counted
            assert found == [hit.id, reply.id, answer.id]
        finally:
            await fed.aclose()


def test_expand_places_neighbours_below_their_hit_and_keeps_what_is_ranked():
    ranked = [("a", 1.0), ("b", 0.8), ("c", 0.5)]
    merged = expand(ranked, [[["a-", "a+"]], [["c"]], []], share=0.9, limit=5, key=lambda i: i)
    assert merged == [("a", 1.0), ("a-", 0.9), ("a+", 0.9), ("b", 0.8), ("c", 0.5)]  # c stays where it was
    assert expand(ranked, [[["x"]]], share=0.4, limit=3, key=lambda i: i) == ranked  # too weak to enter


def test_a_further_ring_joins_at_less_and_a_turn_near_two_hits_takes_the_better_place():
    ranked = [("a", 1.0), ("b", 0.9)]
    merged = expand(ranked, [[["a+"], ["x"]], [["x"]]], share=0.5, limit=4, key=lambda i: i)
    assert merged == [("a", 1.0), ("b", 0.9), ("a+", 0.5), ("x", 0.45)]  # x: b's adjacent turn, not a's second ring
    assert expand(ranked, [[["a+"], ["a++"]]], share=0.5, limit=4, key=lambda i: i)[-1] == ("a++", 0.5 * RING_SHARE)
