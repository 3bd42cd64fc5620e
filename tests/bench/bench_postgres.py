"""The global tier on PostgreSQL + pgvector and on SQLite, side by side in one run.

A throwaway server (tests/pg_server.py) holds N memories: real MiniLM
embeddings for a sample, random unit vectors for the bulk (random vectors are
HNSW's worst case). Measured: bulk import through the ledgered store against
raw ``COPY`` of the same rows; vector load then HNSW build; semantic KNN p50 and
recall@10 against an exact scan of the same rows; keyword p50 on both engines;
federated keyword recall (private SQLite + a PostgreSQL pool) against the same
data all local.
Run: python tests/bench/bench_postgres.py [--memories N] [--sample N] [--queries N]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import pg_server  # noqa: E402
from memory.adapters.postgres import PostgresAdapter, _knn, _pin, _put_vectors, _vector_text  # noqa: E402
from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.embedding.base import l2_normalize  # noqa: E402
from memory.embedding.fastembed import FastEmbedEmbedder  # noqa: E402
from memory.federation import MemoryFederation, MemoryRouter  # noqa: E402
from memory.postgres.admission import where  # noqa: E402
from memory.sqlite.rows import COLUMNS, entry_values  # noqa: E402
from memory.types import MemoryEntry, MemoryQuery, MemoryScope, MemoryType, RetrievalMode  # noqa: E402

DIM = 384
TOPICS = (
    "The user prefers metric units|Deploys happen on Tuesdays after the standup|The printer on floor two jams"
    "|Coffee is brewed with a French press|The laptop battery drains overnight|Invoices go out on the first"
    "|The garden needs watering twice a week|Backups run at midnight to the NAS|The team lunch is on Fridays"
    "|Release tickets need two reviewers"
).split("|")


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    letters = "bcdfghjklmnprstvwz"
    vowels = "aeiou"
    return list({"".join(rng.choice(letters) + rng.choice(vowels) for _ in range(3)) for _ in range(size)})


def corpus(count: int, sample: int, rng: random.Random) -> list[MemoryEntry]:
    words = vocabulary(rng)
    entries = []
    for i in range(count):
        text = f"{TOPICS[i % len(TOPICS)]} (variant {i})" if i < sample else " ".join(rng.sample(words, 8))
        entries.append(MemoryEntry(agent_id="bench", type=list(MemoryType)[i % len(MemoryType)], scope=MemoryScope.GLOBAL,
                                   importance=round(rng.uniform(0.1, 0.85), 2), content=text))
    return entries


def unit(rng: random.Random) -> list[float]:
    return l2_normalize([rng.gauss(0, 1) for _ in range(DIM)])


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


async def main(memories: int, sample: int, queries: int) -> None:
    rng = random.Random(14)
    entries = corpus(memories, sample, rng)
    server = pg_server.start_server()
    tmp = tempfile.TemporaryDirectory(prefix="arcana-bench-pg-")
    try:
        url = server.create_database("bench")
        embedder = FastEmbedEmbedder(models_root=Path(tmp.name) / "models")
        store = PostgresAdapter(url, actor="bench", statement_timeout_ms=600_000, connect_timeout=30)
        await store.connect()
        print(f"memories={memories} real-embedded sample={sample} queries={queries}")

        # -- bulk import: raw COPY of the same rows vs the ledgered store --------------------
        await store._call(lambda c: c.execute("CREATE TABLE raw_copy (LIKE memories INCLUDING ALL)"))
        records = [tuple(entry_values(e)[c] if c != "visibility" else "visible" for c in COLUMNS) for e in entries]
        started = time.perf_counter()
        await store._call(lambda c: c.copy_records_to_table("raw_copy", records=records, columns=list(COLUMNS)))
        copy_s = time.perf_counter() - started
        started = time.perf_counter()
        await store.write_many(entries)
        import_s = time.perf_counter() - started
        print(f"bulk import: raw COPY {memories / copy_s:,.0f} rows/s ({copy_s:.1f} s) | store.write_many "
              f"(ledgered, GIN) {memories / import_s:,.0f} rows/s ({import_s:.1f} s) | "
              f"{copy_s / import_s:.2f}x of COPY (target >= 0.5x)")

        # -- vectors: load, then build the HNSW index ------------------------------------------
        await store._call(_pin, embedder, DIM, transaction=True)
        await store._call(lambda c: c.execute("DROP INDEX memory_vectors_hnsw"))
        rows = await store._call(lambda c: c.fetch("SELECT seq, content FROM memories ORDER BY seq"))
        real = await embedder.embed([r["content"] for r in rows[:sample]])
        vectors = [(r["seq"], _vector_text(v), "-", embedder.model_name) for r, v in zip(rows[:sample], real)]
        vectors += [(r["seq"], _vector_text(unit(rng)), "-", embedder.model_name) for r in rows[sample:]]
        started = time.perf_counter()
        for start in range(0, len(vectors), 5000):
            await store._call(_put_vectors, vectors[start : start + 5000], transaction=True)
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        await store._call(lambda c: c.execute(
            "SET maintenance_work_mem = '1GB'; "
            "CREATE INDEX memory_vectors_hnsw ON memory_vectors USING hnsw (embedding vector_cosine_ops)"
        ))
        build_s = time.perf_counter() - started
        print(f"vectors: load {memories / load_s:,.0f} rows/s ({load_s:.1f} s), HNSW build {build_s:.1f} s")

        # -- semantic: HNSW vs exact scan of the same rows -------------------------------------
        clause = where(MemoryQuery(), start=3)
        paraphrases = [f"what does the team say about: {TOPICS[i % len(TOPICS)].lower()}" for i in range(queries)]
        real_q = [_vector_text(v) for v in await embedder.embed(paraphrases)]
        random_q = [_vector_text(unit(rng)) for _ in range(queries)]

        async def exact(vector: str):
            async def scan(conn):
                await conn.execute("SET LOCAL enable_indexscan = off")
                return await _knn(conn, vector, clause, 10)
            return [r["id"] for r in await store._call(scan, transaction=True)]

        for label, qs in (("real-embedding queries", real_q), ("random-vector queries", random_q)):
            truth = [set(await exact(v)) for v in qs]
            for ef in (40, 200):
                tuned = PostgresAdapter(url, actor="bench", ef_search=ef)
                found: list[set] = []

                async def knn(v, found=found, tuned=tuned):
                    found.append({r["id"] for r in await tuned._call(_knn, v, clause, 10)})

                times = await timed(knn, qs)
                await tuned.aclose()
                recall = statistics.mean(len(f & t) / 10 for f, t in zip(found[5:], truth))
                print(f"semantic {label}, ef_search {ef}: p50 {ms(times):.2f} ms p95 {ms(times, 95):.2f} ms "
                      f"recall@10 {recall:.3f} vs exact scan")
            scan_times = await timed(exact, qs[:10])
            print(f"semantic {label}, exact scan: p50 {ms(scan_times):.1f} ms")

        # -- keyword on both engines, and federated recall --------------------------------------
        local = SQLiteAdapter(Path(tmp.name) / "global.db", actor="bench")
        started = time.perf_counter()
        await local.write_many(entries)
        print(f"sqlite import (same rows, ledgered, FTS5): {memories / (time.perf_counter() - started):,.0f} rows/s")
        texts = [" ".join(random.Random(i).sample(entries[sample + i].content.split(), 2)) for i in range(queries)]
        make = lambda t: MemoryQuery(text=t, retrieval_mode=RetrievalMode.keyword, limit=10)  # noqa: E731
        pg_kw = await timed(lambda t: store.search(make(t)), texts)
        sq_kw = await timed(lambda t: local.search(make(t)), texts)
        print(f"keyword p50: postgresql {ms(pg_kw):.2f} ms (p95 {ms(pg_kw, 95):.2f}) | "
              f"sqlite {ms(sq_kw):.2f} ms (p95 {ms(sq_kw, 95):.2f})")
        private = SQLiteAdapter(Path(tmp.name) / "private.db", actor="bench")
        await private.write_many([e.model_copy(update={"scope": MemoryScope.PRIVATE, "id": f"p{i}"})
                                  for i, e in enumerate(entries[sample : sample + 1000])])
        remote = MemoryFederation(MemoryRouter(private=private, global_=store), on_degraded=lambda e: None)
        allocal = MemoryFederation(MemoryRouter(private=private, global_=local), on_degraded=lambda e: None)
        fed_pg = await timed(lambda t: remote.search(make(t)), texts)
        fed_sq = await timed(lambda t: allocal.search(make(t)), texts)
        print(f"federated keyword recall p50: private sqlite + postgresql global {ms(fed_pg):.2f} ms | all local "
              f"{ms(fed_sq):.2f} ms | {statistics.median(fed_pg) / statistics.median(fed_sq):.2f}x (target <= 2x)")
        await remote.aclose()
        await allocal.aclose()
    finally:
        pg_server.remove(server)
        tmp.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.sample, args.queries))
