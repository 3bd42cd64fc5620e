"""Store-level behaviour on both engines (the ``store`` fixture of tests/contract/conftest.py):
admission as one table of cases, search, ledger, prune, pins, and PostgreSQL's own — real SQLite
files and a real PostgreSQL + pgvector server (tests/support/pg_server.py)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import pytest
from embed_server import hashed_vectors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_ledger import MUTATORS, SQLITE_ONLY_MUTATORS

from memory.adapters.postgres import PostgresAdapter
from memory.audit import AuditLog
from memory.embedding.gateway import EmbeddingGateway
from memory.embedding.ollama import OllamaEmbedder
from memory.errors import MemoryStorageError, SchemaTooNewError
from memory.postgres import bulk
from memory.query_terms import terms
from memory.sqlite.rows import COLUMNS
from memory.types import Audience, MemoryEntry, MemoryQuery, MemoryScope, RetrievalMode, Visibility

T0 = datetime(2020, 1, 1, tzinfo=UTC)


def entry(content: str, **fields) -> MemoryEntry:
    return MemoryEntry(**{"agent_id": "a1", "content": content, **fields})


def ids(entries) -> list[str]:
    return [e.id for e in entries]


# -- admission: one table of cases, both engines -------------------------------

# name -> fields of an entry; every entry contains the word "beacon".
ROWS = {
    "visible": {},
    "private": {"visibility": Visibility.PRIVATE},
    "hidden": {"visibility": Visibility.HIDDEN},
    "archived": {"archived": True},
    "archived_private": {"archived": True, "visibility": Visibility.PRIVATE},
    "other_agent": {"agent_id": "a2"},
    "conflicted": {"conflict_with": "x"},
    "superseded": {"superseded_by": "y"},
    "tagged": {"tags": ["red", "blue"]},
    "shared": {"scope": MemoryScope.SHARED, "pool_name": "team"},
    # A fact that held from T0 to T0+10d, and the version that replaced it then.
    "ended": {"created_at": T0, "valid_from": T0, "valid_to": T0 + timedelta(days=10), "superseded_by": "its-successor"},
    "successor": {"created_at": T0 + timedelta(days=10), "valid_from": T0 + timedelta(days=10), "supersedes": "ended"},
}
CURRENT = {"visible", "other_agent", "conflicted", "superseded", "tagged", "shared", "successor"}
# (audience, include_archived, query fields) -> the rows admitted; every case admits something.
CASES = [
    (Audience.RECALL, False, {}, CURRENT),
    (Audience.RECALL, True, {}, CURRENT),
    (Audience.LISTING, False, {}, CURRENT),
    (Audience.LISTING, True, {}, CURRENT | {"archived"}),
    (Audience.OPERATOR, False, {}, set(ROWS) - {"archived", "archived_private"}),
    (Audience.OPERATOR, True, {}, set(ROWS)),
    (Audience.RECALL, False, {"agent_id": "a2"}, {"other_agent"}),
    (Audience.RECALL, False, {"exclude_conflicts": True}, {"visible", "other_agent", "tagged", "shared", "successor"}),
    (Audience.RECALL, False, {"tags": ["blue"]}, {"tagged"}),
    (Audience.RECALL, False, {"tags": ["blue", "green"]}, set()),
    (Audience.RECALL, False, {"scope": MemoryScope.SHARED, "pool_name": "team"}, {"shared"}),
    (Audience.OPERATOR, True, {"agent_id": "a1", "scope": MemoryScope.PRIVATE},
     set(ROWS) - {"other_agent", "shared"}),
    # as of a time: what was current then (valid, not yet superseded, already written)
    (Audience.RECALL, False, {"as_of": T0 + timedelta(days=5)}, {"ended"}),
    (Audience.LISTING, False, {"as_of": T0 + timedelta(days=5)}, {"ended"}),
    (Audience.RECALL, False, {"as_of": T0 + timedelta(days=10)}, {"successor"}),  # valid_to is exclusive
    (Audience.RECALL, False, {"as_of": T0 + timedelta(days=15), "agent_id": "a1"}, {"successor"}),
    (Audience.RECALL, False, {"as_of": T0 - timedelta(days=1)}, set()),
]


@pytest.mark.parametrize("audience, archived, fields, admitted", CASES)
async def test_the_same_admission_cases_on_both_engines(store, audience, archived, fields, admitted):
    made = {name: entry(f"beacon row {name}", **spec) for name, spec in ROWS.items()}
    await store.write_many(list(made.values()))
    names = {e.id: name for name, e in made.items()}
    # Positive control: the operator sees every row, so a predicate that drops everything fails.
    everything = await store.search(MemoryQuery(text="beacon", limit=50), audience=Audience.OPERATOR, include_archived=True)
    assert {names[e.id] for e in everything} == set(ROWS)
    for text in ("beacon", None):
        found = await store.search(MemoryQuery(text=text, limit=50, **fields), audience=audience, include_archived=archived)
        assert {names[e.id] for e in found} == admitted, text
    if not fields:
        got = {n for n, e in made.items() if await store.get(e.id, audience=audience, include_archived=archived)}
        assert got == admitted
    if audience is Audience.RECALL and not archived:
        leg, _ = await store.keyword_leg(MemoryQuery(text="beacon", **fields), terms("beacon"), 50)
        assert {names[e.id] for e in leg} == admitted
        by_id = await store.admitted_by_id(MemoryQuery(**fields), [e.id for e in made.values()])
        assert {names[i] for i in by_id} == admitted


# -- the ledger ----------------------------------------------------------------


# reinforce included: a restatement reaches a promoted copy on a server global tier.
@pytest.mark.parametrize("name", [name for name in MUTATORS if name not in SQLITE_ONLY_MUTATORS])
async def test_every_mutator_leaves_its_ledger_row(store, name):
    action, op, has_after = MUTATORS[name]
    target = entry("ledger target", importance=0.2, visibility=Visibility.PRIVATE)
    bystander = entry("ledger bystander", importance=0.9, pinned=True)
    await store.write_many([target, bystander])
    before_bystander = len(await store.history(bystander.id))
    t0 = time.time()
    await action(store, target)
    last = (await store.history(target.id))[-1]
    assert last.op == op and last.actor.startswith("test")
    assert t0 - 1 <= last.at.timestamp() <= time.time() + 1
    assert last.before is not None and set(last.before) == set(COLUMNS)
    if has_after:
        assert set(last.after) == set(COLUMNS) and last.before != last.after
    else:
        assert last.after is None
        assert await store.get(target.id, audience=Audience.OPERATOR, include_archived=True) is None
    assert len(await store.history(bystander.id)) == before_bystander  # a bystander is never ledgered


async def test_one_id_twice_in_a_batch_is_an_insert_then_an_update(store):
    first = entry("twice in one batch")
    assert await store.write_many([first, first.model_copy(update={"content": "changed"})]) == ["insert", "update"]
    assert [r.op for r in await store.history(first.id)] == ["insert", "update"]


async def test_a_bulk_batch_is_ledgered_and_compared_like_single_writes(store, monkeypatch):
    """A batch big enough for PostgreSQL's COPY path (and its index rebuild) keeps every promise of a small one."""
    monkeypatch.setattr(bulk, "REBUILD_MIN", 300)  # the rebuild branch without a 20,000-row test
    day = datetime(2024, 5, 2, 9, tzinfo=UTC)  # no "7" in its date words: "number 7" must find row 7 on any day
    single = entry("kettle written alone", importance=0.3, tags=["kitchen"], created_at=day)
    await store.write(single)
    rows = [entry(f"kettle number {i} in the bulk load", importance=0.3, tags=["kitchen"], created_at=day + timedelta(seconds=i))
            for i in range(400)]
    changed = single.model_copy(update={"importance": 0.7})
    assert await store.write_many([*rows, changed]) == ["insert"] * 400 + ["update"]
    [alone] = [r.after for r in await store.history(single.id) if r.op == "insert"]
    [loaded] = [r.after for r in await store.history(rows[7].id)]
    differ = {"id", "content", "created_at", "updated_at"}
    assert set(loaded) == set(COLUMNS)
    assert {k: v for k, v in loaded.items() if k not in differ} == {k: v for k, v in alone.items() if k not in differ}
    assert loaded["content"] == rows[7].content and loaded["id"] == rows[7].id
    assert (loaded["created_at"], loaded["updated_at"]) == (rows[7].created_at.timestamp(), rows[7].updated_at.timestamp())
    assert (await store.get(single.id)).importance == 0.7
    found = await store.search(MemoryQuery(text="number 7 bulk", limit=3))
    assert found and found[0].id == rows[7].id  # the rebuilt keyword index answers
    assert await store.write_many(rows) == ["noop"] * 400  # a re-run changes nothing
    assert len(await store.history(rows[7].id)) == 1


