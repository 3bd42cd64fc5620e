"""The private store against raw SQLite on the same rows, at 10k and 100k entries.

Measures, per size: committed single-entry write latency and batch write rate
(SQLiteAdapter vs plain INSERTs through the same driver into the same schema);
keyword search p50/p95 (SQLiteAdapter.search as `arcana recall` asks it vs a
raw FTS5 ``MATCH … ORDER BY bm25`` on the same file, same expression); and,
at 10k, `arcana recall` wall time vs bare-import floors, plus `arcana
--version`. Text is sentences drawn from a Zipf-distributed vocabulary so
common words exist. Timings interleave the two sides so machine noise hits
both alike (and alternate which side goes first, as the second finds the
pages warm); the machine is shared, so read ratios, not absolutes.

Run: python tests/bench/bench_store.py [--sizes 10000 100000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]

from cli_env import cli_env  # noqa: E402
from memory.adapters.sqlite import SQLiteAdapter  # noqa: E402
from memory.agents import AgentRegistry  # noqa: E402
from memory.home import Home  # noqa: E402
from memory.migrations.versions import v001_core, v007_fact_versions  # noqa: E402
from memory.sqlite.connection import dbapi  # noqa: E402
from memory.query_terms import terms  # noqa: E402
from memory.sqlite.fts import match_expression  # noqa: E402
from memory.sqlite.rows import COLUMNS, entry_values  # noqa: E402
from memory.types import MemoryEntry, MemoryQuery, MemoryType, RetrievalMode  # noqa: E402

COMMON = ("the a to of and is in that it for on was with as i be at this have you user "
          "prefers likes wants said about when not by").split()
SINGLE_WRITES = 300
ARCANA = Path(sys.executable).with_name("arcana")


# -- corpus ----------------------------------------------------------------------


def vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    syllables = "ka lo mi ne ru ta si po de fa gu be zo ri an el ur ix on ve".split()
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return COMMON + sorted(words)


class Zipf:
    def __init__(self, words: list[str], rng: random.Random, s: float = 1.07):
        self.words = words
        self.rng = rng
        self.weights = [1 / (rank + 1) ** s for rank in range(len(words))]

    def sample(self, k: int) -> list[str]:
        return self.rng.choices(self.words, weights=self.weights, k=k)


def corpus(count: int, zipf: Zipf, rng: random.Random, agent_id: str = "bench") -> list[MemoryEntry]:
    types = list(MemoryType)
    return [
        MemoryEntry(
            agent_id=agent_id,
            type=types[i % len(types)],
            importance=round(rng.uniform(0.05, 0.85), 2),
            content=" ".join(zipf.sample(rng.randint(8, 25))).capitalize() + ".",
            tags=zipf.sample(rng.randint(0, 2)),
        )
        for i in range(count)
    ]


def queries(count: int, zipf: Zipf, rng: random.Random) -> list[str]:
    """Questions a user might type: a few words, common ones included."""
    return [" ".join(zipf.sample(rng.randint(1, 4)) + rng.sample(COMMON, rng.randint(0, 2))) for _ in range(count)]


# -- raw baseline ------------------------------------------------------------------


def raw_connect(path: Path):
    raw = dbapi().connect(str(path), isolation_level=None)
    raw.execute("PRAGMA journal_mode = WAL")
    raw.execute("PRAGMA synchronous = NORMAL")
    return raw


def raw_create(path: Path):
    """The same memories table and FTS triggers, none of the ledger or images."""
    raw = raw_connect(path)
    for statement in v001_core.STATEMENTS[:6] + v007_fact_versions.STATEMENTS[:3]:  # the table's columns
        raw.execute(statement)
    return raw


_RAW_INSERT = f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({', '.join(':' + c for c in COLUMNS)})"


def raw_values(entry: MemoryEntry) -> dict:
    values = entry_values(entry)
    values["visibility"] = values["visibility"] or "visible"
    return values


def raw_batch(raw, entries: list[MemoryEntry], batch: int = 500) -> None:
    for start in range(0, len(entries), batch):
        raw.execute("BEGIN IMMEDIATE")
        raw.executemany(_RAW_INSERT, [raw_values(e) for e in entries[start : start + batch]])
        raw.execute("COMMIT")


def raw_single(raw, entry: MemoryEntry) -> None:
    raw.execute("BEGIN IMMEDIATE")
    raw.execute(_RAW_INSERT, raw_values(entry))
    raw.execute("COMMIT")


# The raw baseline returns what any keyword search must: the matching text.
# The ids-only form is printed too, as the floor of FTS5 itself.
RAW_SEARCH = (
    "SELECT rowid, content, tags, bm25(memories_fts) AS rank FROM memories_fts WHERE memories_fts MATCH ? "
    "ORDER BY rank LIMIT ?"
)
_RAW_IDS = "SELECT rowid, bm25(memories_fts) AS rank FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?"


# -- helpers ---------------------------------------------------------------------------


def pct(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))] * 1000


def wall(cmd: list[str], env: dict, runs: int) -> list[float]:
    subprocess.run(cmd, env=env, capture_output=True, check=True)  # warm the page cache
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return times


ROWS: list[tuple[str, str, str, str, str]] = []


def row(size: str, metric: str, arcana: str, baseline: str, verdict: str = "") -> None:
    ROWS.append((size, metric, arcana, baseline, verdict))
    print(f"  {metric:<34} {arcana:>22} {baseline:>22}  {verdict}", flush=True)


def check(ok: bool) -> str:
    return "OK" if ok else "MISSED"


# -- the measurements -------------------------------------------------------------------


async def bench_size(n: int, n_queries: int, root: Path) -> None:
    rng = random.Random(n)
    zipf = Zipf(vocabulary(rng), rng)
    entries = corpus(n, zipf, rng)
    label = f"{n // 1000}k"
    print(f"\n== {label} entries ==", flush=True)

    store = SQLiteAdapter(root / f"arcana-{n}.db", actor="bench")
    await store.connect()
    started = time.perf_counter()
    await store.write_many(entries)
    ours_batch = n / (time.perf_counter() - started)

    raw = raw_create(root / f"raw-{n}.db")
    started = time.perf_counter()
    raw_batch(raw, entries)
    raw_batch_rate = n / (time.perf_counter() - started)
    row(label, "batch write (entries/s)", f"{ours_batch:,.0f}", f"{raw_batch_rate:,.0f}",
        f"{ours_batch / raw_batch_rate:.2f}x raw")

    singles = corpus(SINGLE_WRITES, zipf, rng)
    ours, theirs = [], []
    for entry in singles:  # interleaved, one committed transaction each
        started = time.perf_counter()
        await store.write(entry)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        raw_single(raw, entry)
        theirs.append(time.perf_counter() - started)
    raw.close()
    ours_rate, raw_rate = len(ours) / sum(ours), len(theirs) / sum(theirs)
    row(label, "single write p50 / p95 (ms)", f"{pct(ours, 50):.3f} / {pct(ours, 95):.3f}",
        f"{pct(theirs, 50):.3f} / {pct(theirs, 95):.3f}")
    row(label, "single write rate (commits/s)", f"{ours_rate:,.0f}", f"{raw_rate:,.0f}",
        f"{ours_rate / raw_rate:.2f}x raw (target >= 0.50x: {check(ours_rate >= raw_rate / 2)})")
    ratio = pct(theirs, 50) / pct(ours, 50)
    row(label, "single write rate at p50 (commits/s)", f"{1000 / pct(ours, 50):,.0f}",
        f"{1000 / pct(theirs, 50):,.0f}", f"{ratio:.2f}x raw (less sensitive to machine load)")
    hops = []
    for _ in range(200):
        started = time.perf_counter()
        await store.run(lambda raw: None)
        hops.append(time.perf_counter() - started)
    row(label, "async hop to the SQLite thread (ms)", f"{pct(hops, 50):.3f}", "0", "paid by every store call")

    texts = queries(n_queries, zipf, rng)
    probe = raw_connect(store.path)
    for text in texts[:30]:  # warm-up both paths
        await store.search(MemoryQuery(agent_id="bench", text=text, retrieval_mode=RetrievalMode.keyword))
        probe.execute(RAW_SEARCH, (match_expression(terms(text)), 10)).fetchall()
    ours, theirs, ids_only, hits = [], [], [], 0
    for i, text in enumerate(texts):
        query = MemoryQuery(agent_id="bench", text=text, retrieval_mode=RetrievalMode.keyword, limit=10)
        # Whichever side runs a query second finds its pages warm: alternate who goes first.
        for side in (("ours", "raw") if i % 2 == 0 else ("raw", "ours")):
            started = time.perf_counter()
            if side == "ours":
                found = await store.search(query)
                ours.append(time.perf_counter() - started)
            else:
                expected = probe.execute(RAW_SEARCH, (match_expression(terms(text)), 10)).fetchall()
                theirs.append(time.perf_counter() - started)
        started = time.perf_counter()
        probe.execute(_RAW_IDS, (match_expression(terms(text)), 10)).fetchall()
        ids_only.append(time.perf_counter() - started)
        hits += len(found) == len(expected)
    probe.close()
    ratio = statistics.median(ours) / statistics.median(theirs)
    row(label, "keyword search p50 / p95 (ms)", f"{pct(ours, 50):.2f} / {pct(ours, 95):.2f}",
        f"{pct(theirs, 50):.2f} / {pct(theirs, 95):.2f}",
        f"p50 {ratio:.2f}x raw (target <= 1.50x: {check(ratio <= 1.5)})")
    row(label, "raw FTS5 ids only p50 (ms)", "", f"{pct(ids_only, 50):.2f}",
        f"search is {statistics.median(ours) / statistics.median(ids_only):.2f}x this")
    if hits != len(texts):
        print(f"  note: {len(texts) - hits} queries returned a different count than raw FTS5", flush=True)
    await store.aclose()


def bench_cli(root: Path, runs: int) -> None:
    """`arcana recall` on a 10k-entry agent against bare interpreter floors."""
    home = Home(root / "home")
    home.ensure()
    home.config_path.write_text(json.dumps({"embedding": {"providers": []}, "recall": {"mode": "keyword"}}))
    home.config_path.chmod(0o600)
    card = AgentRegistry(home).create("bench")
    rng = random.Random(3)
    zipf = Zipf(vocabulary(rng), rng)

    async def fill() -> None:
        store = SQLiteAdapter.for_agent(card.id, home=home)
        await store.write_many([e.model_copy(update={"agent_id": card.id}) for e in corpus(10_000, zipf, rng)])
        await store.aclose()

    asyncio.run(fill())
    env = cli_env(home.root)
    word = zipf.words[40]
    recall = wall([str(ARCANA), "recall", f"{word} user", "--agent", "bench", "--mode", "keyword"], env, runs)
    bare = wall([sys.executable, "-c", "import typer, rich, pydantic, aiosqlite"], env, runs)
    # `import pydantic` is lazy and loads next to nothing; defining one model loads the rest.
    model = "import typer, rich, aiosqlite\nfrom pydantic import BaseModel\nclass M(BaseModel):\n    a: int"
    bare_model = wall([sys.executable, "-c", model], {**env, "PYDANTIC_DISABLE_PLUGINS": "__all__"}, runs)  # as arcana
    empty = wall([sys.executable, "-c", "pass"], env, runs)
    version = wall([str(ARCANA), "--version"], env, runs)
    p50 = lambda values: statistics.median(values) * 1000  # noqa: E731
    print("\n== CLI wall time (median of %d runs, 10k entries) ==" % runs, flush=True)
    above = p50(recall) - p50(bare)
    row("10k", "arcana recall (keyword) ms", f"{p50(recall):.0f}", f"bare imports {p50(bare):.0f}",
        f"+{above:.0f} ms over floor (target <= 100: {check(above <= 100)})")
    row("10k", "  ... against floor + one pydantic model", f"{p50(recall):.0f}", f"{p50(bare_model):.0f}",
        f"+{p50(recall) - p50(bare_model):.0f} ms (what Arcana itself adds)")
    row("-", "python -c pass ms", f"{p50(empty):.0f}", "")
    row("-", "arcana --version ms", f"{p50(version):.0f}", "", f"target < 80: {check(p50(version) < 80)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--cli-runs", type=int, default=15)
    args = parser.parse_args()
    print(f"driver {dbapi().__name__} SQLite {dbapi().sqlite_version}; {os.cpu_count()} cpus (shared)")
    print(f"  {'metric':<34} {'arcana':>22} {'raw sqlite / floor':>22}")
    with tempfile.TemporaryDirectory(prefix="arcana-bench-store-") as tmp:
        for size in args.sizes:
            asyncio.run(bench_size(size, args.queries, Path(tmp)))
        bench_cli(Path(tmp), args.cli_runs)
    print("\nsummary")
    for size, metric, ours, base, verdict in ROWS:
        print(f"  {size:>4}  {metric:<34} {ours:>22} {base:>22}  {verdict}")


if __name__ == "__main__":
    main()
