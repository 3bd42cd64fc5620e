"""Keyword search (BM25 + filters) and filter-and-order on a real store.

Every exclusion is paired with a positive control in the same store, so a
filter that dropped everything would fail.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.types import MemoryQuery, MemoryScope, MemoryType
from factories import entry




def ids(entries) -> list[str]:
    return [e.id for e in entries]


async def test_bm25_orders_denser_matches_first(store):
    weak = entry("a long note that mentions coffee once among many other unrelated words about trains and weather")
    strong = entry("coffee coffee coffee")
    middle = entry("coffee and tea, coffee please")
    other = entry("nothing relevant here")
    await store.write_many([weak, strong, middle, other])
    found = await store.search(MemoryQuery(text="coffee"))
    assert ids(found) == [strong.id, middle.id, weak.id]
    assert found[0].score > found[1].score > found[2].score > 0
    assert all(e.matched_by == ["keyword"] for e in found)


async def test_search_matches_tags_and_stems(store):
    tagged = entry("a note about the weekend", tags=["gardening"])
    stemmed = entry("she was running late")
    await store.write_many([tagged, stemmed])
    assert ids(await store.search(MemoryQuery(text="gardening"))) == [tagged.id]
    assert ids(await store.search(MemoryQuery(text="runs"))) == [stemmed.id]  # porter: run


async def test_search_respects_limit(store):
    await store.write_many([entry(f"limit probe number {i}") for i in range(7)])
    assert len(await store.search(MemoryQuery(text="probe", limit=3))) == 3


@pytest.mark.parametrize(
    "query_fields, wanted_fields, unwanted_fields",
    [
        ({"scope": MemoryScope.SHARED}, {"scope": MemoryScope.SHARED, "pool_name": "team"}, {}),
        ({"types": [MemoryType.PREFERENCE]}, {"type": MemoryType.PREFERENCE}, {"type": MemoryType.EPISODIC}),
        ({"tags": ["work", "urgent"]}, {"tags": ["work", "urgent", "x"]}, {"tags": ["work"]}),
        ({"min_confidence": 0.8}, {"confidence": 0.8}, {"confidence": 0.79}),
        ({"exclude_conflicts": True}, {}, {"conflict_with": "other-id"}),
        ({"exclude_conflicts": True}, {}, {"superseded_by": "newer-id"}),
        ({"pool_name": "team"}, {"pool_name": "team", "scope": MemoryScope.SHARED}, {"pool_name": "other", "scope": MemoryScope.SHARED}),
        ({"agent_id": "a1"}, {}, {"agent_id": "a2"}),
    ],
)
async def test_metadata_filters_with_and_without_text(store, query_fields, wanted_fields, unwanted_fields):
    wanted = entry("filter probe kept", **wanted_fields)
    unwanted = entry("filter probe dropped", **unwanted_fields)
    await store.write_many([wanted, unwanted])
    # Positive control: with no filter both are found.
    assert set(ids(await store.search(MemoryQuery(text="probe")))) == {wanted.id, unwanted.id}
    assert ids(await store.search(MemoryQuery(text="probe", **query_fields))) == [wanted.id]
    assert ids(await store.search(MemoryQuery(**query_fields))) == [wanted.id]


async def test_a_tag_filter_with_a_nul_matches_nothing_on_either_engine(store):
    """PostgreSQL refused the parameter ("invalid byte sequence"), so a hostile tag filter (an MCP
    `list`) failed a server pool's read where SQLite answered; no stored tag holds a NUL."""
    tagged = entry("a tagged fact", tags=["work"])
    await store.write_many([tagged, entry("an untagged fact")])
    assert ids(await store.search(MemoryQuery(tags=["work"]))) == [tagged.id]  # positive control
    for text in (None, "fact"):
        assert await store.search(MemoryQuery(text=text, tags=["work", "wo\x00rk"])) == []
        assert await store.search(MemoryQuery(text=text, tags=["\x00"])) == []


