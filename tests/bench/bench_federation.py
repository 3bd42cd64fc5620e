"""Federated recall (private + one pool + global) against one store holding the same data.

The same N memories are written once into a single SQLite store (the
baseline) and once split evenly across three tier files behind a
MemoryFederation. Each query is then timed both ways, interleaved so machine
noise hits both alike. Target: federated median within 1.5x of the baseline.

``--corpus zipf`` writes bench_store's Zipf sentences (8-25 words of a 6,000-word
vocabulary) in raw batches, as bench_scale.py does, so a million rows build in
minutes; the default ``small`` corpus (24 words, every query common) goes
through the stores' ledgered ``write_many``. ``--pool postgres`` puts the pool
tier on a throwaway PostgreSQL server (tests/support/pg_server.py).

Run: python tests/bench/bench_federation.py [--memories N] [--queries N] [--limit K] [--corpus small|zipf] [--pool sqlite|postgres]
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
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "support")]

import pg_server  # noqa: E402
from bench_store import Zipf, queries, raw_batch, vocabulary  # noqa: E402
from bench_store import corpus as zipf_corpus  # noqa: E402

from memory.adapters.postgres import PostgresAdapter  # noqa: E402
from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.federation.federation import MemoryFederation  # noqa: E402
from memory.federation.router import MemoryRouter  # noqa: E402
from memory.types import MemoryEntry, MemoryQuery, MemoryScope, MemoryType, RetrievalMode  # noqa: E402

WORDS = (
    "kettle deploy coffee backup keyboard timezone editor printer standup invoice laptop garden "
    "budget release ticket server window meeting holiday recipe bicycle library battery camera"
).split()
TYPES = list(MemoryType)


def corpus(count: int, rng: random.Random) -> list[MemoryEntry]:
    return [
        MemoryEntry(
            agent_id="bench",
            type=TYPES[i % len(TYPES)],
            importance=round(rng.uniform(0.1, 0.85), 2),  # below 0.9: no promotion copies
            content=f"memory {i}: " + " ".join(rng.sample(WORDS, 6)),
        )
        for i in range(count)
    ]


def scoped(entry: MemoryEntry, tier: int) -> MemoryEntry:
    if tier == 1:
        return entry.model_copy(update={"scope": MemoryScope.SHARED, "pool_name": "team"})
    if tier == 2:
        return entry.model_copy(update={"scope": MemoryScope.GLOBAL})
    return entry


CHUNK = 50_000  # zipf rows generated and written at a time: bounded memory at any size


async def fill(stores: list, memories: int, kind: str, rng: random.Random) -> list[str]:
    """Write the same ``memories`` into ``stores[0]`` (the single store) and split over the tiers
    ``stores[1:]``; returns query texts in the corpus's vocabulary."""
    single, tiers = stores[0], stores[1:]
    if kind == "small":
        entries = corpus(memories, rng)
        await single.write_many(entries)
        for index, store in enumerate(tiers):
            await store.write_many([scoped(e, index) for e in entries[index::3]])
        return [" ".join(rng.sample(WORDS, 2)) for _ in range(1000)]
    zipf = Zipf(vocabulary(rng), rng)
    for start in range(0, memories, CHUNK):
        chunk = zipf_corpus(min(CHUNK, memories - start), zipf, rng)
        await single.run(raw_batch, chunk)
        for index, store in enumerate(tiers):
            part = [scoped(e, index) for e in chunk[index::3]]
            if isinstance(store, SQLiteAdapter):
                await store.run(raw_batch, part)
            else:
                await store.write_many(part)
        print(f"  written {start + len(chunk):,} of {memories:,}", flush=True)
    return queries(1000, zipf, rng)


async def main(memories: int, n_queries: int, limit: int, kind: str, pool: str) -> None:
    rng = random.Random(7)
    server = pg_server.start_server() if pool == "postgres" else None
    with tempfile.TemporaryDirectory(prefix="arcana-bench-fed-") as tmp:
        root = Path(tmp)
        single = SQLiteAdapter(root / "single.db")
        team = (PostgresAdapter(server.create_database("team"), actor="bench", statement_timeout_ms=600_000)
                if server else SQLiteAdapter(root / "team.db"))
        tiers = [SQLiteAdapter(root / "private.db"), team, SQLiteAdapter(root / "global.db")]
        started = time.perf_counter()
        texts = (await fill([single, *tiers], memories, kind, rng))[:n_queries]
        print(f"built in {time.perf_counter() - started:.0f} s", flush=True)
        router = MemoryRouter(private=tiers[0], pools={"team": tiers[1]}, global_=tiers[2])
        federation = MemoryFederation(router, on_degraded=lambda event: None)
        # The same single store behind a one-tier federation: the wrapper's own cost.
        wrapped = MemoryFederation(MemoryRouter(private=single), on_degraded=lambda event: None)

        print(f"memories={memories} queries={len(texts)} limit={limit} corpus={kind} pool={pool}: "
              f"keyword recall, 3 tiers x {limit} candidates")
        # As `arcana recall` asks (agent filter on: shared/global tiers drop it),
        # and with no filter anywhere, so both paths do exactly the same SQL work.
        for label, agent in (("agent-filtered", "bench"), ("unfiltered", None)):
            make = lambda text, agent=agent: MemoryQuery(  # noqa: E731
                agent_id=agent, text=text, retrieval_mode=RetrievalMode.keyword, limit=limit
            )
            base, fed = await timed(single, federation, make, texts)
            ratio = statistics.median(fed) / statistics.median(base)
            print(f"{label:>15}: single median {ms(base):8.2f} ms p95 {ms(base, 95):8.2f} | "
                  f"federated median {ms(fed):8.2f} ms p95 {ms(fed, 95):8.2f} | "
                  f"ratio {ratio:.2f}x (target <= 1.50x: {'OK' if ratio <= 1.5 else 'OVER'})")
        make = lambda text: MemoryQuery(agent_id="bench", text=text, retrieval_mode=RetrievalMode.keyword, limit=limit)  # noqa: E731
        base, fed = await timed(single, wrapped, make, texts)
        print(f"{'1-tier wrapper':>15}: single median {ms(base):8.2f} ms | same store federated {ms(fed):8.2f} ms | "
              f"ratio {statistics.median(fed) / statistics.median(base):.2f}x")
        await federation.aclose()
        await single.aclose()
    if server:
        pg_server.remove(server)


async def timed(single, federation, make, texts) -> tuple[list[float], list[float]]:
    """Interleaved timings of the same queries on both paths, after a warm-up."""
    for text in texts[:20]:
        await single.search(make(text))
        await federation.search(make(text))
    base, fed = [], []
    for text in texts:
        started = time.perf_counter()
        await single.search(make(text))
        base.append(time.perf_counter() - started)
        started = time.perf_counter()
        await federation.search(make(text))
        fed.append(time.perf_counter() - started)
    return base, fed


def ms(values: list[float], q: int | None = None) -> float:
    if q is None:
        return statistics.median(values) * 1000
    return statistics.quantiles(values, n=100)[q - 1] * 1000


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=6000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--corpus", choices=["small", "zipf"], default="small")
    parser.add_argument("--pool", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.queries, args.limit, args.corpus, args.pool))
