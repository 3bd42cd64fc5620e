"""The global tier on PostgreSQL + pgvector and on SQLite, side by side in one run.

A throwaway server (tests/support/pg_server.py) holds N memories: real MiniLM
embeddings for a sample, random unit vectors for the bulk (random vectors are
HNSW's worst case). Measured: bulk import through the ledgered store against
raw ``COPY`` of the same rows; vector load then HNSW build; semantic KNN p50 and
recall@10 against an exact scan of the same rows; keyword p50 on both engines;
federated keyword recall (private SQLite + a PostgreSQL pool) against the same
data all local. ``--walk``: a restore's walk over one agent's copies (``GlobalCopies.align``'s
pages) by keyset, against the OFFSET pages it took before, on the same rows.
Run: python tests/bench/bench_postgres.py [--memories N] [--sample N] [--queries N] [--walk]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

import pg_server  # noqa: E402
from planted import answer, paraphrases  # noqa: E402

from memory.adapters.postgres import PostgresAdapter  # noqa: E402
from memory.postgres.vectors import VEC_TABLE, put_vectors, vector_text  # noqa: E402
from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.embedding.base import EmbeddingMeta, l2_normalize  # noqa: E402
from memory.embedding.fastembed import FastEmbedEmbedder  # noqa: E402
from memory.federation.federation import MemoryFederation  # noqa: E402
from memory.operator.edits import ALIGN_PAGE  # noqa: E402
from memory.federation.router import MemoryRouter  # noqa: E402
from memory.postgres.admission import where  # noqa: E402
from memory.sqlite.rows import COLUMNS, entry_values  # noqa: E402
from memory.types import Audience, MemoryEntry, MemoryQuery, MemoryScope, MemoryType, RetrievalMode  # noqa: E402

DIM = 384
EF_SWEEP = (40, 100, 200, 400, 800)  # hnsw.ef_search values tried, smallest first, until recall@10 >= 0.95


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "bcdfghjklmnprstvwz"
    vowels = "aeiou"
    return list({"".join(rng.choice(letters) + rng.choice(vowels) for _ in range(3)) for _ in range(size)})


def corpus(count: int, sample: int, rng: random.Random) -> list[MemoryEntry]:
    words = vocabulary(rng)
    entries = []
    for i in range(count):
        text = answer(i) if i < sample else " ".join(rng.sample(words, 8))
        entries.append(MemoryEntry(agent_id="bench", type=list(MemoryType)[i % len(MemoryType)], scope=MemoryScope.GLOBAL,
                                   importance=round(rng.uniform(0.1, 0.85), 2), content=text))
    return entries


def raw_record(values: dict) -> tuple:
    """One row for raw COPY: the store's values, visibility as the store defaults it."""
    return tuple(values[c] if c != "visibility" else "visible" for c in COLUMNS)


def unit(rng: random.Random) -> list[float]:
    return l2_normalize([rng.gauss(0, 1) for _ in range(DIM)])