async def test_time_range_filters(store):
    now = datetime.now(UTC)
    old = entry("timeline probe old", created_at=now - timedelta(days=30))
    mid = entry("timeline probe mid", created_at=now - timedelta(days=10))
    new = entry("timeline probe new", created_at=now)
    await store.write_many([old, mid, new])
    assert len(await store.search(MemoryQuery(text="timeline"))) == 3
    assert set(ids(await store.search(MemoryQuery(text="timeline", since=now - timedelta(days=15))))) == {mid.id, new.id}
    assert set(ids(await store.search(MemoryQuery(text="timeline", until=now - timedelta(days=15))))) == {old.id}
    window = MemoryQuery(text="timeline", since=now - timedelta(days=20), until=now - timedelta(days=5))
    assert ids(await store.search(window)) == [mid.id]


async def test_no_text_is_filter_and_order(store):
    now = datetime.now(UTC)
    low_new = entry("low new", importance=0.2, created_at=now)
    high_old = entry("high old", importance=0.9, created_at=now - timedelta(days=2))
    high_new = entry("high new", importance=0.9, created_at=now - timedelta(days=1))
    pinned_low = entry("pinned low", importance=0.1, pinned=True, created_at=now - timedelta(days=9))
    await store.write_many([low_new, high_old, high_new, pinned_low])
    expected = [pinned_low.id, high_new.id, high_old.id, low_new.id]
    assert ids(await store.search(MemoryQuery())) == expected
    # Text made only of punctuation/operators has no words: same path, no error.
    assert ids(await store.search(MemoryQuery(text='" ( * : - ^'))) == expected
    found = await store.search(MemoryQuery(limit=2))
    assert ids(found) == expected[:2] and all(e.score is None for e in found)


async def test_stopword_only_query_still_searches(store):
    who = entry("who am i? i am the archivist")
    other = entry("unrelated text")
    await store.write_many([who, other])
    assert ids(await store.search(MemoryQuery(text="who am I"))) == [who.id]


async def test_words_are_split_and_folded_alike_on_both_engines(store):
    """FTS5's unicode61 reads "bob@example.com" as three words and "café" as "cafe"; PostgreSQL's
    default parser read the address as one token and kept the accent, so these found nothing there."""
    mail = entry("Mail bob@example.com about the résumé from Zürich, version 3.14")
    other = entry("a note about something else entirely")
    await store.write_many([mail, other])
    for text in ("résumé", "Zürich", "bob"):  # positive control: the words as written
        assert ids(await store.search(MemoryQuery(text=text))) == [mail.id], text
    for text in ("resume", "zurich", "example", "com", "14"):
        assert ids(await store.search(MemoryQuery(text=text))) == [mail.id], text
    assert ids(await store.search(MemoryQuery(text="entirely"))) == [other.id]


async def test_stopwords_are_dropped_when_content_words_exist(store):
    target = entry("the kettle is blue")
    noise = [entry(f"the {w} is the thing") for w in ("cat", "dog", "car", "sun", "moon")]
    await store.write_many([target, *noise])
    assert ids(await store.search(MemoryQuery(text="is the kettle"))) == [target.id]


async def test_filters_that_reject_the_best_matches_still_fill_the_page(store):
    """The keyword query ranks a window of FTS matches first; filters that reject
    the whole first window must widen it, not return a short page."""
    strong = [entry("anchor anchor anchor strong", type=MemoryType.EPISODIC) for _ in range(300)]
    weak = [
        entry(f"anchor weak {'filler ' * i}", type=MemoryType.PREFERENCE) for i in range(15)
    ]
    await store.write_many([*strong, *weak])
    found = await store.search(MemoryQuery(text="anchor", types=[MemoryType.PREFERENCE], limit=10))
    assert ids(found) == [e.id for e in weak[:10]]  # shorter text, higher BM25
    # One admitted row inside a full first window: still widen for the rest.
    lone = entry("anchor anchor anchor anchor strong", type=MemoryType.PREFERENCE)
    await store.write(lone)
    found = await store.search(MemoryQuery(text="anchor", types=[MemoryType.PREFERENCE], limit=10))
    assert ids(found) == [lone.id] + [e.id for e in weak[:9]]
    few = await store.search(MemoryQuery(text="anchor", types=[MemoryType.PREFERENCE], limit=50))
    assert set(ids(few)) == {lone.id, *(e.id for e in weak)}
    assert len(await store.search(MemoryQuery(text="anchor", limit=10))) == 10