async def test_a_large_load_rebuilds_the_indexes_it_dropped(pg_url, monkeypatch):
    """Built afresh (new index oids, same definitions) for a load larger than the table, untouched otherwise."""
    store = PostgresAdapter(pg_url, actor="test")
    sql = ("SELECT c.relname, c.oid, pg_get_indexdef(c.oid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
           "WHERE i.indrelid IN ('memories'::regclass, 'memory_ledger'::regclass) ORDER BY 1")
    indexes = lambda: store._call(lambda c: c.fetch(sql))  # noqa: E731
    try:
        await store.connect()
        before = await indexes()
        await store.write_many([entry(f"small row {i}") for i in range(400)])  # under REBUILD_MIN: maintained
        assert await indexes() == before
        monkeypatch.setattr(bulk, "REBUILD_MIN", 300)
        await store.write_many([entry(f"load row {i}") for i in range(500)])  # 500 > 400 rows there
        after = await indexes()
        assert [(r[0], r[2]) for r in after] == [(r[0], r[2]) for r in before] and len(before) == 11
        rebuilt = {r[0] for r in after} - {r[0] for r in after if r in before}
        assert rebuilt == {"memories_tsv", "memories_dated", "memories_order", "memories_agent", "memories_supersedes", "memory_ledger_memory", "memories_id_key",
                           "memories_id_prefix", "memory_ledger_id_prefix"}
        late = [entry(f"late row {i}") for i in range(400)]
        await store.write_many(late)  # 400 < 900 rows there: maintained, through the staging table
        assert await indexes() == after
        [logged] = await store.history(late[9].id)  # that path ledgers as the others do
        assert logged.op == "insert" and logged.before is None and logged.after["content"] == "late row 9"
        async def plan(conn) -> str:  # the rebuilt index serves a query (seq scans off: the table is small)
            async with conn.transaction():
                await conn.execute("SET LOCAL enable_seqscan = off")
                rows = await conn.fetch("EXPLAIN SELECT id FROM memories WHERE tsv @@ websearch_to_tsquery('english', 'load')")
            return "\n".join(r[0] for r in rows)

        assert "memories_tsv" in await store._call(plan)
        analysed = await store._call(lambda c: c.fetchval(
            "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'memories'"))
        assert analysed  # the load left statistics for what it made, not waiting for autovacuum
        assert len(await store.search(MemoryQuery(text="load", limit=1000))) == 500
    finally:
        await store.aclose()


