"""Recall as a conversation needs it, through build_federation with the real offline model:
an old strong match survives decay, a turn is found by the context it was said in,
a time expression in the question lifts what was written then, and "now" is injectable."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory.embedding.gateway import EmbeddingGateway
from memory.ranking.decay import DEFAULT_PROFILES
from memory.runtime.assembly import build_federation, private_store
from memory.types import MemoryEntry, MemoryQuery, MemoryType, RetrievalMode, Visibility

AGENT = "talker"
NOW = datetime(2024, 6, 20, 12, 0, tzinfo=timezone.utc)
NO_REFRESH = {t: p.model_copy(update={"refresh_on_access": False}) for t, p in DEFAULT_PROFILES.items()}


async def federation(tmp_path, embedder, clock=lambda: NOW):
    return await build_federation(
        AGENT, home=tmp_path / "home", embedding=EmbeddingGateway([embedder]), decay_profiles=NO_REFRESH,
        global_tier=False, clock=clock, on_degraded=lambda event: None,
    )


def at(days_ago: float, content: str, **kw) -> MemoryEntry:
    when = NOW - timedelta(days=days_ago)
    return MemoryEntry(agent_id=AGENT, content=content, created_at=when, updated_at=when, **kw)


def ask(text: str | None, mode: RetrievalMode = RetrievalMode.hybrid, limit: int = 5) -> MemoryQuery:
    return MemoryQuery(agent_id=AGENT, text=text, retrieval_mode=mode, limit=limit)


FRESH = [
    "We moved the team standup to nine thirty.",
    "The printer on floor two is out of toner again.",
    "Sam prefers tea over coffee in the afternoon.",
    "The quarterly budget review went fine.",
]


@pytest.mark.parametrize("mode", list(RetrievalMode))
async def test_an_old_strong_match_is_recalled_past_the_consolidation_age(tmp_path, offline_embedder, mode):
    fed = await federation(tmp_path, offline_embedder)
    try:
        old = at(60, "We booked the trip to Kyoto for the cherry blossom season.")
        assert DEFAULT_PROFILES[MemoryType.EPISODIC].remaining(60) < 0.1  # aged out by the seed's rule
        await fed.router.private.backend.write_many([old, *(at(1, text) for text in FRESH)])
        found = [e.id for e in await fed.search(ask("trip to Kyoto", mode))]
        assert found[0] == old.id
        # a listing (no question) still lets aged-out entries go, and keeps the fresh ones
        listed = [e.id for e in await fed.search(ask(None, limit=10))]
        assert old.id not in listed and len(listed) == len(FRESH)
    finally:
        await fed.aclose()


async def test_clock_decides_what_now_is(tmp_path, offline_embedder):
    clock = {"now": NOW - timedelta(days=59)}
    fed = await federation(tmp_path, offline_embedder, clock=lambda: clock["now"])
    try:
        entry = at(60, "We booked the trip to Kyoto for the cherry blossom season.")
        await fed.write(entry)
        assert [e.id for e in await fed.search(ask(None))] == [entry.id]  # a day old then
        clock["now"] = NOW
        assert await fed.search(ask(None)) == []  # sixty days old now: aged out of listings
    finally:
        await fed.aclose()


async def test_a_turn_is_found_by_the_context_it_was_said_in(tmp_path, offline_embedder):
    fed = await federation(tmp_path, offline_embedder)
    try:
        question = at(2, "Caroline: How was your trip to Lisbon?", source_session_id="s1")
        answer = at(2 - 1e-5, "Melanie: Amazing! The pastries were the best part.", source_session_id="s1")
        hidden = at(3, "Caroline: Did you finish the secret Lisbon report?", source_session_id="s2",
                    visibility=Visibility.HIDDEN)
        after_hidden = at(3 - 1e-5, "Melanie: Not yet, it needs one more week.", source_session_id="s2")
        others = [at(5, text, source_session_id="s0") for text in (
            "Melanie: The pastries at the wedding were dry.", "Melanie: Amazing weather for a run today.",
            "Caroline: My trip to Porto got cancelled.",
        )]
        for entry in [*others, question, answer, hidden, after_hidden]:
            await fed.write(entry)
        for mode in RetrievalMode:
            found = [e.id for e in await fed.search(ask("What did Melanie think of Lisbon?", mode, limit=3))]
            assert answer.id in found[:2], (mode, found)
        # the stored content is exactly what was written; the context is beside it
        stored = await private_store(fed).get(answer.id)
        assert stored.content == answer.content
        # a hidden turn lends no words: the turn after it is not found through it
        found = [e.id for e in await fed.search(ask("secret report", RetrievalMode.keyword, limit=10))]
        assert after_hidden.id not in found and hidden.id not in found
        assert question.id in [e.id for e in await fed.search(ask("Lisbon", RetrievalMode.keyword))]  # control
    finally:
        await fed.aclose()


async def test_a_time_expression_lifts_what_was_written_then(tmp_path, offline_embedder):
    fed = await federation(tmp_path, offline_embedder)
    try:
        may = at(41, "Dinner with Sam at the Thai place downtown.")  # 10 May 2024
        june = at(3, "Dinner with Sam at the pizza place downtown.")
        await fed.router.private.backend.write_many([may, june, *(at(1, text) for text in FRESH)])
        for mode in RetrievalMode:
            assert [e.id for e in await fed.search(ask("dinner with Sam in May 2024", mode))][0] == may.id, mode
            assert [e.id for e in await fed.search(ask("dinner with Sam last week", mode))][0] == june.id, mode
            # control: no time in the question, the fresher of two equal matches first
            assert [e.id for e in await fed.search(ask("dinner with Sam", mode))][:2] == [june.id, may.id], mode
    finally:
        await fed.aclose()


async def test_a_weekday_in_the_query_matches_what_says_it_not_what_was_written_that_day(store):
    tuesday = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
    said = MemoryEntry(agent_id="a1", content="The deploy runs on Tuesdays.", created_at=tuesday, updated_at=tuesday)
    other = MemoryEntry(agent_id="a1", content="The staging DB is pg-stage-2.", created_at=tuesday, updated_at=tuesday)
    await store.write_many([said, other])
    found = await store.search(MemoryQuery(agent_id="a1", text="deploy Tuesdays", retrieval_mode=RetrievalMode.keyword))
    assert [e.id for e in found] == [said.id]
    dated = await store.search(MemoryQuery(agent_id="a1", text="December 2026", retrieval_mode=RetrievalMode.keyword))
    assert {e.id for e in dated} == {said.id, other.id}  # control: the date itself is still indexed


@pytest.mark.parametrize("day", [7, 12])
async def test_a_number_in_the_query_matches_as_a_number_not_as_the_day_a_row_was_written(tmp_path, offline_embedder, day):
    """Each row is indexed beside its date in words ("7 June 2024"): "room 7" found every row
    written on a 7th, and ranked one that also said "room" beside the one about room 7."""
    fed = await federation(tmp_path, offline_embedder)
    try:
        on_day = NOW.replace(day=day, hour=9)
        room = at(16, f"The projector in room {day} is broken again.")  # 4 June: no {day} in its date
        dated = [MemoryEntry(agent_id=AGENT, content=text, created_at=on_day, updated_at=on_day) for text in (
            "The meeting room on floor three has a new whiteboard.", "Lunch with the new intern went well.")]
        other_room = at(15, "Room 30 is booked for the offsite.")
        await fed.router.private.backend.write_many([room, *dated, other_room, *(at(1, text) for text in FRESH)])
        found = [e.id for e in await fed.search(ask(f"room {day}", RetrievalMode.keyword, limit=10))]
        assert found[0] == room.id and dated[1].id not in found, found
        assert {dated[0].id, other_room.id} <= set(found)  # control: "room" still finds every room
        for mode in (RetrievalMode.keyword, RetrievalMode.hybrid):  # semantic reads no date
            assert [e.id for e in await fed.search(ask(f"room {day}", mode))][0] == room.id, mode
        # control: a question that says the day as a date still finds what was written that day, and
        # an ordinal ("the 7th") its day, which the date words write without one ("7 June 2024")
        for question in (f"{day} June", f"what happened on June {day}, 2024", f"what happened on the {day}th?"):
            found = [e.id for e in await fed.search(ask(question, RetrievalMode.keyword, limit=10))]
            assert {d.id for d in dated} <= set(found), question
        found = [e.id for e in await fed.search(ask(f"June {day}th", RetrievalMode.keyword, limit=10))]
        assert set(found[:3]) == {*(d.id for d in dated), room.id}, found  # before June's other days (room: "7")
        assert room.id not in [e.id for e in await fed.search(ask(f"the {day}th floor", RetrievalMode.keyword))]
    finally:
        await fed.aclose()


async def test_the_reply_outranks_the_turn_that_asked_the_question(tmp_path, offline_embedder):
    fed = await federation(tmp_path, offline_embedder)
    try:
        asked = at(2, "Caroline: What kind of books do you keep in your library?", source_session_id="s1")
        reply = at(2 - 1e-5, "Melanie: Mostly kids' books: classics and stories from different cultures.",
                   source_session_id="s1")
        others = [at(4, text, source_session_id="s0") for text in (
            "Melanie: The library downtown closes early on Sundays.",
            "Caroline: I finished two books on the train this week.",
            "Melanie: My kids love the park near our house.",
        )]
        for entry in [*others, asked, reply]:
            await fed.write(entry)
        found = [e.id for e in await fed.search(ask("What kind of books does Melanie keep in her library?"))]
        assert found[0] == reply.id, found
        assert asked.id in found  # control: the asking turn is ranked lower, not dropped
    finally:
        await fed.aclose()


def test_a_match_that_asks_weighs_less_than_an_equal_one_that_says(tmp_path):
    from memory.adapters.sqlite import SQLiteAdapter
    from memory.federation.router import ASKING_WEIGHT, MemoryRouter

    router = MemoryRouter(private=SQLiteAdapter(tmp_path / "m.db"), decay_profiles=NO_REFRESH, clock=lambda: NOW)
    says, asks_ = at(1, "The library opens at nine."), at(1, "When does the library open?")
    ranked = router.rank([asks_, says], 2, relevance={says.id: 0.9, asks_.id: 1.0})
    assert [e.id for e, _ in ranked] == [says.id, asks_.id]
    assert ranked[1][1] == pytest.approx(ranked[0][1] / 0.9 * ASKING_WEIGHT)
    # control: a much stronger match that asks still leads, and a listing is not re-weighted
    assert router.rank([asks_, says], 1, relevance={says.id: 0.5, asks_.id: 1.0})[0][0].id == asks_.id
    listed = router.rank([asks_, says], 2)
    assert listed[0][1] == listed[1][1]


async def test_turns_at_one_instant_keep_the_order_they_were_written_in(store):
    """A history imported with one date per session: the turn before another is the one written before it."""
    from memory.sqlite import context
    from memory.sqlite.admission import where

    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    turns = [MemoryEntry(agent_id="a1", content=text, source_session_id="s1", created_at=when, updated_at=when)
             for text in ("Caroline: How was Lisbon?", "Melanie: Amazing!", "Caroline: Glad to hear it.")]
    earlier = when - timedelta(hours=1)  # written last, dated first: the date still decides
    opening = MemoryEntry(agent_id="a1", content="Caroline: Hi!", source_session_id="s1",
                          created_at=earlier, updated_at=earlier)
    for entry in [*turns, opening]:
        await store.write(entry)
    clause = where(MemoryQuery(agent_id="a1"))
    ids = [opening.id, *(t.id for t in turns)]
    previous = await store.run(context.previous_ids, ids, clause.sql, clause.params)
    assert previous == {turns[0].id: opening.id, turns[1].id: turns[0].id, turns[2].id: turns[1].id}
    # the context derived at write time is the turn written just before (the opening came later)
    contexts = await store.run(lambda raw: dict(raw.execute("SELECT id, context FROM memories")))
    assert contexts[turns[1].id] == turns[0].content and contexts[turns[2].id] == turns[1].content
    assert contexts[turns[0].id] == ""  # written first: no turn before it then
    # a rewrite of a turn keeps its place: its context is still the turn before it
    await store.write(turns[1].model_copy(update={"content": "Melanie: Amazing, truly!"}))
    contexts = await store.run(lambda raw: dict(raw.execute("SELECT id, context FROM memories")))
    assert contexts[turns[1].id] == turns[0].content


WITHHELD = {
    "hide": lambda store, entry: store.set_visibility([entry.id], Visibility.HIDDEN),
    "forget": lambda store, entry: store.archive([entry.id]),
    "purge": lambda store, entry: store.purge([entry.id]),
    "reword": lambda store, entry: store.update(entry.id, content="Caroline: Did you finish the report?"),
}


@pytest.mark.parametrize("action", list(WITHHELD))
async def test_a_turn_withheld_after_the_next_was_written_lends_it_no_words(tmp_path, offline_embedder, action):
    """The turn after a turn holds it as indexed context (keyword and vector): once the operator hides,
    forgets, purges or re-words that turn, neither its words nor its vector still find the next one."""
    from memory.adapters.sqlite import SQLiteAdapter

    fed = await federation(tmp_path, offline_embedder)
    secret = at(3, "Caroline: Did you finish the zanzibar merger dossier?", source_session_id="s2")
    after = at(3 - 1e-5, "Melanie: Not yet, it needs one more week.", source_session_id="s2")
    question = at(2, "Caroline: How was your trip to Lisbon?", source_session_id="s1")
    answer = at(2 - 1e-5, "Melanie: Amazing! The pastries were the best part.", source_session_id="s1")
    try:
        for entry in (secret, after, question, answer):
            await fed.write(entry)
        found = [e.id for e in await fed.search(ask("zanzibar merger dossier", RetrievalMode.keyword, limit=10))]
        assert after.id in found  # found through the turn before it, while that turn may be read
        path = private_store(fed).path
    finally:
        await fed.aclose()
    operator = SQLiteAdapter(path, actor="operator")  # as `arcana memory` edits: no vector search loaded
    try:
        await WITHHELD[action](operator, secret)
    finally:
        await operator.aclose()
    fed = await federation(tmp_path, offline_embedder)
    try:
        for mode in RetrievalMode:
            found = [e.id for e in await fed.search(ask("zanzibar merger dossier", mode, limit=10))]
            assert after.id not in found and secret.id not in found, (mode, found)
        # its vector, made with the withheld words, went with them; the next reindex embeds what it says now
        vector = fed.router.private.backend
        stale = 2 if action == "reword" else 1  # a re-worded turn's own vector was made of the old words too
        assert (await vector.status()).missing == stale
        assert (await vector.backfill()).embedded == stale and (await vector.status()).missing == 0
        # positive control, in the same store: a turn is still found through the turn before it
        found = [e.id for e in await fed.search(ask("trip to Lisbon", RetrievalMode.keyword, limit=10))]
        assert answer.id in found, found
        found = [e.id for e in await fed.search(ask("What did Melanie think of Lisbon?", RetrievalMode.semantic, limit=3))]
        assert answer.id in found, found
    finally:
        await fed.aclose()
