"""The engine's half of a hybrid recall (memory/adapters/hybrid.py), alike in both engines: the
keyword leg with its coverage, and each candidate's turn context (the turn before it, its share
of the query's word pairs), inside the admission rule."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from engines import ENGINES, open_store
from factories import entry

from memory.adapters.vector import VectorAdapter
from memory.embedding.gateway import EmbeddingGateway
from memory.query_terms import terms
from memory.types import MemoryQuery, RetrievalMode, Visibility

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


async def session(store):
    """One session imported with a single date (every turn the same instant), a hidden turn and another session."""
    turns = {
        "went": entry("Caroline: I went to a support group yesterday.", source_session_id="s1", created_at=SAID),
        "asked": entry("Melanie: How did the group go?", source_session_id="s1", created_at=SAID),
        "hidden": entry("Caroline: The support group meets on Mondays.", source_session_id="s1", created_at=SAID),
        "reply": entry("Caroline: It went well, the support there helps.", source_session_id="s1", created_at=SAID),
        "elsewhere": entry("Caroline: a support group for painters", source_session_id="s2", created_at=SAID),
    }
    for turn in turns.values():  # one at a time: insertion order is the session's order
        await store.write(turn)
    await store.set_visibility([turns["hidden"].id], Visibility.HIDDEN)
    return turns


async def test_turn_context_reads_the_turn_before_and_word_pairs_among_admitted_rows_only(store):
    t = await session(store)
    query = MemoryQuery(text="When did Caroline go to the support group?")
    ids = [e.id for e in t.values()]
    previous, pairs = await store.turn_context(query, terms(query.text), ids)
    # the hidden turn is skipped: the reply's previous admitted turn is the question
    assert previous == {t["asked"].id: t["went"].id, t["reply"].id: t["asked"].id}
    # pairs (caroline, go) (go, support) (support, group): only "support group" is said together
    assert pairs == {t["went"].id: 1 / 3, t["elsewhere"].id: 1 / 3}  # the hidden row says it too: no share
    assert await store.turn_context(query, terms(query.text), []) == ({}, {})


async def test_the_keyword_leg_reports_its_best_hits_coverage(store):
    t = await session(store)
    query = MemoryQuery(text="support group painters")
    hits, coverage = await store.keyword_leg(query, terms(query.text), 10)
    assert hits[0].id == t["elsewhere"].id and coverage == 1.0
    assert t["hidden"].id not in {h.id for h in hits} and t["went"].id in {h.id for h in hits}
    assert await store.keyword_leg(query, terms("?!"), 10) == ([], 0.0)


async def test_a_plain_number_counts_in_coverage_and_pairs_only_where_the_row_says_it(store):
    """A row's date in words ("7 June 2024") is no match for "room 7": a PostgreSQL tier counted the
    row written on a 7th as covering "7" and holding the pair "room 7" (its content's last word next
    to its date's first), which SQLite, searching the date words apart, never did."""
    booked = entry("the offsite is in room 7", created_at=datetime(2024, 6, 4, 9, tzinfo=timezone.utc))
    board = entry("a whiteboard for the meeting room", created_at=datetime(2024, 6, 7, 9, tzinfo=timezone.utc))
    await store.write_many([booked, board])
    query = MemoryQuery(text="meeting room 7")
    hits, coverage = await store.keyword_leg(query, terms(query.text), 10)
    assert {h.id for h in hits} == {board.id, booked.id} and coverage == pytest.approx(2 / 3)  # either holds two words
    _, pairs = await store.turn_context(query, terms(query.text), [booked.id, board.id])
    assert pairs == {booked.id: 1 / 2, board.id: 1 / 2}  # (room, 7) in the first, (meeting, room) in the second
    # positive control: said as a date, the day is found in the date words
    dated = MemoryQuery(text="meeting on June 7")
    hits, coverage = await store.keyword_leg(dated, terms(dated.text), 10)
    assert hits[0].id == board.id and coverage == 1.0


@pytest.fixture(params=ENGINES)
async def embedded(request, tmp_path, offline_embedder):
    """A store that searches by vector too, with the real offline model: SQLite through its
    VectorAdapter, PostgreSQL by itself."""
    gateway = EmbeddingGateway([offline_embedder])
    if request.param == "sqlite":
        adapter = VectorAdapter(open_store("sqlite", tmp_path, request), gateway)
    else:
        adapter = open_store("postgres", tmp_path, request, gateway=gateway)
    yield adapter
    await adapter.aclose()


@pytest.mark.parametrize("text", ["?!", "\U0001f389"])
async def test_a_hybrid_query_with_no_words_lists_as_keyword_mode_does(embedded, text):
    """A PostgreSQL pool answered a hybrid (the default) "?!" with nothing, searching the vector of
    "?!", where a SQLite one listed its memories as keyword mode does. Both list now; a query with
    words is still searched by both legs (the control)."""
    cat = entry("The cat is named Biscuit")
    await embedded.write_many([entry("Deploys happen on Tuesdays at noon"), cat])
    listed = await embedded.search(MemoryQuery(text=text, retrieval_mode=RetrievalMode.keyword))
    assert len(listed) == 2
    hybrid = await embedded.search(MemoryQuery(text=text, retrieval_mode=RetrievalMode.hybrid))
    assert [e.id for e in hybrid] == [e.id for e in listed]
    searched = await embedded.search(MemoryQuery(text="biscuit", retrieval_mode=RetrievalMode.hybrid))
    assert searched[0].id == cat.id and set(searched[0].matched_by) == {"semantic", "keyword"}


async def test_session_neighbours_are_the_admitted_turns_either_side(store):
    """A PostgreSQL pool had no session neighbours, so recall's neighbour step (the reply next to the
    turn that matched) left a server pool's answer short of a SQLite pool's. The hidden turn is
    skipped on both; a row of no session has none; another session is never a neighbour."""
    t = await session(store)
    query = MemoryQuery(text="support group")
    loose = entry("a support group note of no session", created_at=SAID)
    await store.write(loose)
    found = await store.session_neighbours(query, [t["asked"].id, t["reply"].id, t["elsewhere"].id, loose.id])
    assert {hit: [e.id for e in near] for hit, near in found.items() if near} == {
        t["asked"].id: [t["went"].id, t["reply"].id],  # the hidden turn between asked and reply is skipped
        t["reply"].id: [t["asked"].id],
    }
    assert await store.session_neighbours(MemoryQuery(agent_id="nobody"), [t["asked"].id]) == {}