async def test_a_large_load_is_one_transaction_over_many_batches(pg_url, monkeypatch):
    """Batches COPYed in one transaction (the next prepared while the server applies this one), indexes
    built once: a repeated id in a later batch is an update, progress counts every batch, and a
    batch the server refuses leaves table, ledger and indexes exactly as they were."""
    import memory.adapters.postgres as pg

    monkeypatch.setattr(bulk, "REBUILD_MIN", 300)
    monkeypatch.setattr(pg, "BULK_BATCH", 250)
    store = PostgresAdapter(pg_url, actor="test")
    state = lambda: store._call(lambda c: c.fetchrow(  # noqa: E731  (rows, ledger rows, index oids)
        "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memory_ledger), "
        "(SELECT array_agg(indexrelid ORDER BY indexrelid) FROM pg_index "
        "WHERE indrelid IN ('memories'::regclass, 'memory_ledger'::regclass))"))
    try:
        await store.write_many([entry(f"resident {i}") for i in range(100)])
        before = await state()
        rows = [entry(f"loaded heron {i}", importance=0.3) for i in range(600)]
        rows.append(rows[3].model_copy(update={"importance": 0.8}))  # in the third batch: an update of row 3
        progress: list[tuple[int, int]] = []
        ops = await store.write_many(rows, on_progress=lambda done, total: progress.append((done, total)))
        assert ops == ["insert"] * 600 + ["update"] and progress == [(25, 601), (275, 601), (525, 601), (601, 601)]
        assert [r.op for r in await store.history(rows[3].id)] == ["insert", "update"]
        assert (await store.get(rows[3].id)).importance == 0.8
        [loaded] = await store.history(rows[599].id)
        assert loaded.after["content"] == "loaded heron 599" and set(loaded.after) == set(COLUMNS)
        after = await state()
        assert (after[0], after[1]) == (700, 701) and len(set(after[2]) - set(before[2])) == 9  # 8 secondary + the unique id, rebuilt
        assert len(await store.search(MemoryQuery(text="heron", limit=1000))) == 600  # the rebuilt index answers

        await store._call(lambda c: c.execute("ALTER TABLE memories ADD CONSTRAINT no_poison CHECK (content <> 'poison')"))
        refused = [entry(f"refused sparrow {i}") for i in range(800)] + [entry("poison")]  # refused in the last of 5 batches
        with pytest.raises(MemoryStorageError):
            await store.write_many(refused)
        assert await state() == after  # nothing of batches 1-3 stayed; the indexes dropped are back
        assert await store.search(MemoryQuery(text="sparrow", limit=5)) == []
    finally:
        await store.aclose()


