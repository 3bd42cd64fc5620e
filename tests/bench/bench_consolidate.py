"""Consolidation on real conversations: what a store keeps when it must shrink.

Each LoCoMo development conversation is written through ``remember --from``'s
path (``remember_many``: one line per turn, its session and real date,
reconciled), then copied four ways and asked its questions (hybrid, the
default mode, through the federation, the day after the last session):

- **full**: as written;
- **consolidate**: after ``consolidate_store`` (no budget);
- **consolidate + prune**: then ``prune --max-entries --max-bytes`` down to a budget of
  50% of the full store's current rows *and* 50% of their content bytes (digests condensed
  first, then re-embedded, as ``arcana prune`` does);
- **prune**: ``prune`` alone to the same budget.

A consolidated result counts as a hit when it or one of its sources is
evidence. Also printed: user-stated facts removed (an archived user row with
content words that no current memory carries), what a second consolidate
changes (must be nothing), what a second prune at the same budget changes (must be nothing),
and consolidate's cost against ingest.

Run: python tests/bench/bench_consolidate.py [--conversations 26,30]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_locomo as lb  # noqa: E402

from memory.adapters.opener import vector_adapter  # noqa: E402
from memory.config import ArcanaConfig  # noqa: E402
from memory.sqlite.fact_words import content_words  # noqa: E402
from memory.embedding.gateway import EmbeddingGateway  # noqa: E402
from memory.home import Home  # noqa: E402
from memory.operations.bulk_import import Parsed, remember_many  # noqa: E402
from memory.consolidation.store import consolidate_store  # noqa: E402
from memory.sqlite.consolidation import SOURCES  # noqa: E402
from memory.store_kinds import StoreKind  # noqa: E402
from memory.adapters.opener import open_store  # noqa: E402
from memory.runtime.assembly import build_federation  # noqa: E402
from memory.embedding.factory import vector_options  # noqa: E402
from memory.types import MemoryQuery, PrunePolicy, RetrievalMode  # noqa: E402

BUDGET = 0.5


async def ingest(conv: lb.Conversation, home: Path, embedder) -> dict[str, str]:
    agent = conv.turns[0][1].agent_id
    fed = await build_federation(agent, home=home, embedding=EmbeddingGateway([embedder]), global_tier=False,
                                 vector_options=vector_options(ArcanaConfig().embedding), on_degraded=lambda e: None)
    try:
        entries = [e for _, e in conv.turns]
        await remember_many(fed, Parsed(entries, [], {e.id for e in entries}, len(entries)))
    finally:
        await fed.aclose()
    return {e.id: dia for dia, e in conv.turns}


def private(home: Path, agent: str):
    return open_store(Home(home), StoreKind.PRIVATE, agent, actor="bench")


async def census(home: Path, agent: str) -> tuple[int, int]:
    store = private(home, agent)
    try:
        return await store.run(lambda raw: raw.execute(
            "SELECT count(*), coalesce(sum(length(CAST(content AS BLOB))), 0) FROM memories "
            "WHERE archived = 0 AND valid_to IS NULL").fetchone())
    finally:
        await store.aclose()


async def prune_to(home: Path, agent: str, rows: int, nbytes: int, embedder) -> tuple[int, int, int]:
    """``prune --max-entries rows --max-bytes nbytes``, the digests it condensed re-embedded as
    ``arcana prune`` does: (rows kept, bytes kept, digests condensed)."""
    store = private(home, agent)
    try:
        report = await store.prune(PrunePolicy(max_entries=rows, max_bytes=nbytes))
        vectors = vector_adapter(store, ArcanaConfig().embedding, Home(home), gateway=EmbeddingGateway([embedder]))
        await vectors.complete([c["id"] for c in report.condensations])
    finally:
        await store.aclose()
    return (*await census(home, agent), report.condensed)


async def sources(home: Path, agent: str) -> dict[str, list[str]]:
    store = private(home, agent)
    try:
        rows = await store.run(lambda raw: raw.execute(
            f"SELECT src_id, dst_id FROM memory_edges WHERE relation = '{SOURCES}'").fetchall())
    finally:
        await store.aclose()
    found: dict[str, list[str]] = {}
    for src, dst in rows:
        found.setdefault(src, []).append(dst)
    return found


async def user_facts_lost(home: Path, agent: str) -> int:
    """Archived user-stated rows with content words that no current memory carries (directly or as a source)."""
    store = private(home, agent)
    try:
        archived, carried = await store.run(lambda raw: (
            raw.execute("SELECT id, content FROM memories WHERE archived != 0 "
                        "AND confidence_source = 'user_confirmed'").fetchall(),
            {r[0] for r in raw.execute(
                f"SELECT e.dst_id FROM memory_edges e JOIN memories m ON m.id = e.src_id "
                f"WHERE e.relation = '{SOURCES}' AND m.archived = 0")},
        ))
    finally:
        await store.aclose()
    return sum(1 for mid, content in archived if content_words(content) and mid not in carried)


async def ask(conv: lb.Conversation, home: Path, embedder, dia_of: dict[str, str]) -> tuple[float, float, float]:
    agent = conv.turns[0][1].agent_id
    asked = conv.last + timedelta(days=1)
    via = await sources(home, agent)
    fed = await build_federation(agent, home=home, embedding=EmbeddingGateway([embedder]), global_tier=False,
                                 decay_profiles=lb.no_refresh_profiles(), clock=lambda: asked,
                                 vector_options=vector_options(ArcanaConfig().embedding), on_degraded=lambda e: None)
    rows = []
    try:
        for q in conv.questions:
            query = MemoryQuery(agent_id=agent, text=q.text, retrieval_mode=RetrievalMode.hybrid, limit=lb.LIMIT)
            ranked = (await fed.recall(query)).entries
            # a result stands for itself and every source it carries
            hit_rank = next((rank for rank, e in enumerate(ranked, 1)
                             if {dia_of.get(i) for i in (e.id, *via.get(e.id, ()))} & q.evidence), None)
            rows.append((0.0, 0.0, 0.0) if hit_rank is None else
                        (1.0 if hit_rank <= 5 else 0.0, 1.0, 1.0 / hit_rank))
    finally:
        await fed.aclose()
    return lb.mean(rows)


async def consolidate(home: Path, agent: str, embedder, when) -> tuple[dict, float]:
    store = private(home, agent)
    vectors = vector_adapter(store, ArcanaConfig().embedding, Home(home), gateway=EmbeddingGateway([embedder]))
    started = time.perf_counter()
    try:
        _, planned = await consolidate_store(store, when, embed=vectors.complete, actor="bench")
    finally:
        await store.aclose()
    return planned.counts(), time.perf_counter() - started


async def main() -> None:
    from memory.embedding.fastembed import FastEmbedEmbedder

    names = sys.argv[sys.argv.index("--conversations") + 1].split(",") if "--conversations" in sys.argv else None
    files = [f for f in sorted(lb.data_dir().glob("*.json")) if names is None or f.stem in names]
    embedder = FastEmbedEmbedder(models_root=Path(os.environ.get("ARCANA_MODELS", Path.home() / ".arcana" / "models")))
    await embedder.embed(["warm up"])
    table: dict[str, list] = {k: [] for k in ("full", "consolidate", "consolidate+prune", "prune")}
    lost = {k: 0 for k in table}
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            conv = lb.load(f)
            agent = conv.turns[0][1].agent_id
            base = Path(tmp) / conv.name / "full"
            started = time.perf_counter()
            dia_of = await ingest(conv, base, embedder)
            ingest_s = time.perf_counter() - started
            rows, nbytes = await census(base, agent)
            budget_rows, budget_bytes = int(rows * BUDGET), int(nbytes * BUDGET)
            homes = {k: Path(tmp) / conv.name / k.replace("+", "_") for k in table if k != "full"}
            for h in homes.values():
                shutil.copytree(base, h)
            when = conv.last + timedelta(days=1)
            counts, cost_s = await consolidate(homes["consolidate"], agent, embedder, when)
            again, _ = await consolidate(homes["consolidate"], agent, embedder, when)
            await consolidate(homes["consolidate+prune"], agent, embedder, when)
            after = await census(homes["consolidate"], agent)
            kept_cp = await prune_to(homes["consolidate+prune"], agent, budget_rows, budget_bytes, embedder)
            again_cp = await prune_to(homes["consolidate+prune"], agent, budget_rows, budget_bytes, embedder)
            kept_p = await prune_to(homes["prune"], agent, budget_rows, budget_bytes, embedder)
            print(f"\n== conversation {conv.name}: {rows} current rows, {nbytes} bytes; budget {budget_rows} rows, "
                  f"{budget_bytes} bytes ==")
            print(f"  consolidate: {counts} in {cost_s:.1f} s (ingest {ingest_s:.1f} s); after: {after[0]} rows, "
                  f"{after[1]} bytes; a second run: {again}")
            print(f"  prune kept {kept_cp[0]} rows, {kept_cp[1]} bytes after consolidate ({kept_cp[2]} digests "
                  f"condensed; a second prune: {again_cp[0] - kept_cp[0]} rows, {again_cp[1] - kept_cp[1]} bytes, "
                  f"{again_cp[2]} condensed), {kept_p[0]} rows, {kept_p[1]} bytes alone")
            for k in table:
                home = base if k == "full" else homes[k]
                table[k].append(await ask(conv, home, embedder, dia_of))
                lost[k] += await user_facts_lost(home, agent)
                print(f"  {k:<18} any@5 {table[k][-1][0]:.3f}  any@10 {table[k][-1][1]:.3f}  "
                      f"MRR@10 {table[k][-1][2]:.3f}")
    print("\n== all conversations (mean of conversations), hybrid ==")
    full = lb.mean(table["full"])
    for k, rows_ in table.items():
        m = lb.mean(rows_)
        print(f"  {k:<18} any@5 {m[0]:.3f}  any@10 {m[1]:.3f}  MRR@10 {m[2]:.3f}  "
              f"({m[1] / full[1]:.2f}x full any@10)  user facts lost {lost[k]}")


if __name__ == "__main__":
    asyncio.run(main())
