"""Per-call reads that must cost the same at 10k and 1M rows (issue 26), each against a lookup by id.

For every size N an agent's store is built by ``bench_scale.build`` (real
migrations, real sqlite-vec). Timed, median of many calls on the same file:

- baseline: ``SQLiteAdapter.get`` of one id (an index lookup: flat by design);
- the live count the consolidation check asks after every ``arcana run`` turn
  that wrote (``count(include_archived=False)``), and the census the web
  view's first page takes of every store it lists (``census()``), and the
  memories a session wrote, asked when it closes (``written_in_session``); beside
  each, the statement v9 ran for it (an aggregate over every row), on the
  same file, so before and after come from one run.

Run: python tests/bench/bench_per_call.py [--sizes 10000,300000] [--calls 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import astuple
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from bench_scale import build, load
from bench_semantic import models_root

from memory.embedding.fastembed import FastEmbedEmbedder
from memory.runtime.sessions import SUMMARY_TAG
from memory.sqlite.admission import SQLITE

# What v9 ran, kept here only to measure against (v10 reads the census row: memory/sqlite/inspection.py).
V9_LIVE = "SELECT count(*) FROM memories WHERE archived = 0"
V9_CENSUS = (
    "SELECT count(*), "
    "coalesce(sum(visibility = 'visible' AND archived = 0 AND valid_to IS NULL), 0), "
    "coalesce(sum(archived != 0), 0), coalesce(sum(visibility = 'hidden'), 0), coalesce(sum(visibility = 'private'), 0), "
    "coalesce(sum(valid_to IS NOT NULL), 0) FROM memories"
)
V9_SESSION = (
    "SELECT m.id FROM memories m WHERE m.source_session_id = ? AND m.archived = 0 AND m.valid_to IS NULL "
    f"AND NOT {SQLITE.has_tag.format(col='m.tags')} ORDER BY m.seq"
)


async def median_ms(call, calls: int) -> float:
    for _ in range(3):
        await call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def bench_size(n: int, calls: int, root: Path, model: FastEmbedEmbedder) -> None:
    _, _, store = await build(n, root / f"size-{n}", model)
    some = await store.run(lambda raw: raw.execute("SELECT id FROM memories WHERE seq = ?", (n // 2,)).fetchone()[0])

    def v9(sql: str, *params):
        return lambda: store.run(lambda raw: raw.execute(sql, params).fetchall())

    live = await store.count(include_archived=False)
    assert live == (await v9(V9_LIVE)())[0][0], "the census row disagrees with the table"
    assert astuple(await store.census()) == tuple((await v9(V9_CENSUS)())[0]), "the census row disagrees"
    base = await median_ms(lambda: store.get(some), calls)
    print(f"== {n:,} memories; load {load()}\n  get by id (baseline) {base:.3f} ms", flush=True)
    for label, before, after in (
        ("live count (consolidation check)", v9(V9_LIVE), lambda: store.count(include_archived=False)),
        ("census (web view, each store)", v9(V9_CENSUS), store.census),
        ("a session's memories (session close)", v9(V9_SESSION, "s-bench", SUMMARY_TAG),
         lambda: store.written_in_session("s-bench", SUMMARY_TAG)),
    ):
        was, now = await median_ms(before, calls), await median_ms(after, calls)
        print(f"  {label}: v9 {was:.3f} ms = {was / base:.1f}x baseline -> now {now:.3f} ms = {now / base:.2f}x", flush=True)
    await store.aclose()


async def main(sizes: list[int], calls: int) -> None:
    model = FastEmbedEmbedder(models_root=models_root())
    await model.health_check()
    with tempfile.TemporaryDirectory(prefix="arcana-per-call-") as tmp:
        for n in sizes:
            await bench_size(n, calls, Path(tmp), model)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[10_000, 300_000])
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(main(args.sizes, args.calls))