async def test_keyword_ranks_a_bounded_candidate_set_after_admission_and_filters(pg_url, monkeypatch):
    """More matches than the cap: the page still fills, and a filter applies before the cap, not after it."""
    import memory.postgres.search as pg

    monkeypatch.setattr(pg, "KEYWORD_CANDIDATES", 1)  # the cap becomes 50 per wanted row
    store = PostgresAdapter(pg_url, actor="test")
    try:
        crowd = [entry(f"heron sighting {i}", agent_id="crowd") for i in range(150)]
        hidden = [entry(f"heron secret {i}", agent_id="ada", visibility=Visibility.HIDDEN) for i in range(150)]
        await store.write_many([*crowd, *hidden, entry("heron by the lake", agent_id="ada")])
        page = await store.search(MemoryQuery(text="heron", limit=2))
        assert len(page) == 2 and not any("secret" in e.content for e in page)  # hidden never ranks
        [only] = await store.search(MemoryQuery(text="heron", agent_id="ada", limit=2))  # behind 300 other matches
        assert only.content == "heron by the lake"
    finally:
        await store.aclose()


async def test_a_rare_word_is_never_lost_behind_a_common_words_matches(pg_url, monkeypatch):
    """"meeting auditors": the one row holding both words ranks first, though it was written after
    more rows holding "meeting" than the server ranks (its cap, 50 per wanted row here) and the
    planner scans the table in the order rows were written. SQLite ranks every match."""
    import asyncpg

    import memory.postgres.search as pg

    monkeypatch.setattr(pg, "KEYWORD_CANDIDATES", 1)
    store = PostgresAdapter(pg_url, actor="test")
    try:
        await store.write_many([entry(f"Weekly meeting number {i} went fine") for i in range(300)])
        await store.write(entry("Meeting with the auditors about the tax filing"))
        conn = await asyncpg.connect(pg_url)
        try:
            await conn.execute("ANALYZE memories")  # as autovacuum would: the planner now picks a plain scan
        finally:
            await conn.close()
        first, second = await store.search(MemoryQuery(text="meeting auditors", limit=2))
        assert "auditors" in first.content
        assert second.content.startswith("Weekly meeting")  # the common word's matches still fill the page
    finally:
        await store.aclose()


async def test_a_row_holding_the_rarer_word_ranks_first_on_both_engines(store):
    """"meeting auditors" over twenty short meetings and one long row about the auditors: the rare
    word's row first, as BM25 weighs it (ts_rank_cd alone, length-normalised, put the meetings first)."""
    await store.write_many([entry(f"Weekly meeting number {i} went fine") for i in range(20)])
    await store.write(entry("The auditors came by on Friday to review the quarterly tax filing documents with the finance team"))
    first, *rest = await store.search(MemoryQuery(text="meeting auditors", limit=3))
    assert "auditors" in first.content
    assert len(rest) == 2 and all(e.content.startswith("Weekly meeting") for e in rest)  # the common word still ranks


async def test_an_id_prefix_is_answered_by_an_index_whatever_the_collation(pg_server):
    """A left-anchored LIKE is answered by a plain btree index only on a "C"-collated database; on any
    other (Debian's default is the locale's) every `memory show 1a2b` or MCP get on a server pool read
    the whole table. The pattern-ops indexes answer it on a C.utf8 database; the control: the match is found."""
    import asyncpg

    url = pg_server.fresh_database("arcana_collated") if pg_server.psql(
        "SELECT 1 FROM pg_database WHERE datname = 'arcana_collated'") == "1" else None
    if url is None:
        pg_server.psql("CREATE DATABASE arcana_collated LC_COLLATE 'C.utf8' LC_CTYPE 'C.utf8' TEMPLATE template0")
        url = pg_server.fresh_database("arcana_collated")
    store = PostgresAdapter(url, actor="test")
    try:
        kept = entry("an ordinary memory")
        await store.write(kept)
        assert [e.id for e in await store.find_by_prefix(kept.id[:8])] == [kept.id]
        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval("SELECT datcollate FROM pg_database WHERE datname = current_database()") == "C.utf8"
            await conn.execute("SET enable_seqscan = off")
            plans = [
                "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN SELECT 1 FROM {table} WHERE {col} LIKE 'ab%'"))
                for table, col in (("memories", "id"), ("memory_ledger", "memory_id"))
            ]
        finally:
            await conn.close()
        assert "memories_id_prefix" in plans[0] and "memory_ledger_id_prefix" in plans[1], plans
    finally:
        await store.aclose()


