"""What write-time reconciliation costs per `remember`, on a 10k-memory store.

Builds one agent store of ``--size`` memories (fact-like sentences about
many subjects, really embedded by the offline model), then times
``federation.write`` of new statements alternately with and without
reconciliation (same store, same run, interleaved so machine noise hits both
alike). Reconciliation adds the candidate search (keyword + a KNN over the
store), the slot parse and the decision; the write itself, its embedding and
its vector are common to both sides. Target: <= 30 ms added at p50.

Also counts decisions for a few hundred LoCoMo conversational turns
(``--locomo``): chit-chat must mostly be ``add``.

``--keyword`` builds a store without vectors instead, so the keyword
candidate leg (the one keyword-only installs use) is what is timed.

``--pool`` builds the store as a shared pool ('team', a SQLite file; with
``--pool-url`` an empty database on a PostgreSQL server) and writes
into it: a pool write is reconciled against the pool, the plain side is that
write as given (what every pool write was before).

``--size`` takes several sizes (``30000,300000``): a store is built for each,
and one summary line per size gives the p50 of a reconciled write as a ratio
of a plain one's (issue 26: it should not grow with the store).

Run: python tests/bench/bench_reconcile.py [--size 10000[,300000]] [--writes 200] [--locomo 300] [--keyword]
     [--pool [--pool-url postgresql://...]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from memory.adapters.opener import open_tier  # noqa: E402
from memory.config import ArcanaConfig  # noqa: E402
from memory.embedding.fastembed import FastEmbedEmbedder  # noqa: E402
from memory.federation.shared_tiers import PoolConfig  # noqa: E402
from memory.home import Home  # noqa: E402
from memory.store_kinds import StoreKind  # noqa: E402
from memory.embedding.gateway import EmbeddingGateway  # noqa: E402
from memory.runtime.assembly import build_federation  # noqa: E402
from memory.types import MemoryEntry, MemoryScope, MemoryType  # noqa: E402

LOCOMO = Path("/work/shared/data/locomo-dev/26.json")
SUBJECTS = ["I", "My sister", "My brother", "Priya", "Tomas", "My manager", "Project Atlas", "My friend Lena", "We", "Omar"]
VERBS = ["live in", "work at", "moved to", "like", "have", "visited", "prefer", "use", "met someone from", "read about"]
OBJECTS = [
    "Berlin", "Lisbon", "Google", "a cat", "jazz", "Neovim", "Porto", "the harbour", "Kyoto", "a red bike", "Acme",
    "tea", "the museum", "Oslo", "a garden", "Vertex Labs", "sushi", "the lake", "Madrid", "a blue kettle",
]


def sentence(rng: random.Random, i: int) -> str:
    subject = rng.choice(SUBJECTS)
    verb = rng.choice(VERBS)
    if subject not in ("I", "We"):
        verb = verb.replace("live", "lives").replace("work", "works").replace("like", "likes").replace("have", "has")
        verb = verb.replace("prefer", "prefers").replace("use", "uses")
    return f"{subject} {verb} {rng.choice(OBJECTS)} (note {i})."


def bench_entry(content: str, pool: bool) -> MemoryEntry:
    shared = {"scope": MemoryScope.SHARED, "pool_name": "team"} if pool else {}
    return MemoryEntry(agent_id="bench", content=content, type=MemoryType.SEMANTIC, **shared)


async def build(home: Path, gateway, size: int, rng: random.Random, pool: bool = False, pool_url: str | None = None):
    pools = []
    if pool:
        config = ArcanaConfig.model_validate({"pools": {"team": {"url": pool_url} if pool_url else {}}})
        pools = [PoolConfig("team", open_tier(Home(home), StoreKind.POOL, "team", config=config, embedding=gateway))]
    federation = await build_federation("bench", home=home, embedding=gateway, global_tier=False, pools=pools,
                                        config=config if pool else None)
    entries = [bench_entry(sentence(rng, i), pool) for i in range(size)]
    store = federation.router.pools["team"][0] if pool else federation.router.private
    started = time.perf_counter()
    await store.backend.write_many(entries)
    print(f"built {size} memories{' (embedded)' if gateway else ''} in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return federation


async def time_writes(federation, writes: int, rng: random.Random, pool: bool = False) -> dict:
    samples: dict[bool, list[float]] = {True: [], False: []}
    decisions: Counter = Counter()
    for i in range(writes):
        for reconcile in ((True, False) if i % 2 == 0 else (False, True)):
            entry = bench_entry(sentence(rng, 100_000 + 2 * i + reconcile), pool)
            started = time.perf_counter()
            report = await federation.write(entry, reconcile=reconcile)
            samples[reconcile].append((time.perf_counter() - started) * 1000)
            if reconcile:
                decisions[report.decision] += 1
    on, off = sorted(samples[True]), sorted(samples[False])

    def pct(values, q):
        return values[min(len(values) - 1, int(q * len(values)))]

    return {
        "writes_each": writes,
        "p50_ms_reconcile": round(statistics.median(on), 2),
        "p50_ms_plain": round(statistics.median(off), 2),
        "p50_added_ms": round(statistics.median(on) - statistics.median(off), 2),
        "p95_ms_reconcile": round(pct(on, 0.95), 2),
        "p95_ms_plain": round(pct(off, 0.95), 2),
        "decisions": dict(decisions),
    }


def locomo_turns(limit: int) -> list[str]:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    conversation = data.get("conversation", data)
    turns = []
    session = 1
    while f"session_{session}" in conversation and len(turns) < limit:
        turns += [f"{t['speaker']}: {t['text']}" for t in conversation[f"session_{session}"]]
        session += 1
    return turns[:limit]


async def count_locomo(home: Path, gateway, limit: int) -> dict:
    """Write LoCoMo turns through a fresh agent's federation, as a session would; count decisions."""
    federation = await build_federation("locomo", home=home, embedding=gateway, global_tier=False)
    decisions: Counter = Counter()
    examples: dict[str, list[str]] = {}
    try:
        for turn in locomo_turns(limit):
            report = await federation.write(MemoryEntry(agent_id="locomo", content=turn, type=MemoryType.EPISODIC))
            decisions[report.decision] += 1
            if report.decision != "add":
                examples.setdefault(report.decision, []).append(turn[:90])
    finally:
        await federation.aclose()
    total = sum(decisions.values())
    return {"turns": total, "decisions": dict(decisions), "add_share": round(decisions["add"] / total, 3),
            "examples": {k: v[:5] for k, v in examples.items()}}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=lambda v: [int(x) for x in v.split(",")], default=[10_000])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--locomo", type=int, default=300)
    parser.add_argument("--keyword", action="store_true", help="a store without vectors: time the keyword leg")
    parser.add_argument("--pool", action="store_true", help="build and write a shared pool, not the agent's store")
    parser.add_argument("--pool-url", help="with --pool: the pool on this empty PostgreSQL database")
    args = parser.parse_args()
    summary = []
    for size in args.size:
        rng = random.Random(12)
        with tempfile.TemporaryDirectory() as tmp:
            gateway = None if args.keyword else EmbeddingGateway([FastEmbedEmbedder(models_root=Path(tmp) / "models")])
            federation = await build(Path(tmp) / "home", gateway, size, rng, args.pool, args.pool_url)
            try:
                timed = await time_writes(federation, args.writes, rng, args.pool)
                result = {"size": size, "vectors": gateway is not None, "pool": ("postgresql" if args.pool_url else "sqlite") if args.pool else None,
                          **timed}
            finally:
                await federation.aclose()
            if args.locomo and LOCOMO.exists():
                result["locomo"] = await count_locomo(Path(tmp) / "home", gateway, args.locomo)
        print(json.dumps(result, indent=2), flush=True)
        summary.append(f"size={size} p50_ms_reconcile={result['p50_ms_reconcile']} p50_ms_plain={result['p50_ms_plain']} "
                       f"ratio={result['p50_ms_reconcile'] / result['p50_ms_plain']:.1f} decisions={result['decisions']}")
    print("\n".join(summary))


if __name__ == "__main__":
    asyncio.run(main())