def load() -> str:
    """The machine's load averages (1, 5, 15 min), printed with every timing."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def bulk_vectors(url: str, seqs: list[int], model: str, gen, chunk: int = 50_000) -> None:
    """Random unit vectors for ``seqs`` by binary COPY (numpy + pgvector's codec; text formatting of
    1M x 384 floats took minutes), on a connection of its own so the store's text parameters stay text."""
    from pgvector.asyncpg import register_vector  # here: the rest of the bench (--walk) runs without it

    conn = await asyncpg.connect(url)
    try:
        await register_vector(conn)
        for start in range(0, len(seqs), chunk):
            part = seqs[start : start + chunk]
            block = gen.standard_normal((len(part), DIM), dtype=np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            await conn.copy_records_to_table(
                VEC_TABLE, records=[(s, v, "-", model) for s, v in zip(part, block)],
                columns=["seq", "embedding", "content_hash", "model"],
            )
    finally:
        await conn.close()


def ms(values: list[float], q: int = 50) -> float:
    return statistics.median(values) * 1000 if q == 50 else statistics.quantiles(values, n=100)[q - 1] * 1000


async def timed(fn, items) -> list[float]:
    for item in items[:5]:
        await fn(item)
    out = []
    for item in items:
        started = time.perf_counter()
        await fn(item)
        out.append(time.perf_counter() - started)
    return out


async def build_hnsw(url: str, memory: str, workers: int) -> None:
    """The store's HNSW index, built on a connection without the store's client-side timeout (a 1M
    build takes longer than any statement budget), its progress printed every minute."""
    conn = await asyncpg.connect(url, command_timeout=None)
    watcher = await asyncpg.connect(url)
    build = asyncio.ensure_future(conn.execute(
        f"SET maintenance_work_mem = '{memory}'; SET max_parallel_maintenance_workers = {workers}; "
        "SET statement_timeout = 0; CREATE INDEX memory_vectors_hnsw ON memory_vectors USING hnsw (embedding vector_cosine_ops)"
    ))
    started = time.perf_counter()
    try:
        while not build.done():
            await asyncio.wait([build], timeout=60)
            row = await watcher.fetchrow("SELECT phase, tuples_done, tuples_total FROM pg_stat_progress_create_index")
            if row and not build.done():
                print(f"  HNSW build {time.perf_counter() - started:.0f} s: {row['phase']}, {row['tuples_done']:,} of "
                      f"{row['tuples_total']:,} tuples; load: {load()}", flush=True)
        await build
    finally:
        await watcher.close()
        await conn.close()


async def semantic(store, url, embedder, entries, sample: int, queries: int, rng, build_memory: str, build_workers: int) -> None:
    """Vectors loaded, then one HNSW build; KNN p50 and recall@10 against an exact scan, ef_search swept."""
    memories = len(entries)
    # -- vectors: load, then build the HNSW index ------------------------------------------
    await store.ensure_pin(EmbeddingMeta(embedder.model_name, embedder.model_family, DIM, "memory_vectors", 0))
    await store._call(lambda c: c.execute("DROP INDEX memory_vectors_hnsw"))
    rows = await store._call(lambda c: c.fetch("SELECT seq, content FROM memories ORDER BY seq"))
    real = await embedder.embed([r["content"] for r in rows[:sample]])
    vectors = [(r["seq"], vector_text(v), "-", embedder.model_name) for r, v in zip(rows[:sample], real)]
    started = time.perf_counter()
    for start in range(0, len(vectors), 5000):
        await store._call(put_vectors, vectors[start : start + 5000], transaction=True)
    await bulk_vectors(url, [r["seq"] for r in rows[sample:]], embedder.model_name, np.random.default_rng(14))
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    await build_hnsw(url, build_memory, build_workers)
    build_s = time.perf_counter() - started
    print(f"vectors: load {memories / load_s:,.0f} rows/s ({load_s:.1f} s), HNSW build {build_s:.1f} s "
          f"(maintenance_work_mem {build_memory}, {build_workers} parallel worker(s)); load: {load()}", flush=True)

    # -- semantic: HNSW vs exact scan of the same rows -------------------------------------
    clause = where(MemoryQuery(), start=3)
    real_q = [vector_text(v) for v in await embedder.embed(paraphrases(queries))]
    random_q = [vector_text(unit(rng)) for _ in range(queries)]

    async def exact(vector: str):
        async def scan(conn):
            await conn.execute("SET LOCAL enable_indexscan = off")
            return await knn(conn, vector, clause, 10)
        return [r["id"] for r in await store._call(scan, transaction=True)]

    for label, qs in (("real-embedding queries", real_q), ("random-vector queries", random_q)):
        truth = [set(await exact(v)) for v in qs]
        chosen = None
        for ef in EF_SWEEP:
            tuned = PostgresAdapter(url, actor="bench", ef_search=ef)
            found: list[set] = []

            async def knn(v, found=found, tuned=tuned):
                found.append({r["id"] for r in await tuned._call(knn, v, clause, 10)})

            times = await timed(knn, qs)
            await tuned.aclose()
            recall = statistics.mean(len(f & t) / 10 for f, t in zip(found[5:], truth))
            print(f"semantic {label}, ef_search {ef}: p50 {ms(times):.2f} ms p95 {ms(times, 95):.2f} ms "
                  f"recall@10 {recall:.3f} vs exact scan")
            if recall >= 0.95:
                chosen = (ef, ms(times), recall)
                break
        print(f"semantic {label}: " + (f"ef_search {chosen[0]} is the smallest with recall@10 >= 0.95 "
              f"(p50 {chosen[1]:.2f} ms, target <= 30 ms)" if chosen else f"no ef_search in {EF_SWEEP} reaches 0.95")
              + f"; load: {load()}", flush=True)
        scan_times = await timed(exact, qs[:10])
        print(f"semantic {label}, exact scan: p50 {ms(scan_times):.1f} ms")


async def sqlite_side(store, entries, sample: int, texts, make, folder: Path) -> None:
    """The same rows in SQLite: import rate, keyword p50, and federated recall against the server."""
    memories = len(entries)
    local = SQLiteAdapter(folder / "global.db", actor="bench")
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 100_000 == 0 or done == total:
            print(f"  sqlite import {done:,} of {total:,}: {done / (time.perf_counter() - started):,.0f} rows/s; "
                  f"load: {load()}", flush=True)

    await local.write_many(entries, on_progress=progress)
    print(f"sqlite import (same rows, ledgered, FTS5): {memories / (time.perf_counter() - started):,.0f} rows/s")
    sq_kw = await timed(lambda t: local.search(make(t)), texts)
    print(f"keyword p50: sqlite {ms(sq_kw):.2f} ms (p95 {ms(sq_kw, 95):.2f})")
    private = SQLiteAdapter(folder / "private.db", actor="bench")
    await private.write_many([e.model_copy(update={"scope": MemoryScope.PRIVATE, "id": f"p{i}"})
                              for i, e in enumerate(entries[sample : sample + 1000])])
    remote = MemoryFederation(MemoryRouter(private=private, global_=store), on_degraded=lambda e: None)
    allocal = MemoryFederation(MemoryRouter(private=private, global_=local), on_degraded=lambda e: None)
    fed_pg = await timed(lambda t: remote.search(make(t)), texts)
    fed_sq = await timed(lambda t: allocal.search(make(t)), texts)
    print(f"federated keyword recall p50: private sqlite + postgresql global {ms(fed_pg):.2f} ms | all local "
          f"{ms(fed_sq):.2f} ms | {statistics.median(fed_pg) / statistics.median(fed_sq):.2f}x (target <= 2x); load: {load()}")
    await remote.aclose()
    await allocal.aclose()


async def raw_copy(store, records: list[tuple], *, indexed: bool) -> float:
    """Seconds to COPY ``records`` into a copy of ``memories``: into its indexes, or bare and then indexed."""
    table = "raw_indexed" if indexed else "raw_then_indexed"
    like = "INCLUDING ALL" if indexed else "INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING IDENTITY"
    await store._call(lambda c: c.execute(f"CREATE TABLE {table} (LIKE memories {like})"))
    started = time.perf_counter()
    await store._call(lambda c: c.copy_records_to_table(table, records=records, columns=list(COLUMNS)))
    if not indexed:
        await store._call(lambda c: c.execute(
            f"SET maintenance_work_mem = '512MB'; ALTER TABLE {table} ADD UNIQUE (id), ADD PRIMARY KEY (seq); "
            f"CREATE INDEX ON {table} USING gin (tsv); CREATE INDEX ON {table} (agent_id); "
            f"CREATE INDEX ON {table} (archived, pinned DESC, importance DESC, created_at DESC)"
        ))
    seconds = time.perf_counter() - started
    await store._call(lambda c: c.execute(f"DROP TABLE {table}"))
    return seconds


async def bulk_import(store, entries) -> None:
    """Raw COPY of the same rows (into the indexed table; bare, then indexed) against store.write_many."""
    memories = len(entries)
    records = [raw_record(entry_values(e)) for e in entries]
    copy_s = await raw_copy(store, records, indexed=True)
    then_s = await raw_copy(store, records, indexed=False)
    started = time.perf_counter()
    await store.write_many(entries)
    import_s = time.perf_counter() - started
    print(f"bulk import: raw COPY into the indexed table {memories / copy_s:,.0f} rows/s ({copy_s:.1f} s) | "
          f"raw COPY, then the same indexes {memories / then_s:,.0f} rows/s ({then_s:.1f} s) | "
          f"store.write_many (ledgered, bulk path) {memories / import_s:,.0f} rows/s ({import_s:.1f} s) | "
          f"{copy_s / import_s:.2f}x / {then_s / import_s:.2f}x of COPY (target >= 0.5x); load: {load()}", flush=True)


async def walk(store) -> None:
    """Every row of agent ``bench`` a page at a time, as a restore checks its copies: past the last
    row (keyset) and by OFFSET (before), interleaved twice; seconds and rows of each."""
    query = MemoryQuery(agent_id="bench", limit=ALIGN_PAGE)

    async def keyset() -> int:
        after, rows = 0, 0
        while True:
            page, last = await store.page_after(query, after, audience=Audience.OPERATOR, include_archived=True)
            if last == after:
                return rows
            rows, after = rows + len(page), last

    async def by_offset() -> int:
        rows = 0
        while page := await store.page(query, offset=rows, audience=Audience.OPERATOR, include_archived=True):
            rows += len(page)
        return rows

    times: dict[str, list[float]] = {"keyset": [], "offset": []}
    for _ in range(2):
        for name, fn in (("keyset", keyset), ("offset", by_offset)):
            started = time.perf_counter()
            rows = await fn()
            times[name].append(time.perf_counter() - started)
    k, o = min(times["keyset"]), min(times["offset"])
    print(f"copy walk ({rows:,} rows, pages of {ALIGN_PAGE}): keyset {k:.2f} s, OFFSET {o:.2f} s = {o / k:.1f}x the keyset; "
          f"load: {load()}", flush=True)


async def main(memories: int, sample: int, queries: int, hnsw_max: int, sqlite_max: int, build_memory: str, build_workers: int,
               skip_raw: bool, walk_rows: bool) -> None:
    rng = random.Random(14)
    entries = corpus(memories, sample, rng)
    server = pg_server.start_server()
    tmp = tempfile.TemporaryDirectory(prefix="arcana-bench-pg-")
    try:
        url = server.create_database("bench")
        embedder = FastEmbedEmbedder(models_root=Path(tmp.name) / "models")
        store = PostgresAdapter(url, actor="bench", statement_timeout_ms=600_000, connect_timeout=30)
        await store.connect()
        print(f"memories={memories} real-embedded sample={sample} queries={queries}; load: {load()}", flush=True)

        # -- bulk import: raw COPY of the same rows vs the ledgered store's bulk path -----------
        if skip_raw:
            await store.write_many(entries)
        else:
            await bulk_import(store, entries)

        if walk_rows:
            await walk(store)

        if memories <= hnsw_max:
            await semantic(store, url, embedder, entries, sample, queries, rng, build_memory, build_workers)
        else:
            print(f"semantic: skipped (HNSW build at {memories:,} rows is over --hnsw-max {hnsw_max:,})")

        # -- keyword on both engines, and federated recall --------------------------------------
        texts = [" ".join(random.Random(i).sample(entries[sample + i].content.split(), 2)) for i in range(queries)]
        make = lambda t: MemoryQuery(text=t, retrieval_mode=RetrievalMode.keyword, limit=10)  # noqa: E731
        pg_kw = await timed(lambda t: store.search(make(t)), texts)
        print(f"keyword p50: postgresql {ms(pg_kw):.2f} ms (p95 {ms(pg_kw, 95):.2f}, target <= 30 ms)")
        if memories <= sqlite_max:
            await sqlite_side(store, entries, sample, texts, make, Path(tmp.name))
        else:
            print(f"sqlite and federated: skipped ({memories:,} rows is over --sqlite-max {sqlite_max:,})")
    finally:
        pg_server.remove(server)
        tmp.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--hnsw-max", type=int, default=300_000, help="Build HNSW and measure semantic only up to this size.")
    parser.add_argument("--sqlite-max", type=int, default=300_000, help="Load SQLite (and federate) only up to this size.")
    parser.add_argument("--build-memory", default="1GB", help="maintenance_work_mem for the HNSW build (the graph should fit).")
    parser.add_argument("--build-workers", type=int, default=1, help="max_parallel_maintenance_workers for the HNSW build.")
    parser.add_argument("--skip-raw", action="store_true", help="Load through the store only (no raw COPY comparison).")
    parser.add_argument("--walk", action="store_true", help="Time a restore's walk over the copies (keyset against OFFSET).")
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.sample, args.queries, args.hnsw_max, args.sqlite_max, args.build_memory, args.build_workers,
                     args.skip_raw, args.walk))