async def test_postgres_ledger_rejects_update_and_delete(pg_url):
    import asyncpg

    store = PostgresAdapter(pg_url, actor="test")
    try:
        await store.write(entry("immutable history"))
        conn = await asyncpg.connect(pg_url)
        try:
            for sql in ("UPDATE memory_ledger SET op = 'x'", "DELETE FROM memory_ledger"):
                with pytest.raises(asyncpg.RaiseError, match="append-only"):
                    await conn.execute(sql)
            assert await conn.fetchval("SELECT count(*) FROM memory_ledger") == 1
        finally:
            await conn.close()
    finally:
        await store.aclose()


# -- keyword sanitiser: any text is safe ----------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_any_user_text_is_a_safe_postgres_query(pg_server, text):
    """Operators, quotes, backslashes, NULs, unicode: never a syntax error, never a raise."""
    query = MemoryQuery(text=text.replace("\x00", "") or None)
    found = asyncio.run(_fuzz_search(pg_server, query))
    assert isinstance(found, list)


_fuzz_url: str | None = None


async def _fuzz_search(server, query: MemoryQuery):
    global _fuzz_url
    if _fuzz_url is None:
        _fuzz_url = server.create_database("fuzz")
    store = PostgresAdapter(_fuzz_url, actor="test")
    try:
        await store.write(entry("a fixed note about coffee & tea (or: not)", id="fixed"))
        return await store.search(query)
    finally:
        await store.aclose()


# -- migrations ----------------------------------------------------------------


async def test_migrations_record_the_version_and_race_safely(pg_url):
    stores = [PostgresAdapter(pg_url, actor=f"m{i}") for i in range(4)]
    try:
        await asyncio.gather(*(s.connect() for s in stores))  # four machines upgrading at once
        from memory.postgres.migrations import head_version

        assert [await s.schema_version() for s in stores] == [head_version()] * 4
        # one row per version, each written once however many machines raced
        assert await stores[0]._call(lambda c: c.fetchval("SELECT count(*) FROM arcana_schema")) == head_version()
    finally:
        for s in stores:
            await s.aclose()


async def test_upgrading_to_v6_indexes_the_date_of_rows_already_there(pg_url):
    """v6 rebuilds the keyword index with each row's date in words: a row written under v5 is
    found by its month after the upgrade, as by its words before."""
    import asyncpg

    from memory.postgres.migrations import MIGRATIONS, migrate

    conn = await asyncpg.connect(pg_url)
    try:
        assert await migrate(conn, "pool", MIGRATIONS[:5]) == 5
        await conn.execute(
            "INSERT INTO memories (id, agent_id, type, content, created_at, updated_at) "
            "VALUES ('old', 'a1', 'semantic', 'we signed the lease', $1, $1)",
            datetime(2023, 5, 8, 12, tzinfo=UTC).timestamp(),
        )
    finally:
        await conn.close()
    store = PostgresAdapter(pg_url, actor="test")
    try:
        assert [e.id for e in await store.search(MemoryQuery(text="lease"))] == ["old"]
        assert [e.id for e in await store.search(MemoryQuery(text="May 2023"))] == ["old"]
        assert await store.search(MemoryQuery(text="June")) == []
    finally:
        await store.aclose()