async def test_a_question_about_a_month_finds_what_was_said_then(store):
    """Each memory is indexed with its date in words (man/recall.md), on either engine: a pool on a
    PostgreSQL server answered "May" or "8 May 2023" with nothing, where a SQLite pool found the day's memories."""
    said = entry("we signed the lease", created_at=datetime(2023, 5, 8, 12, tzinfo=UTC))
    later = entry("we painted the hall", created_at=datetime(2024, 6, 9, 23, 59, tzinfo=UTC))
    await store.write_many([said, later])
    assert ids(await store.search(MemoryQuery(text="May"))) == [said.id]
    assert ids(await store.search(MemoryQuery(text="8 May 2023")))[:1] == [said.id]
    assert ids(await store.search(MemoryQuery(text="June 2024")))[:1] == [later.id]
    assert ids(await store.search(MemoryQuery(text="lease"))) == [said.id]  # the content is indexed as before


async def test_the_date_indexed_is_the_stored_utc_day_whatever_offset_the_writer_gave(store):
    """A time given at -02:00 late on 31 May is 1 June in UTC, the time the store keeps. SQLite
    indexed the writer's local day ("May") until the row was re-written ("June"), and a PostgreSQL
    tier the UTC one: the same memory answered another month on each engine and after an edit."""
    late = entry("the late night note", created_at=datetime(2023, 5, 31, 23, 30, tzinfo=timezone(timedelta(hours=-2))))
    may = entry("the lunch note", created_at=datetime(2023, 5, 31, 12, tzinfo=UTC))
    await store.write_many([late, may])
    assert ids(await store.search(MemoryQuery(text="June"))) == [late.id]
    assert ids(await store.search(MemoryQuery(text="31 May"))) == [may.id]  # the positive control: a May row
    await store.write((await store.get(late.id)).model_copy(update={"content": "the late night note, edited"}))
    assert ids(await store.search(MemoryQuery(text="June"))) == [late.id]


async def test_a_query_of_stop_words_only_is_stemmed_as_any_other(store):
    """ "being" or "its" alone are searched for all the same, and stemmed: a PostgreSQL tier matched
    them unstemmed, so they found nothing where SQLite found "to be" and "it's"."""
    be = entry("to be or not to be")
    its = entry("it's raining")
    other = entry("a cat on the mat")
    await store.write_many([be, its, other])
    assert ids(await store.search(MemoryQuery(text="being"))) == [be.id]
    assert ids(await store.search(MemoryQuery(text="its"))) == [its.id]
    assert ids(await store.search(MemoryQuery(text="be"))) == [be.id]  # the unstemmed word, as before


async def test_a_memory_as_long_as_the_limit_allows_is_stored_and_searched(store):
    """A text of distinct words makes a keyword vector about three times its size, and PostgreSQL's
    holds 1 MiB: a server tier refused a 900 kB memory that max_content_bytes (1 MiB) allows and SQLite
    stored. Its start is found by keyword on either engine, and a stop-word query still runs."""
    long = entry("the zeppelin " + " ".join(f"w{i:06d}" for i in range(120_000)))
    short = entry("a zeppelin over the harbour")
    await store.write_many([long])
    await store.write(short)
    assert len(long.content.encode()) > 900_000
    assert (await store.get(long.id)).content == long.content
    assert set(ids(await store.search(MemoryQuery(text="zeppelin")))) == {long.id, short.id}
    assert ids(await store.search(MemoryQuery(text="w000001"))) == [long.id]
    assert long.id in ids(await store.search(MemoryQuery(text="the")))


