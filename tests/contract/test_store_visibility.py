"""Visibility through every read path, the keep-on-None write rule, and cheap
access tracking that never rewrites the FTS index."""

from __future__ import annotations

import hashlib

import pytest
from factories import entry

from memory.adapters.sqlite import SQLiteAdapter
from memory.query_terms import terms
from memory.sqlite.admission import where
from memory.sqlite.rows import admitted_rows
from memory.types import Audience, MemoryQuery, Visibility


@pytest.fixture
async def three(store):
    """One entry per visibility, all matching the word 'lantern'."""
    made = {
        v: entry(f"lantern note that is {v.value}", visibility=v)
        for v in (Visibility.VISIBLE, Visibility.PRIVATE, Visibility.HIDDEN)
    }
    await store.write_many(list(made.values()))
    return made


@pytest.mark.sqlite_only("its semantic-leg step runs SQLite admission SQL through store.run")
async def test_recall_reads_never_return_private_or_hidden(store, three):
    visible = three[Visibility.VISIBLE].id
    query = MemoryQuery(text="lantern")
    assert [e.id for e in await store.search(query)] == [visible]
    assert [e.id for e in await store.search(MemoryQuery())] == [visible]
    assert [e.id for e in await store.keyword_candidates(query, 10)] == [visible]
    assert [e.id for e in (await store.keyword_leg(query, terms(query.text), 10))[0]] == [visible]
    assert list(await store.admitted_by_id(MemoryQuery(), [e.id for e in three.values()])) == [visible]
    seqs = await store.run(lambda raw: [r[0] for r in raw.execute("SELECT seq FROM memories")])
    clause = where(MemoryQuery())  # the semantic leg's way in: KNN rowids, then admission
    assert [r["id"] for r in await store.run(admitted_rows, "seq", seqs, clause.sql, clause.params)] == [visible]
    for v, e in three.items():
        got = await store.get(e.id)
        assert (got is not None) == (v is Visibility.VISIBLE), v


async def test_get_many_admits_each_id_as_get_does(store, three):
    """A bulk import's one-read lookup: the same rows as a get per id, archived ones gone too."""
    ids = [e.id for e in three.values()] + ["never-stored"]
    found = await store.get_many(ids)
    assert list(found) == [three[Visibility.VISIBLE].id]  # the control: a visible row is found
    assert found[three[Visibility.VISIBLE].id] == await store.get(three[Visibility.VISIBLE].id)
    await store.archive([three[Visibility.VISIBLE].id])
    assert await store.get_many(ids) == {}


async def test_operator_reads_show_every_visibility(store, three):
    everything = {e.id for e in three.values()}
    found = await store.search(MemoryQuery(text="lantern"), audience=Audience.OPERATOR)
    assert {e.id for e in found} == everything
    for v, e in three.items():
        got = await store.get(e.id, audience=Audience.OPERATOR)
        assert got.visibility is v


async def test_archived_is_hidden_from_recall_and_from_plain_operator_reads(store, three):
    visible = three[Visibility.VISIBLE]
    await store.archive([visible.id])
    assert await store.search(MemoryQuery(text="lantern")) == []
    assert await store.get(visible.id, audience=Audience.OPERATOR) is None
    assert (await store.get(visible.id, audience=Audience.OPERATOR, include_archived=True)).archived
    await store.restore([visible.id])
    assert [e.id for e in await store.search(MemoryQuery(text="lantern"))] == [visible.id]


async def test_resave_without_visibility_keeps_the_stored_flag(store):
    quarantined = entry("ember quarantined fact")
    await store.write(quarantined)
    assert [e.id for e in await store.search(MemoryQuery(text="ember"))] == [quarantined.id]  # control
    await store.set_visibility([quarantined.id], Visibility.HIDDEN)
    assert await store.search(MemoryQuery(text="ember")) == []
    # An automatic re-save (no visibility) with changed content must not lift it.
    resaved = quarantined.model_copy(update={"content": "ember quarantined fact, reworded", "visibility": None})
    assert await store.write_many([resaved]) == ["update"]
    assert await store.search(MemoryQuery(text="ember")) == []
    stored = await store.get(quarantined.id, audience=Audience.OPERATOR)
    assert stored.visibility is Visibility.HIDDEN and stored.content.endswith("reworded")
    # An explicit value overrides, and the ledger records it.
    await store.write(resaved.model_copy(update={"visibility": Visibility.VISIBLE}))
    assert [e.id for e in await store.search(MemoryQuery(text="ember"))] == [quarantined.id]
    history = await store.history(quarantined.id)
    assert [r.op for r in history] == ["insert", "visibility", "update", "visibility"]
    assert (history[-1].before["visibility"], history[-1].after["visibility"]) == ("hidden", "visible")