async def test_an_upgrade_that_outlasts_the_tiers_statement_timeout_still_completes(pg_url):
    """v9 rewrites the table (about 4,000 rows/s here), but ran under the tier's statement timeout
    (5 s for `arcana migrate up`): a pool of some 20,000 rows could never be upgraded, and every
    command's first connection tried again and failed. An upgrade has the time it takes."""
    import asyncpg

    from memory.postgres.migrations import MIGRATIONS, head_version, migrate

    conn = await asyncpg.connect(pg_url)
    try:
        await migrate(conn, "pool", MIGRATIONS[:8])
        rows = [(f"r{i}", "a1", "semantic", f"note {i} about the heron and the lake, with some more words", 1.7e9 + i, 1.7e9 + i)
                for i in range(5_000)]
        await conn.copy_records_to_table("memories", records=rows, columns=["id", "agent_id", "type", "content", "created_at", "updated_at"])
    finally:
        await conn.close()
    store = PostgresAdapter(pg_url, actor="test", statement_timeout_ms=200)
    try:
        started = time.monotonic()
        await store.connect()
        assert time.monotonic() - started > 0.2  # it did outlast the timeout
    finally:
        await store.aclose()
    store = PostgresAdapter(pg_url, actor="test")  # the reads after it under the usual timeout
    try:
        assert await store.schema_version() == head_version()
        assert [e.id for e in await store.search(MemoryQuery(text="heron 4999"))][:1] == ["r4999"]
    finally:
        await store.aclose()


async def test_a_long_memory_is_searched_by_stop_words_under_a_parallel_plan(pg_server, pg_url):
    """A stop-word-only query vectorises each row as it reads it, a long one through a function
    with an exception block, which was declared safe for parallel workers: a parallel scan (a large
    pool) failed with "cannot start subtransactions during a parallel operation"."""
    settings = ("debug_parallel_query", "parallel_setup_cost", "parallel_tuple_cost", "min_parallel_table_scan_size")
    pg_server.psql("; ".join(f"ALTER DATABASE arcana_test SET {s} = {v}" for s, v in zip(settings, ("on", 0, 0, 0))))
    store = PostgresAdapter(pg_url, actor="test")
    try:
        long = entry("the zeppelin " + " ".join(f"w{i:06d}" for i in range(60_000)))  # over 256 KiB
        short = entry("it is what it is")
        await store.write_many([long, short])
        assert set(ids(await store.search(MemoryQuery(text="the")))) == {long.id}
        assert ids(await store.search(MemoryQuery(text="what is it"))) == [short.id]  # the positive control
    finally:
        await store.aclose()
        pg_server.psql("ALTER DATABASE arcana_test RESET ALL")


async def test_a_newer_schema_is_refused_and_left_untouched(pg_url):
    store = PostgresAdapter(pg_url, actor="test")
    await store.write(entry("written by this version"))
    await store._call(lambda c: c.execute("INSERT INTO arcana_schema VALUES (99, 'future', 0)"))
    await store.aclose()
    newer = PostgresAdapter(pg_url, actor="test")
    with pytest.raises(SchemaTooNewError, match="schema version 99 is newer"):
        await newer.connect()
    with pytest.raises(SchemaTooNewError):
        await newer.pending_version()
    await newer.aclose()


# -- semantic, hybrid and the pin on PostgreSQL ----------------------------------


@pytest.fixture
async def semantic_pg(pg_url, offline_embedder, tmp_path):
    adapter = PostgresAdapter(
        pg_url, actor="test", gateway=EmbeddingGateway([offline_embedder]), audit=AuditLog(tmp_path / "audit.jsonl")
    )
    yield adapter
    await adapter.aclose()


async def test_semantic_and_hybrid_rank_by_meaning_and_admit(semantic_pg):
    units = entry("The user prefers metric units for every measurement.")
    pets = entry("Their dog is called Biscuit and loves the beach.")
    hidden = entry("The user likes the metric system and kilometres.", visibility=Visibility.HIDDEN)
    other = entry("Metric units are preferred by this second agent.", agent_id="a2")
    await semantic_pg.write_many([units, pets, hidden, other])
    meta = await semantic_pg.meta()
    assert (meta.model, meta.dimension) == ("sentence-transformers/all-MiniLM-L6-v2", 384)
    assert await semantic_pg.embedded_count() == 4  # hidden rows get vectors too; admission hides them on read
    sem = MemoryQuery(agent_id="a1", text="which measurement system do they like", retrieval_mode=RetrievalMode.semantic)
    found = await semantic_pg.search(sem)
    assert ids(found)[0] == units.id and hidden.id not in ids(found) and other.id not in ids(found)
    assert found[0].matched_by == ["semantic"] and 0 < found[0].score <= 1
    hybrid = await semantic_pg.search(sem.model_copy(update={"retrieval_mode": RetrievalMode.hybrid, "text": "metric"}))
    assert ids(hybrid)[0] == units.id and set(hybrid[0].matched_by) == {"semantic", "keyword"}
    assert hidden.id not in ids(hybrid)
    # Purging a row removes its vector with it (ON DELETE CASCADE).
    assert await semantic_pg.purge([pets.id]) == 1
    assert await semantic_pg.embedded_count() == 3


