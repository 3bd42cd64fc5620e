"""Federated recall (private + one pool + global) against one store holding the same data.

The same N memories are written once into a single SQLite store (the
baseline) and once split evenly across three tier files behind a
MemoryFederation. Each query is then timed both ways, interleaved so machine
noise hits both alike. Target: federated median within 1.5x of the baseline.
Run: python tests/bench/bench_federation.py [--memories N] [--queries N] [--limit K]
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
sys.path[:0] = [str(ROOT)]

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


async def main(memories: int, queries: int, limit: int) -> None:
    rng = random.Random(7)
    entries = corpus(memories, rng)
    with tempfile.TemporaryDirectory(prefix="arcana-bench-fed-") as tmp:
        root = Path(tmp)
        single = SQLiteAdapter(root / "single.db")
        tiers = [SQLiteAdapter(root / f"{name}.db") for name in ("private", "team", "global")]
        await single.write_many(entries)
        for index, store in enumerate(tiers):
            await store.write_many([scoped(e, index) for e in entries[index::3]])
        router = MemoryRouter(private=tiers[0], pools={"team": tiers[1]}, global_=tiers[2])
        federation = MemoryFederation(router, on_degraded=lambda event: None)
        # The same single store behind a one-tier federation: the wrapper's own cost.
        wrapped = MemoryFederation(MemoryRouter(private=single), on_degraded=lambda event: None)

        texts = [" ".join(rng.sample(WORDS, 2)) for _ in range(queries)]
        print(f"memories={memories} queries={queries} limit={limit} keyword recall, 3 tiers x {limit} candidates")
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
    args = parser.parse_args()
    asyncio.run(main(args.memories, args.queries, args.limit))