async def test_resave_never_brings_back_an_archived_row(store):
    forgotten, control = entry("ember forgotten fact"), entry("ember control fact")
    await store.write_many([forgotten, control])
    await store.archive([forgotten.id])
    # A re-save of the same entry (a re-run import), and one with changed words, leave it archived.
    assert await store.write_many([forgotten, control]) == ["noop", "noop"]
    assert await store.write_many([forgotten.model_copy(update={"content": "ember forgotten fact, reworded"})]) == ["update"]
    assert [e.id for e in await store.search(MemoryQuery(text="ember"))] == [control.id]  # control still answers
    stored = await store.get(forgotten.id, audience=Audience.OPERATOR, include_archived=True)
    assert stored.archived and stored.content.endswith("reworded")
    await store.restore([forgotten.id])  # the one way back
    assert {e.id for e in await store.search(MemoryQuery(text="ember"))} == {forgotten.id, control.id}


async def test_new_entry_without_visibility_is_visible(store):
    fresh = entry("plain new fact")
    await store.write(fresh)
    assert (await store.get(fresh.id)).visibility is Visibility.VISIBLE


async def test_explicit_private_on_write_is_recorded(store):
    secret = entry("private diary line", visibility=Visibility.PRIVATE)
    await store.write(secret)
    [record] = await store.history(secret.id)
    assert record.op == "insert" and record.after["visibility"] == "private"


# -- access tracking -----------------------------------------------------------


def _fts_fingerprint(raw) -> str:
    digest = hashlib.sha256()
    for table in ("memories_fts_data", "memories_fts_idx", "memories_fts_docsize"):
        for row in raw.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
            digest.update(repr(tuple(row)).encode())
    return digest.hexdigest()


async def test_access_tracking_does_not_touch_the_fts_index(tmp_path):
    path = tmp_path / "tracking.db"
    store = SQLiteAdapter(path)
    entries = [entry(f"harbour log {i} with shared words") for i in range(50)]
    await store.write_many(entries)
    before = await store.run(_fts_fingerprint)
    changes_before = await store.run(lambda raw: raw.total_changes)

    found = await store.search(MemoryQuery(text="harbour", limit=50))
    assert len(found) == 50
    await store.aclose()  # flushes the buffered hits

    store = SQLiteAdapter(path)
    after = await store.run(_fts_fingerprint)
    assert after == before
    counts = await store.run(lambda raw: raw.execute("SELECT min(access_count), max(access_count) FROM memories").fetchone())
    assert tuple(counts) == (1, 1)
    assert all(e.last_accessed_at is not None for e in await store.search(MemoryQuery(limit=50), audience=Audience.OPERATOR))

    # Positive control: a content change does rewrite the index, so the fingerprint can see it.
    await store.update(entries[0].id, content="harbour log rewritten")
    assert await store.run(_fts_fingerprint) != before
    await store.aclose()
    assert changes_before >= 50  # the writes themselves were counted on that connection


@pytest.mark.sqlite_only("SQLite's buffered access hits")
async def test_access_flush_changes_only_the_touched_rows(store):
    """total_changes counts trigger work too: a flush of N hits must cost N row changes (and one
    for the day's recall_activity row)."""
    await store.write_many([entry(f"beacon {i}") for i in range(20)])
    await store.search(MemoryQuery(text="beacon", limit=20))
    start = await store.run(lambda raw: raw.total_changes)
    await store._flush_hits(store.connection)
    assert await store.run(lambda raw: raw.total_changes) - start == 20 + 1


@pytest.mark.sqlite_only("SQLite's buffered access hits")
async def test_searches_do_not_write_until_the_buffer_fills(store):
    await store.write_many([entry(f"quiet read {i}") for i in range(5)])
    start = await store.run(lambda raw: raw.total_changes)
    for _ in range(10):
        await store.search(MemoryQuery(text="quiet"))
    assert await store.run(lambda raw: raw.total_changes) == start


@pytest.mark.sqlite_only("SQLite's buffered access hits")
async def test_listing_audience_is_visible_only_and_not_a_recall_hit(store, three):
    visible = three[Visibility.VISIBLE]
    hidden_many = [entry(f"lantern hidden {i}", visibility=Visibility.HIDDEN, importance=0.99) for i in range(20)]
    await store.write_many(hidden_many)
    # The hidden rows rank first by importance; the visible one must still make the page.
    listed = await store.search(MemoryQuery(limit=5), audience=Audience.LISTING)
    assert [e.id for e in listed] == [visible.id]
    await store.archive([visible.id])
    assert await store.search(MemoryQuery(limit=5), audience=Audience.LISTING) == []
    archived = await store.search(MemoryQuery(limit=5), audience=Audience.LISTING, include_archived=True)
    assert [e.id for e in archived] == [visible.id]
    await store._flush_hits(store.connection)
    stored = await store.get(visible.id, audience=Audience.OPERATOR, include_archived=True)
    assert stored.access_count == 0  # listing is not recall
    await store.restore([visible.id])
    await store.search(MemoryQuery(text="lantern"))
    await store._flush_hits(store.connection)
    assert (await store.get(visible.id)).access_count == 1  # positive control: recall is