async def test_a_pool_pinned_to_one_model_refuses_another(semantic_pg, pg_url, embed_server, tmp_path):
    await semantic_pg.write(entry("The user prefers metric units."))
    server = embed_server({"nomic-embed-text": hashed_vectors(384)})
    notices: list[str] = []
    other = PostgresAdapter(
        pg_url, actor="test", notify=notices.append, audit=AuditLog(tmp_path / "audit.jsonl"),
        gateway=EmbeddingGateway([OllamaEmbedder("nomic-embed-text", url=server.url)]),
    )
    try:
        query = MemoryQuery(text="metric units", retrieval_mode=RetrievalMode.hybrid)
        found = await other.search(query)
        assert [e.content for e in found] == ["The user prefers metric units."]
        assert found[0].matched_by == ["keyword"]  # fell back: the pin names another family
        assert len(await other.search(query)) == 1
        assert len(notices) == 1 and "all-MiniLM-L6-v2" in notices[0]  # said once
        await other.write(entry("Written by the other machine."))
        assert await other.embedded_count() == 1  # stored, but no foreign vector mixed in
        assert "embedding_degraded" in (tmp_path / "audit.jsonl").read_text()
        assert (await other.meta()).model == "sentence-transformers/all-MiniLM-L6-v2"
    finally:
        await other.aclose()
    assert (await semantic_pg.backfill()).embedded == 1  # the pinned model's machine catches up
    assert await semantic_pg.embedded_count() == 2


async def test_a_server_pool_is_embedded_a_page_at_a_time_and_an_edit_embeds_only_its_rows(pg_url, offline_embedder, monkeypatch):
    """`reindex` of a pool written without an embedder reads and embeds its rows a page at a time (it
    read and embedded every row at once: a million rows would not fit), its progress moving with
    each page; an operator's edit embeds the rows it wrote, not every stale row of the pool."""
    import memory.adapters.postgres as postgres

    bare = PostgresAdapter(pg_url, actor="test")
    rows = [entry(f"Deploy note {i}: the canary runs in region {i}.") for i in range(5)]
    await bare.write_many(rows)
    await bare.aclose()
    monkeypatch.setattr(postgres, "EMBED_PAGE", 2)
    pool = PostgresAdapter(pg_url, actor="test", gateway=EmbeddingGateway([offline_embedder]))
    try:
        assert await pool.complete([rows[0].id, rows[1].id, rows[2].id]) == 3  # an edit's rows, two pages
        assert await pool.embedded_count() == 3  # the other two are left for reindex
        moved: list[tuple[int, int]] = []
        report = await pool.backfill(lambda done, total: moved.append((done, total)))
        assert (report.total, report.embedded) == (2, 2) and moved == [(2, 2)]
        await pool.write_many([entry(f"Later note {i} about the staging cluster.") for i in range(3)])
        await pool.aclose()
        bare = PostgresAdapter(pg_url, actor="test")
        await bare.write_many([entry(f"Unembedded note {i} about the build cache.") for i in range(5)])
        await bare.aclose()
        pool = PostgresAdapter(pg_url, actor="test", gateway=EmbeddingGateway([offline_embedder]))
        moved.clear()
        report = await pool.backfill(lambda done, total: moved.append((done, total)))
        assert (report.total, report.embedded) == (5, 5) and moved == [(2, 5), (4, 5), (5, 5)]
        assert await pool.embedded_count() == 13
        found = await pool.search(MemoryQuery(text="build cache", retrieval_mode=RetrievalMode.semantic))
        assert "build cache" in found[0].content
    finally:
        await pool.aclose()


async def test_selective_filters_still_fill_the_semantic_page(semantic_pg):
    """The HNSW window is widened when admission rejects its nearest candidates."""
    crowd = [entry(f"The user prefers metric units, note {i}.", agent_id="a2") for i in range(60)]
    mine = [entry(f"Kilometres and kilograms are what they use ({i}).") for i in range(3)]
    await semantic_pg.write_many([*crowd, *mine])
    query = MemoryQuery(agent_id="a1", text="metric units", retrieval_mode=RetrievalMode.semantic, limit=3)
    assert set(ids(await semantic_pg.search(query))) == {e.id for e in mine}
    unfiltered = await semantic_pg.search(query.model_copy(update={"agent_id": None}))
    assert len(unfiltered) == 3 and set(ids(unfiltered)) <= {e.id for e in crowd}  # control: the crowd is nearer


