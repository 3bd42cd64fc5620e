"""The hybrid re-rank's word-pair lookups (memory/sqlite/fts.py pair_share) on a large store.

N memories of 12 words drawn from a Zipf-like vocabulary (word k about 1/k
as often), so the commonest words are in most rows, as everyday words are in
a long conversation. Times the admission of 30 candidates (one lookup per
id, against the IN list it replaced), and pair_share for them and queries of four
words of a given commonness, with the per-candidate path for common pairs
(PAIR_DF_CAP) against the whole-index NEAR alone (the cap out of reach).
Run: python tests/bench/bench_pairs.py [--memories N]
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.query_terms import terms  # noqa: E402
from memory.sqlite import fts  # noqa: E402
from memory.sqlite.admission import where  # noqa: E402
from memory.sqlite.rows import SELECT_COLUMNS, admitted_rows  # noqa: E402
from memory.types import MemoryEntry, MemoryQuery  # noqa: E402

VOCABULARY = 20_000
CAP = fts.PAIR_DF_CAP
BANDS = {"commonest words (1-8)": range(0, 8), "common (10-40)": range(10, 40), "mid (100-400)": range(100, 400),
         "rare (1000-4000)": range(1000, 4000)}


def word(k: int) -> str:
    letters = "bcdfghjklmnprstvwz"
    return "".join(letters[(k // 18**i) % 18] + "aeiou"[(k // 5**i) % 5] for i in range(4))


async def main(memories: int) -> None:
    rng = random.Random(7)
    weights = [1 / (k + 1) for k in range(VOCABULARY)]
    with tempfile.TemporaryDirectory(prefix="arcana-bench-pairs-") as tmp:
        store = SQLiteAdapter(Path(tmp) / "m.db", actor="bench")
        started = time.perf_counter()
        for start in range(0, memories, 20_000):
            await store.write_many([
                MemoryEntry(agent_id="bench", content=" ".join(word(k) for k in rng.choices(range(VOCABULARY), weights, k=12)))
                for _ in range(min(20_000, memories - start))
            ])
        print(f"memories={memories}, loaded in {time.perf_counter() - started:.0f} s; load: {os.getloadavg()[0]:.2f}")
        ids = [r[0] for r in await store.run(lambda raw: raw.execute("SELECT id FROM memories ORDER BY random() LIMIT 30").fetchall())]
        clause = where(MemoryQuery(agent_id="bench"))
        # the candidates' admission: one lookup per id, against the IN list it replaced, which let SQLite
        # drive from the agent_id index (every row, in a one-agent store)
        in_list = f"SELECT {SELECT_COLUMNS}, m.seq FROM memories m WHERE m.id IN ({','.join('?' * len(ids))}) AND {clause.sql}"
        for label, fn in (("one lookup per id (admitted_rows)", lambda raw: admitted_rows(raw, "id", ids, clause.sql, clause.params)),
                          ("IN list", lambda raw: raw.execute(in_list, (*ids, *clause.params)).fetchall())):
            times = []
            for _ in range(20):
                t = time.perf_counter()
                assert len(await store.run(fn)) == len(ids)
                times.append(time.perf_counter() - t)
            print(f"admitting 30 candidates, {label}: p50 {statistics.median(times) * 1000:.2f} ms")
        for band, ks in BANDS.items():
            texts = [" ".join(word(k) for k in rng.sample(ks, 4)) for _ in range(20)]
            result = {}
            for label, cap in (("per-candidate when common", CAP), ("whole-index NEAR only", 10**12)):
                fts.PAIR_DF_CAP = cap
                times, shares = [], []
                for text in texts:
                    t = time.perf_counter()
                    shares.append(await store.run(fts.pair_share, terms(text), ids, clause.sql, clause.params))
                    times.append(time.perf_counter() - t)
                result[label] = (statistics.median(times) * 1000, shares)
            (a, sa), (b, sb) = result.values()
            assert sa == sb, "the two paths must find the same pairs"
            print(f"{band}: pair_share p50 {a:.1f} ms with PAIR_DF_CAP {CAP:,} | "
                  f"{b:.1f} ms whole-index NEAR only (the same shares)")
        await store.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200_000)
    asyncio.run(main(parser.parse_args().memories))