async def test_a_common_word_still_finds_its_newest_match(store, monkeypatch):
    """PostgreSQL ranks a bounded set of a word's matches (KEYWORD_CANDIDATES, at least 50 per
    wanted row) and took them in table order: the oldest. "standup" on a pool of 1,500 standup
    notes never found the one just written, which SQLite ranks first. Newest written first now."""
    from memory.postgres import search as pg_search

    monkeypatch.setattr(pg_search, "KEYWORD_CANDIDATES", 10)  # the bound: max(10, 50 x limit 1) = 50
    # Dated on a day whose words hold no "7", so the control below needs nothing of the date rule
    # (a plain number no longer matches a row's date words, test below).
    day = datetime(2024, 5, 2, 9, tzinfo=UTC)
    old = [entry(f"daily standup notes for sprint day {i} with the usual updates", created_at=day + timedelta(minutes=i))
           for i in range(60)]
    await store.write_many(old)
    # written last, dated first (an import): last in table order and in the date index alike, so no
    # plan of the unordered bound reached it
    new = entry("standup moved", created_at=old[0].created_at - timedelta(days=1))
    await store.write(new)
    assert ids(await store.search(MemoryQuery(text="standup", limit=1))) == [new.id]
    assert ids(await store.search(MemoryQuery(text="standup moved", limit=1))) == [new.id]
    # positive control: an old note is still found by its own rare word, beside the common one
    assert ids(await store.search(MemoryQuery(text="standup 7", limit=1))) == [old[7].id]


async def test_a_plain_number_is_not_matched_against_the_day_a_row_was_written(store):
    """Each row is indexed beside its date in words ("7 June 2024"). SQLite searches a number the
    query does not say as a date ("room 7") in the content only; a PostgreSQL tier, whose date words
    shared one vector with the content, found every row written on a 7th and ranked one that merely
    said "room" as high as the one about room 7."""
    room = entry("room 7 is booked for the offsite", created_at=datetime(2024, 6, 4, 9, tzinfo=UTC))
    on_the_7th = datetime(2024, 6, 7, 9, tzinfo=UTC)
    lunch = entry("lunch with the new intern went well", created_at=on_the_7th)
    board = entry("the meeting room has a new whiteboard", created_at=on_the_7th)
    await store.write_many([room, lunch, board])
    assert ids(await store.search(MemoryQuery(text="room 7"))) == [room.id, board.id]
    assert ids(await store.search(MemoryQuery(text="7"))) == [room.id]
    # positive controls: a number said as a date still finds what was written that day, and a month
    # however stemmed ("Junes": june)
    for question in ("June 7", "7 June", "what happened on the 7th?", "in 2024", "Junes"):
        assert {lunch.id, board.id} <= set(ids(await store.search(MemoryQuery(text=question)))), question


async def _outside_edit(store, assignment: str, entry_id: str) -> None:
    """An UPDATE no Arcana path makes (a hand edit of the file or on the server): never ledgered."""
    from memory.adapters.postgres import PostgresAdapter

    sql = f"UPDATE memories SET {assignment} WHERE id = "
    if isinstance(store, PostgresAdapter):
        await store._call(lambda conn: conn.execute(sql + "$1", entry_id))
    else:
        await store.run(lambda raw: raw.execute(sql + "?", (entry_id,)))


@pytest.mark.parametrize("damage", ["type = 'gossip'", "tags = '[not json'", "tags = '{\"a\": 1}'"])
async def test_a_row_an_outside_edit_left_unreadable_is_left_out_of_reads_on_either_engine(store, damage):
    """SQLite leaves such a row out of searches and listings (`arcana doctor` names it; `memory show`
    names it too); a server tier failed every read that met it, so one hand-edited row took the whole
    pool out of every recall ('cannot be read')."""
    from memory.errors import UnreadableRowError
    from memory.query_terms import terms

    bad = entry("tea is served at four", tags=["house"])
    good = entry("tea and metric units", tags=["house"])  # the positive control, beside it in every read
    await store.write_many([bad, good])
    await _outside_edit(store, damage, bad.id)
    for query in (MemoryQuery(text="tea"), MemoryQuery(), MemoryQuery(tags=["house"]), MemoryQuery(text="tea", tags=["house"])):
        assert ids(await store.search(query)) == [good.id], query
        assert ids(await store.page(query)) == [good.id], query
    assert ids((await store.page_after(MemoryQuery()))[0]) == [good.id]
    assert list(await store.get_many([bad.id, good.id])) == [good.id]
    assert ids((await store.keyword_leg(MemoryQuery(text="tea"), terms("tea"), 10))[0]) == [good.id]
    with pytest.raises(UnreadableRowError, match=bad.id):  # asked for by id, it is named
        await store.get(bad.id)