# -- version chains, open conflicts, updated_at -----------------------------------


async def test_version_chains_are_walked_in_one_query_through_the_admission_rule(store):
    """Links are followed through rows a reader may not see, but only admitted rows come back."""
    now = datetime.now(UTC)
    ended = {"valid_to": now, "valid_from": now - timedelta(days=1)}
    a = entry("chain v1 kettle", superseded_by="chain-b", **ended)
    b = entry("chain v2 kettle", id="chain-b", supersedes=a.id, superseded_by="chain-c", archived=True, **ended)
    c = entry("chain v3 kettle", id="chain-c", supersedes="chain-b", valid_from=now)
    d = entry("hidden chain v1", superseded_by="chain-e", **ended)
    e = entry("hidden chain v2", id="chain-e", supersedes=d.id, visibility=Visibility.HIDDEN)
    x = entry("cycle x", id="cycle-x", supersedes="cycle-y", superseded_by="cycle-y")
    y = entry("cycle y", id="cycle-y", supersedes="cycle-x", superseded_by="cycle-x")
    await store.write_many([a, b, c, d, e, x, y])
    for start in (a.id, b.id, c.id):
        assert ids(await store.versions(start, include_archived=True)) == [a.id, b.id, c.id]
        assert ids(await store.versions(start)) == [a.id, c.id]  # the archived middle is walked, not shown
        assert ids(await store.versions(start, audience=Audience.RECALL)) == [c.id]  # recall: the current one only
    assert ids(await store.versions(d.id)) == [d.id, e.id]  # the operator sees a hidden version ...
    assert ids(await store.versions(d.id, audience=Audience.RECALL)) == []  # ... recall never does
    assert ids(await store.versions(d.id, audience=Audience.LISTING)) == []
    assert sorted(ids(await store.versions(x.id))) == ["cycle-x", "cycle-y"]  # a crafted cycle ends, each id once
    assert await store.versions("no-such-id") == []


async def test_open_conflicts_count_current_unarchived_claims_of_any_visibility(store):
    held = {"conflict_with": "the-user-fact"}
    await store.write_many([
        entry("open claim", **held),
        entry("hidden open claim", visibility=Visibility.HIDDEN, **held),
        entry("archived claim", archived=True, **held),
        entry("ended claim", valid_to=datetime.now(UTC), superseded_by="later", **held),
        entry("no claim at all"),
    ])
    assert await store.open_conflicts() == 2


async def test_held_beside_names_every_claim_beside_the_fact_and_no_other(store):
    """What an operator's hide of a fact may reach (a claim repeating its words): any visibility, archived too."""
    held = {"conflict_with": "the-user-fact"}
    await store.write_many([
        entry("open claim", **held),
        entry("hidden claim", visibility=Visibility.HIDDEN, **held),
        entry("archived claim", archived=True, **held),
        entry("beside another fact", conflict_with="another-fact"),
        entry("no claim at all"),
    ])
    assert sorted(e.content for e in await store.held_beside("the-user-fact")) == ["archived claim", "hidden claim", "open claim"]


async def test_an_edit_that_changes_nothing_leaves_updated_at_and_the_ledger_alone(store):
    """make_current on a current memory, archive twice: no stamp, no ledger row; a real change writes both."""
    old = entry("stamp test", created_at=T0, updated_at=T0)
    control = entry("stamp control", created_at=T0, updated_at=T0)
    await store.write_many([old, control])

    async def state(memory_id):
        got = await store.get(memory_id, audience=Audience.OPERATOR, include_archived=True)
        return got.updated_at, len(await store.history(memory_id))

    assert await store.make_current(old.id) == []
    assert await store.set_pinned([old.id], False) == 0
    assert await state(old.id) == (T0, 1)  # only the insert
    assert await store.archive([control.id]) == 1  # control: a real change is stamped and ledgered ...
    stamped, rows = await state(control.id)
    assert stamped > T0 and rows == 2
    assert await store.archive([control.id]) == 0  # ... and repeating it is not
    assert await state(control.id) == (stamped, 2)
    [last] = (await store.history(control.id))[-1:]
    assert last.after["updated_at"] == pytest.approx(stamped.timestamp()) and last.before["updated_at"] == T0.timestamp()
